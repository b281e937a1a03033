"""A real name server and broker as processes: send, pull, long polling, offsets, queries, restarts."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from pathlib import Path

import orjson
import pytest
from clusterprocs import Processes

from rocketq.client.producer import Producer
from rocketq.client.pullconsumer import PullConsumer
from rocketq.protocol import messagetypes, msgid, storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.messagetypes import Message
from rocketq.remoting.client import RemotingClient

TOPIC = "BrokerIT"


def _msg(body: bytes, tags: str | None = None, keys: str | None = None, **props: str) -> Message:
    m = Message(TOPIC, body, properties=dict(props))
    if tags:
        m.tags = tags
    if keys:
        m.keys = keys.split()
    return m


async def _pull_all(consumer: PullConsumer, topic: str = TOPIC) -> list[messagetypes.MessageExt]:
    out: list[messagetypes.MessageExt] = []
    for mq in await consumer.fetch_subscribe_queues(topic):
        offset = 0
        while True:
            result = await consumer.pull(mq, "*", offset, max_nums=32)
            out.extend(result.messages)
            if result.next_begin_offset == offset or not result.messages:
                break
            offset = result.next_begin_offset
    return out


async def test_message_is_consumed_exactly_as_sent(processes: Processes) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    async with Producer("it-pg", namesrv_addr=ns.address) as producer, \
            PullConsumer("it-cg", namesrv_addr=ns.address) as consumer:
        sent = _msg(b"\x00binary\xffbody", tags="TagA", keys="k1 k2", color="blue", emoji="snow \u2603")
        result = await producer.send(sent)
        assert result.status.name == "SEND_OK"
        (got,) = await _pull_all(consumer)
    assert got.body == b"\x00binary\xffbody"
    assert got.topic == TOPIC and got.tags == "TagA" and got.keys == ["k1", "k2"]
    assert got.properties["color"] == "blue" and got.properties["emoji"] == "snow \u2603"
    assert got.msg_id == result.msg_id and got.offset_msg_id == result.offset_msg_id
    assert got.queue_id == result.message_queue.queue_id and got.queue_offset == result.queue_offset
    decoded = msgid.decode_offset_msg_id(result.offset_msg_id)
    assert decoded.store_host[0] == "127.0.0.1" and decoded.commit_log_offset == got.commit_log_offset


async def test_batch_and_compressed_bodies_round_trip(processes: Processes) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    big = bytes(range(256)) * 64  # over the 4 KiB compression threshold
    async with Producer("it-pg", namesrv_addr=ns.address) as producer, \
            PullConsumer("it-cg", namesrv_addr=ns.address) as consumer:
        await producer.send_batch([_msg(b"batch-%d" % i, keys=f"b{i}") for i in range(20)])
        await producer.send(_msg(big))
        got = await _pull_all(consumer)
    assert sorted(m.body for m in got if m.body.startswith(b"batch-")) == sorted(b"batch-%d" % i for i in range(20))
    assert [m.body for m in got if len(m.body) == len(big)] == [big]


async def _raw_pull(client: RemotingClient, broker: str, offset: int, suspend_ms: int, queue_id: int = 0,
                    expression: str = "*") -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group="raw-cg", topic=TOPIC, queue_id=queue_id, queue_offset=offset, max_msg_nums=32,
        sys_flag=2 | 4, commit_offset=0, suspend_timeout_millis=suspend_ms, subscription=expression,
        expression_type="TAG")
    return await client.invoke(broker, RemotingCommand(code=RequestCode.PULL_MESSAGE, ext_fields=header.to_ext()),
                               timeout=suspend_ms / 1000 + 10)


def _send_v2_fields(**overrides: str) -> dict[str, str]:
    """A SEND_MESSAGE_V2 header as a producer writes it (one-letter names), with overrides."""
    fields = {"a": "pg", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}
    fields.update(overrides)
    return fields


async def _raw_send(client: RemotingClient, broker: str, body: bytes, timeout: float = 5,
                    **overrides: str) -> RemotingCommand:
    return await client.invoke(broker, RemotingCommand(code=RequestCode.SEND_MESSAGE_V2,
                                                       ext_fields=_send_v2_fields(**overrides), body=body), timeout)


async def test_long_polling_answers_when_a_message_arrives(processes: Processes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address)
    client = RemotingClient()
    try:
        async with Producer("it-pg", namesrv_addr=ns.address) as producer:
            await producer.send(_msg(b"first"), selector=lambda queues: queues[0])
            held = asyncio.ensure_future(_raw_pull(client, broker.address, 1, suspend_ms=30_000))
            await asyncio.sleep(0.3)
            assert not held.done(), "the pull must be held while the queue has nothing new"
            started = time.perf_counter()
            await producer.send(_msg(b"second"), selector=lambda queues: queues[0])
            response = await asyncio.wait_for(held, 10)
            waited_ms = (time.perf_counter() - started) * 1000
        assert response.code == ResponseCode.SUCCESS
        (got,) = list(storedrecords.iter_stored_records(response.body))
        assert got.body == b"second"
        print(f"long-poll wake-up after send: {waited_ms:.1f} ms")  # measured; budgets live in bench/
    finally:
        await client.close()


async def test_held_pull_times_out_with_pull_not_found(processes: Processes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address)
    client = RemotingClient()
    try:
        async with Producer("it-pg", namesrv_addr=ns.address) as producer:
            await producer.send(_msg(b"only"), selector=lambda queues: queues[0])
        response = await _raw_pull(client, broker.address, 1, suspend_ms=300)
        assert response.code == ResponseCode.PULL_NOT_FOUND
        assert response.ext_fields["nextBeginOffset"] == "1" and response.ext_fields["maxOffset"] == "1"
        # a tag the message does not carry: held, then skipped past
        response = await _raw_pull(client, broker.address, 0, suspend_ms=300, expression="NoSuchTag")
        assert response.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY)
        assert response.ext_fields["nextBeginOffset"] == "1"
    finally:
        await client.close()


async def test_offsets_survive_broker_restart(processes: Processes, tmp_path: Path) -> None:
    ns = processes.namesrv()
    store = tmp_path / "store"
    broker = processes.broker(ns.address, store=store)
    port = int(broker.address.rsplit(":", 1)[1])
    async with Producer("it-pg", namesrv_addr=ns.address) as producer:
        for i in range(5):
            await producer.send(_msg(b"m%d" % i), selector=lambda queues: queues[1])
    async with PullConsumer("it-cg", namesrv_addr=ns.address) as consumer:
        mq = (await consumer.fetch_subscribe_queues(TOPIC))[1]
        await consumer.update_offset(mq, 3)
    assert broker.stop() == 0
    processes.broker(ns.address, store=store, port=port)
    async with PullConsumer("it-cg", namesrv_addr=ns.address) as consumer:
        mq = (await consumer.fetch_subscribe_queues(TOPIC))[1]
        assert await consumer.query_offset(mq) == 3
        result = await consumer.pull(mq, "*", 3, max_nums=32)
        assert [m.body for m in result.messages] == [b"m3", b"m4"]


async def test_queries_by_id_key_and_time(processes: Processes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address)
    before = int(time.time() * 1000) - 1
    async with Producer("it-pg", namesrv_addr=ns.address) as producer:
        sent = [await producer.send(_msg(b"q%d" % i, keys=f"order-{i} shared")) for i in range(6)]
    after = int(time.time() * 1000) + 1
    client = RemotingClient()
    try:
        view = await client.invoke(broker.address, RemotingCommand(
            code=RequestCode.VIEW_MESSAGE_BY_ID,
            ext_fields={"offset": str(msgid.decode_offset_msg_id(sent[2].offset_msg_id).commit_log_offset)}), 5)
        assert view.code == ResponseCode.SUCCESS
        assert storedrecords.decode_stored_record(view.body, 0).body == b"q2"

        async def query(key: str, max_num: int = 32, begin: int = before, end: int = after) -> list[bytes]:
            r = await client.invoke(broker.address, RemotingCommand(code=RequestCode.QUERY_MESSAGE, ext_fields={
                "topic": TOPIC, "key": key, "maxNum": str(max_num), "beginTimestamp": str(begin),
                "endTimestamp": str(end)}), 5)
            return [] if r.code == ResponseCode.QUERY_NOT_FOUND else [m.body for m in
                                                                      storedrecords.iter_stored_records(r.body)]

        assert await query("order-4") == [b"q4"]
        assert sorted(await query("shared")) == sorted(b"q%d" % i for i in range(6))
        assert await query(sent[5].msg_id) == [b"q5"]  # UNIQ_KEY index
        assert await query("order-4", begin=after + 60_000, end=after + 120_000) == []
        mq = sent[0].message_queue
        found = await client.invoke(broker.address, RemotingCommand(code=RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                    ext_fields={"topic": TOPIC, "queueId": str(mq.queue_id),
                                                "timestamp": str(before)}), 5)
        assert found.ext_fields["offset"] == "0"
    finally:
        await client.close()


@pytest.mark.parametrize("garbage", [b"\xff" * 64, struct.pack(">i", -7) + b"xyz", b"GET / HTTP/1.0\r\n\r\n",
                                     struct.pack(">iI", 20, 16) + b"{not json at all"])
async def test_garbage_never_takes_a_process_down(processes: Processes, garbage: bytes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address)
    for addr in (ns.address, broker.address):
        host, port = addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(garbage)
            sock.settimeout(5)
            assert sock.recv(100) == b""  # the server closed this connection
    async with Producer("it-pg", namesrv_addr=ns.address) as producer:
        assert (await producer.send(_msg(b"still alive"))).status.name == "SEND_OK"
    assert ns.popen.poll() is None and broker.popen.poll() is None


async def test_bad_requests_get_rocketmq_codes(processes: Processes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config={"autoCreateTopicEnable": "false"})
    client = RemotingClient()
    try:
        async def send(**overrides: str) -> RemotingCommand:
            return await _raw_send(client, broker.address, b"x", **{"b": "NoSuchTopic", **overrides})

        assert (await send()).code == ResponseCode.TOPIC_NOT_EXIST
        assert (await send(b="bad topic!")).code == ResponseCode.SYSTEM_ERROR
        assert (await send(e="x")).code == ResponseCode.SYSTEM_ERROR  # malformed header
        assert (await send(b="TBW102")).code == ResponseCode.SYSTEM_ERROR  # system topic
        unknown = await client.invoke(broker.address, RemotingCommand(code=9999), 5)
        assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        await client.close()


async def test_flow_control_answers_system_busy_instead_of_queueing(processes: Processes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config={"sendThreadPoolQueueCapacity": "1", "flushDiskType": "SYNC_FLUSH"})
    client = RemotingClient()
    try:
        first = await _raw_send(client, broker.address, b"create")
        assert first.code == ResponseCode.SUCCESS
        answers = await asyncio.gather(*(_raw_send(client, broker.address, b"burst-%d" % i, 10) for i in range(200)))
        codes = [a.code for a in answers]
        assert set(codes) <= {ResponseCode.SUCCESS, ResponseCode.SYSTEM_BUSY}
        assert ResponseCode.SYSTEM_BUSY in codes, "a burst beyond the bound must be refused, not queued"
        busy = next(a for a in answers if a.code == ResponseCode.SYSTEM_BUSY)
        assert "TOO_MANY_REQUESTS" in (busy.remark or "")
        again = await _raw_send(client, broker.address, b"after")
        assert again.code == ResponseCode.SUCCESS
    finally:
        await client.close()


async def test_draining_broker_refuses_sends_and_registers_read_only(processes: Processes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address)
    client = RemotingClient()
    try:
        async with Producer("it-pg", namesrv_addr=ns.address) as producer:
            await producer.send(_msg(b"before drain"))
        update = await client.invoke(broker.address, RemotingCommand(
            code=RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=4\n"), 5)
        assert update.code == ResponseCode.SUCCESS
        route = await client.invoke(ns.address, RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                                ext_fields={"topic": TOPIC}), 5)
        assert {q["perm"] for q in orjson.loads(route.body)["queueDatas"]} == {4}  # readers only
        refused = await _raw_send(client, broker.address, b"x")
        assert refused.code == ResponseCode.NO_PERMISSION
        async with PullConsumer("it-cg", namesrv_addr=ns.address) as consumer:  # consumers keep reading
            assert [m.body for m in await _pull_all(consumer)] == [b"before drain"]
    finally:
        await client.close()

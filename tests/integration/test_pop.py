"""POP consumption against real `rocketq namesrv` + `rocketq broker` processes: pop/ack, invisible
time expiry through the revive log and the retry topic, change invisible time, the DLQ, orderly
pops, long polling, a kill -9 with un-acked messages, and a pull group beside a POP group."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from clusterprocs import pull_bodies, scrape_metrics

from rocketq.admin.client import AdminClient
from rocketq.client import wire
from rocketq.client.errors import BrokerError
from rocketq.client.messages import Message
from rocketq.client.popclient import PopClient
from rocketq.client.producer import Producer
from rocketq.client.simpleconsumer import SimpleConsumer
from rocketq.local.ports import free_port
from rocketq.protocol import codes, popinfo
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.poprequests import PoppedMessage, PopStatus
from rocketq.protocol.queues import MessageQueue
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.errors import RemotingError

TOPIC = "PopIT"
GROUP = "pop-cg"
BROKER = "broker-a"
FAST_REVIVE = {"reviveInterval": "200"}
INVISIBLE_MS = 1500


async def wait_for(probe: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll an async probe until it returns something truthy (generous: the machine is shared)."""
    deadline = time.monotonic() + timeout
    while True:
        got = await probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.2)


@pytest.fixture
async def pops() -> AsyncIterator[PopClient]:
    client = PopClient(timeout_s=10)
    try:
        yield client
    finally:
        await client.close()


async def send(ns: str, bodies: list[bytes], topic: str = TOPIC, **kw: Any) -> None:
    async with Producer("pop-pg", namesrv_addr=ns) as producer:
        for body in bodies:
            await producer.send(Message(topic, body, **kw))


async def pop_all(pops: PopClient, addr: str, n: int, group: str = GROUP, **kw: Any) -> list[PoppedMessage]:
    """Pop until ``n`` messages were handed out (each pop may take some from some queues)."""
    got: list[PoppedMessage] = []

    async def more() -> bool:
        try:
            result = await pops.pop(addr, BROKER, group, TOPIC, max_nums=32, **kw)
        except RemotingError:  # a connection to a broker killed before
            return False
        got.extend(result.messages)
        return len(got) >= n

    await wait_for(more)
    return got


async def test_pop_then_ack_hands_out_each_message_once(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
    sent = [f"m{i}".encode() for i in range(10)]
    await send(ns.address, sent)
    got = await pop_all(pops, broker.address, 10, invisible_ms=INVISIBLE_MS)
    assert sorted(m.message.body for m in got) == sorted(sent)
    assert {m.message.topic for m in got} == {TOPIC} and {m.real_topic for m in got} == {TOPIC}
    for m in got:
        assert m.message.reconsume_times == 0
        assert m.extra_info.topic_type is popinfo.TopicType.NORMAL and m.extra_info.broker_name == BROKER
        assert m.message.properties["POP_CK"] == m.extra_info.build()
        await pops.ack(broker.address, GROUP, m)
    await asyncio.sleep(INVISIBLE_MS / 1000 + 1.5)  # past the invisible time: nothing comes back
    again = await pops.pop(broker.address, BROKER, GROUP, TOPIC, invisible_ms=INVISIBLE_MS)
    assert again.status is PopStatus.POLLING_NOT_FOUND and again.messages == []
    async with AdminClient(ns.address) as admin:  # the POP group's offsets moved past everything
        total = 0
        for qid in range(8):
            total += await admin.max_offset(broker.address, TOPIC, qid)
        assert total == 10


async def test_batch_ack_acks_every_message_named(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
    await send(ns.address, [f"b{i}".encode() for i in range(8)])
    got = await pop_all(pops, broker.address, 8, invisible_ms=INVISIBLE_MS)
    await pops.batch_ack(broker.address, BROKER, GROUP, got[1:])
    await asyncio.sleep(INVISIBLE_MS / 1000 + 1.0)
    (back,) = await pop_all(pops, broker.address, 1, invisible_ms=INVISIBLE_MS)
    assert back.message.body == got[0].message.body and back.message.reconsume_times == 1
    await pops.batch_ack(broker.address, BROKER, GROUP, [back])  # a retry-topic message, by its type flag
    await asyncio.sleep(INVISIBLE_MS / 1000 + 1.5)
    assert (await pops.pop(broker.address, BROKER, GROUP, TOPIC)).messages == []


async def test_unacked_message_comes_back_from_the_retry_topic_counted(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    metrics_port = free_port()
    broker = processes.broker(ns.address, config=FAST_REVIVE, extra=("--metrics-port", str(metrics_port)))
    await send(ns.address, [b"flaky", b"fine"])
    first = await pop_all(pops, broker.address, 2, invisible_ms=INVISIBLE_MS)
    popped_at = time.time()
    fine = next(m for m in first if m.message.body == b"fine")
    await pops.ack(broker.address, GROUP, fine)
    again = await pop_all(pops, broker.address, 1, invisible_ms=INVISIBLE_MS)
    assert time.time() - popped_at >= INVISIBLE_MS / 1000 - 0.2
    (back,) = again
    assert back.message.body == b"flaky" and back.message.reconsume_times == 1
    flaky = next(m for m in first if m.message.body == b"flaky")
    assert back.message.topic == TOPIC and back.message.msg_id == flaky.message.msg_id
    assert back.extra_info.topic_type is popinfo.TopicType.RETRY_V1
    assert back.real_topic == popinfo.pop_retry_topic(TOPIC, GROUP) == f"%RETRY%{GROUP}_{TOPIC}"
    await pops.ack(broker.address, GROUP, back)
    await asyncio.sleep(INVISIBLE_MS / 1000 + 1.5)
    assert (await pops.pop(broker.address, BROKER, GROUP, TOPIC)).messages == []
    metrics = scrape_metrics(metrics_port)
    labels = {"cluster": "DefaultCluster", "broker": BROKER}
    for name, value in (("rocketq_pop_messages_popped_total", 3), ("rocketq_pop_messages_acked_total", 2),
                        ("rocketq_pop_messages_revived_total", 1), ("rocketq_pop_held_requests", 0),
                        ("rocketq_pop_pending_checkpoints", 0)):
        assert metrics[name] == [(labels, value)], name


async def test_change_invisible_time_brings_a_message_back_sooner(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
    await send(ns.address, [b"later"])
    (first,) = await pop_all(pops, broker.address, 1, invisible_ms=120_000)
    changed = await pops.change_invisible_time(broker.address, GROUP, first, 1000)
    assert changed.extra_info.ck_queue_offset == first.message.queue_offset
    assert changed.extra_info.invisible_time == 1000 and changed.extra_info.pop_time >= first.extra_info.pop_time
    (back,) = await pop_all(pops, broker.address, 1, invisible_ms=INVISIBLE_MS)  # long before 120 s
    assert back.message.body == b"later" and back.message.reconsume_times == 1
    await pops.ack(broker.address, GROUP, back)
    await asyncio.sleep(INVISIBLE_MS / 1000 + 1.5)
    assert (await pops.pop(broker.address, BROKER, GROUP, TOPIC)).messages == []


async def test_simple_consumer_dead_letters_past_max_reconsume_times(processes: Any) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
    await send(ns.address, [b"poison"])
    async with SimpleConsumer(GROUP, ns.address, subscriptions={TOPIC: "*"}, await_duration_s=1,
                              max_reconsume_times=1) as consumer:
        seen: list[PoppedMessage] = []

        async def received() -> bool:
            seen.extend(await consumer.receive(8, invisible_duration_s=1))
            return bool(seen)

        await wait_for(received)
        assert [m.message.reconsume_times for m in seen] == [0]  # not acked: it comes back once more ...
        async with AdminClient(ns.address) as admin:
            async def dead_lettered() -> bool:
                assert await consumer.receive(8, invisible_duration_s=1) == []  # ... and is never returned
                return await admin.max_offset(broker.address, codes.dlq_topic(GROUP), 0) == 1

            await wait_for(dead_lettered)
    dlq = await pull_bodies(ns.address, codes.dlq_topic(GROUP), "dlq-reader")
    assert dlq == [b"poison"]


def queue_zero(queues: Any) -> Any:
    return min(queues, key=lambda q: q.queue_id)


async def test_orderly_pop_locks_the_queue_and_keeps_order(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
    sent = [f"o{i}".encode() for i in range(5)]
    async with Producer("pop-pg", namesrv_addr=ns.address) as producer:
        for body in sent:
            await producer.send(Message(TOPIC, body), selector=queue_zero)
    addr = broker.address

    async def pop(attempt: str) -> list[PoppedMessage]:
        result = await pops.pop(addr, BROKER, GROUP, TOPIC, max_nums=2, queue_id=0, order=True, attempt_id=attempt,
                                invisible_ms=INVISIBLE_MS)
        return result.messages

    first = await pop("a1")
    assert [m.message.body for m in first] == [b"o0", b"o1"]
    assert all(m.extra_info.orderly and m.message.reconsume_times == 0 for m in first)
    assert await pop("a2") == []  # locked to the first batch while it is invisible
    assert [m.message.body for m in await pop("a1")] == [b"o0", b"o1"]  # the same attempt gets it again
    await pops.ack(addr, GROUP, first[0])
    assert await pop("a3") == []  # o1 still held
    again: list[PoppedMessage] = []

    async def expired() -> bool:
        again.extend(await pop("a4"))
        return bool(again)

    await wait_for(expired)  # o1's invisible time passed: o1 again, counted, then o2; o0 stays acked
    assert [(m.message.body, m.message.reconsume_times) for m in again] == [(b"o1", 1), (b"o2", 0)]
    for m in again:
        await pops.ack(addr, GROUP, m)
    rest = await pop("a5")  # acked: the queue moves on at once
    assert [m.message.body for m in rest] == [b"o3", b"o4"]


async def test_a_held_pop_is_answered_when_a_message_arrives(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
    await send(ns.address, [b"create the topic"])
    await pop_all(pops, broker.address, 1)
    began = time.monotonic()
    held = asyncio.create_task(pops.pop(broker.address, BROKER, GROUP, TOPIC, poll_ms=30_000))
    await asyncio.sleep(1.0)
    assert not held.done()
    await send(ns.address, [b"wake up"])
    result = await asyncio.wait_for(held, 60)
    assert [m.message.body for m in result.messages] == [b"wake up"]
    assert time.monotonic() - began < 25  # answered by the arrival, not by the 30 s poll timeout


async def test_unacked_messages_survive_a_kill9_and_acked_ones_stay_acked(
        processes: Any, pops: PopClient, tmp_path: Any) -> None:
    ns = processes.namesrv()
    store = tmp_path / "pop-store"
    broker = processes.broker(ns.address, store=store, config=FAST_REVIVE)
    port = int(broker.address.rsplit(":", 1)[1])
    await send(ns.address, [b"acked", b"lost-1", b"lost-2"])
    got = await pop_all(pops, broker.address, 3, invisible_ms=4000)
    await pops.ack(broker.address, GROUP, next(m for m in got if m.message.body == b"acked"))
    broker.kill9()
    broker = processes.broker(ns.address, store=store, port=port, config=FAST_REVIVE)
    back = await pop_all(pops, broker.address, 2, invisible_ms=INVISIBLE_MS)
    assert sorted((m.message.body, m.message.reconsume_times) for m in back) == [(b"lost-1", 1), (b"lost-2", 1)]
    for m in back:
        await pops.ack(broker.address, GROUP, m)
    await asyncio.sleep(INVISIBLE_MS / 1000 + 1.5)
    assert (await pops.pop(broker.address, BROKER, GROUP, TOPIC)).messages == []


async def test_a_pull_group_and_a_pop_group_each_see_every_message(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
    sent = [f"s{i}".encode() for i in range(12)]
    await send(ns.address, sent)
    popped = await pop_all(pops, broker.address, 12)
    for m in popped:
        await pops.ack(broker.address, GROUP, m)
    assert sorted(m.message.body for m in popped) == sorted(sent)
    assert sorted(await pull_bodies(ns.address, TOPIC, "pull-cg")) == sorted(sent)
    async with AdminClient(ns.address) as admin:  # the POP group shows no lag once everything was popped
        stats = await admin.consume_stats(broker.address, GROUP, TOPIC)
        assert stats.total_diff == 0 and sum(o.broker_offset for _, o in stats.offsets) == 12


async def test_pop_filters_by_tag(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
    async with Producer("pop-pg", namesrv_addr=ns.address) as producer:
        for i in range(6):
            await producer.send(Message(TOPIC, f"t{i}".encode(), tags="even" if i % 2 == 0 else "odd"))
    got = await pop_all(pops, broker.address, 3, expression="even")
    assert sorted(m.message.body for m in got) == [b"t0", b"t2", b"t4"]
    await asyncio.sleep(0.5)
    assert (await pops.pop(broker.address, BROKER, GROUP, TOPIC, expression="even")).messages == []


def consumer_heartbeat(client_id: str, group: str) -> bytes:
    return orjson.dumps({"clientID": client_id, "producerDataSet": [], "consumerDataSet": [
        {"groupName": group, "consumeType": "CONSUME_POP", "messageModel": "CLUSTERING",
         "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": []}]})


async def test_query_assignment_balances_pull_and_hands_pop_whole_brokers(processes: Any, tmp_path: Any) -> None:
    ns = processes.namesrv()
    store = tmp_path / "assign-store"
    broker = processes.broker(ns.address, store=store)
    await send(ns.address, [b"x"])  # creates the topic and its route
    links = [RemotingClient(name=f"cid{i}") for i in range(2)]
    try:
        for i, rc in enumerate(links):  # two members of the group, each on its own connection
            await wire.heartbeat(rc, broker.address, consumer_heartbeat(f"cid{i}", GROUP), 10)
        pops = [PopClient(rc, timeout_s=10) for rc in links]
        pulled = [await p.query_assignment(broker.address, TOPIC, GROUP, f"cid{i}") for i, p in enumerate(pops)]
        assert all(mode == "PULL" for got in pulled for _, mode in got)
        mine, theirs = ({mq for mq, _ in got} for got in pulled)
        assert mine and theirs and not mine & theirs and all(mq.queue_id >= 0 for mq in mine | theirs)

        await pops[0].set_message_request_mode(broker.address, TOPIC, GROUP, "POP", 0)
        whole = [(MessageQueue(TOPIC, BROKER, -1), "POP")]
        assert await pops[1].query_assignment(broker.address, TOPIC, GROUP, "cid1") == whole
        with pytest.raises(BrokerError) as refused:
            await pops[0].set_message_request_mode(broker.address, codes.RETRY_GROUP_TOPIC_PREFIX + GROUP, GROUP)
        assert refused.value.code == ResponseCode.NO_PERMISSION
        assert await pops[0].query_assignment(broker.address, "NoSuchTopic", GROUP, "cid0") == []
    finally:
        for rc in links:
            await rc.close()
    broker.stop()  # the mode is kept in config/messageRequestMode.json
    broker = processes.broker(ns.address, store=store, port=int(broker.address.rsplit(":", 1)[1]))
    rc = RemotingClient(name="cid0")
    try:
        await wire.heartbeat(rc, broker.address, consumer_heartbeat("cid0", GROUP), 10)
        assert await PopClient(rc).query_assignment(broker.address, TOPIC, GROUP, "cid0") == whole
    finally:
        await rc.close()


async def test_pop_filters_by_sql92_and_a_broker_without_property_filter_refuses_it(processes: Any,
                                                                                     pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config={**FAST_REVIVE, "enablePropertyFilter": "true"})
    async with Producer("pop-pg", namesrv_addr=ns.address) as producer:
        for i in range(6):
            await producer.send(Message(TOPIC, f"q{i}".encode(), properties={"n": str(i)}))
    got = await pop_all(pops, broker.address, 3, expression="n >= 3", expression_type="SQL92")
    assert sorted(m.message.body for m in got) == [b"q3", b"q4", b"q5"]
    with pytest.raises(BrokerError) as bad:
        await pops.pop(broker.address, BROKER, GROUP, TOPIC, expression="n >=", expression_type="SQL92")
    assert bad.value.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    plain_ns = processes.namesrv()  # its own name server: the send must create the topic on this broker
    plain = processes.broker(plain_ns.address, "broker-b")
    await send(plain_ns.address, [b"x"], topic="PlainTopic")
    with pytest.raises(BrokerError) as refused:
        await pops.pop(plain.address, "broker-b", GROUP, "PlainTopic", expression="n > 1", expression_type="SQL92")
    assert "SQL92" in refused.value.remark


async def test_held_pops_are_capped_and_time_out_not_found(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config={**FAST_REVIVE, "popPollingSize": "1"})
    await send(ns.address, [b"create the topic"])
    await pop_all(pops, broker.address, 1)
    began = time.monotonic()
    results = await asyncio.gather(*(pops.pop(broker.address, BROKER, GROUP, TOPIC, poll_ms=8000) for _ in range(2)))
    assert sorted(r.status.value for r in results) == ["POLLING_FULL", "POLLING_NOT_FOUND"]
    assert all(r.messages == [] for r in results)
    assert time.monotonic() - began >= 7.5  # the held one was answered at its poll time, not at once

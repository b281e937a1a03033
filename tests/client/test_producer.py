"""Producer against the in-process fake cluster: sends, routing, retries, faults, lifecycle."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from client_fakes import FakeCluster

from rocketq.client.errors import BrokerError, ClientStateError, MessageError, RouteError
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.queues import MessageQueue
from rocketq.client.selectors import hash_by_key
from rocketq.client.sending import SendResult, SendStatus
from rocketq.protocol import messagetypes, storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.errors import RemotingTimeoutError

SEND = RequestCode.SEND_MESSAGE_V2


@pytest.fixture
async def producer(cluster: FakeCluster) -> AsyncIterator[Producer]:
    cluster.topic("TopicTest")
    p = Producer("pg", namesrv_addr=cluster.namesrv.addr, instance_name="unit")
    await p.start()
    try:
        yield p
    finally:
        await p.close()


def stored(cluster: FakeCluster, topic: str = "TopicTest") -> list[messagetypes.MessageExt]:
    return [storedrecords.decode_stored_record(r) for b in cluster.brokers for (t, _q), sq in b.queues.items()
            if t == topic for r in sq.records]


async def test_send_stores_the_message_and_reports_both_ids(cluster: FakeCluster, producer: Producer) -> None:
    msg = Message("TopicTest", b"hello", tags="TagA", keys=["k1"], properties={"p": "v"})
    result = await producer.send(msg)
    assert result.status is SendStatus.SEND_OK and result.msg_id == msg.uniq_key
    [ext] = stored(cluster)
    assert ext.body == b"hello" and ext.tags == "TagA" and ext.keys == ["k1"] and ext.properties["p"] == "v"
    assert ext.msg_id == result.msg_id and ext.offset_msg_id == result.offset_msg_id
    assert result.message_queue == MessageQueue("TopicTest", result.message_queue.broker_name, ext.queue_id)
    assert result.queue_offset == ext.queue_offset == 0
    assert producer.client_id is not None and producer.client_id.endswith("@unit")


async def test_round_robin_spreads_over_every_queue_of_both_brokers(cluster: FakeCluster, producer: Producer) -> None:
    results = [await producer.send(Message("TopicTest", f"m{i}".encode())) for i in range(16)]
    queues = {r.message_queue for r in results}
    assert len(queues) == 8 and {q.broker_name for q in queues} == {"broker-a", "broker-b"}


async def test_large_body_is_compressed_on_the_wire_and_readable(cluster: FakeCluster, producer: Producer) -> None:
    body = bytes(range(256)) * 64
    await producer.send(Message("TopicTest", body))
    [ext] = stored(cluster)
    assert ext.sys_flag & messagetypes.MessageSysFlag.COMPRESSED and ext.body == body
    raw = next(r for b in cluster.brokers for sq in b.queues.values() for r in sq.records)
    assert len(raw) < len(body)


async def test_batch_is_one_request_with_consecutive_offsets(cluster: FakeCluster, producer: Producer) -> None:
    msgs = [Message("TopicTest", f"b{i}".encode(), tags="T") for i in range(5)]
    result = await producer.send_batch(msgs)
    assert result.msg_id == ",".join(m.uniq_key or "" for m in msgs)
    assert sorted(e.queue_offset for e in stored(cluster)) == [0, 1, 2, 3, 4]
    assert sum(b.codes().count(RequestCode.SEND_BATCH_MESSAGE) for b in cluster.brokers) == 1


async def test_selector_sends_a_key_to_one_queue(cluster: FakeCluster, producer: Producer) -> None:
    results = [await producer.send(Message("TopicTest", b"o"), selector=hash_by_key("order-42")) for _ in range(5)]
    assert len({r.message_queue for r in results}) == 1
    queues = await producer.fetch_publish_queues("TopicTest")
    assert results[0].message_queue == hash_by_key("order-42")(queues)


async def test_selector_returning_a_foreign_queue_is_refused(producer: Producer) -> None:
    with pytest.raises(MessageError, match="selector"):
        await producer.send(Message("TopicTest", b"o"), selector=lambda _qs: MessageQueue("X", "b", 0))


async def test_async_send_completes_future_and_callback(cluster: FakeCluster, producer: Producer) -> None:
    seen: list[tuple[SendResult | None, BaseException | None]] = []
    done = asyncio.Event()

    def callback(result: SendResult | None, error: BaseException | None) -> None:
        seen.append((result, error))
        done.set()

    future = producer.send_async(Message("TopicTest", b"async"), callback)
    result = await future
    await done.wait()
    assert seen == [(result, None)] and result.status is SendStatus.SEND_OK


async def test_oneway_send_arrives(cluster: FakeCluster, producer: Producer) -> None:
    await producer.send_oneway(Message("TopicTest", b"oneway"))
    for _ in range(100):
        if stored(cluster):
            break
        await asyncio.sleep(0.01)
    assert [e.body for e in stored(cluster)] == [b"oneway"]


async def test_unknown_topic_borrows_the_auto_create_route(cluster: FakeCluster, producer: Producer) -> None:
    cluster.topic("TBW102", queue_nums=8, perm=7)
    result = await producer.send(Message("BrandNew", b"x"))
    assert result.message_queue.queue_id < 4
    assert "BrandNew" in cluster.namesrv.route_calls and "TBW102" in cluster.namesrv.route_calls
    assert {q.queue_id for q in await producer.fetch_publish_queues("BrandNew")} == {0, 1, 2, 3}


async def test_unknown_topic_without_auto_create_is_a_route_error(producer: Producer) -> None:
    with pytest.raises(RouteError, match="No route info"):
        await producer.send(Message("Nowhere", b"x"))


async def test_retriable_broker_error_moves_to_the_other_broker(cluster: FakeCluster, producer: Producer) -> None:
    cluster.brokers[0].fail_next[SEND] = [ResponseCode.SYSTEM_BUSY] * 100
    results = [await producer.send(Message("TopicTest", b"x")) for _ in range(8)]
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}
    # Round robin reached broker-a's queues at least once; each such send was retried on broker-b.
    assert cluster.brokers[0].codes().count(SEND) >= 1
    assert cluster.brokers[1].codes().count(SEND) == 8


async def test_non_retriable_broker_error_is_raised_at_once(cluster: FakeCluster, producer: Producer) -> None:
    for broker in cluster.brokers:
        broker.fail_next[SEND] = [ResponseCode.MESSAGE_ILLEGAL]
    with pytest.raises(BrokerError) as info:
        await producer.send(Message("TopicTest", b"x"))
    assert info.value.code == ResponseCode.MESSAGE_ILLEGAL and "injected failure" in str(info.value)
    assert sum(b.codes().count(SEND) for b in cluster.brokers) == 1


async def test_retries_are_bounded_by_retry_times(cluster: FakeCluster, producer: Producer) -> None:
    for broker in cluster.brokers:
        broker.fail_next[SEND] = [ResponseCode.SYSTEM_ERROR] * 5
    with pytest.raises(BrokerError) as info:
        await producer.send(Message("TopicTest", b"x"))
    assert sum(b.codes().count(SEND) for b in cluster.brokers) == 3
    assert any("3 attempt(s)" in note for note in info.value.__notes__)


async def test_durability_caveats_are_statuses_not_errors(cluster: FakeCluster, producer: Producer) -> None:
    for broker in cluster.brokers:
        broker.send_code = ResponseCode.FLUSH_DISK_TIMEOUT
    result = await producer.send(Message("TopicTest", b"x"))
    assert result.status is SendStatus.FLUSH_DISK_TIMEOUT
    assert sum(b.codes().count(SEND) for b in cluster.brokers) == 1


async def test_not_store_ok_is_resent_elsewhere_when_asked(cluster: FakeCluster) -> None:
    cluster.topic("TopicTest")
    cluster.brokers[0].send_code = ResponseCode.SLAVE_NOT_AVAILABLE
    cluster.brokers[1].send_code = ResponseCode.SLAVE_NOT_AVAILABLE
    async with Producer("pg", namesrv_addr=cluster.namesrv.addr,
                        retry_another_broker_when_not_store_ok=True) as producer:
        result = await producer.send(Message("TopicTest", b"x"))
    assert result.status is SendStatus.SLAVE_NOT_AVAILABLE
    assert sum(b.codes().count(SEND) for b in cluster.brokers) == 3


async def test_dead_broker_is_skipped_and_marked(cluster: FakeCluster, producer: Producer) -> None:
    await cluster.brokers[0].server.close()
    results = [await producer.send(Message("TopicTest", b"x")) for _ in range(6)]
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}
    assert not producer._faults.is_available("broker-a")


async def test_send_times_out_when_brokers_do_not_answer(cluster: FakeCluster) -> None:
    cluster.topic("TopicTest")
    for broker in cluster.brokers:
        broker.hang.add(SEND)
    async with Producer("pg", namesrv_addr=cluster.namesrv.addr, send_msg_timeout=300) as producer:
        with pytest.raises(RemotingTimeoutError):
            await producer.send(Message("TopicTest", b"x"))
    assert producer._faults.marked()


async def test_second_name_server_is_used_when_the_first_is_down(cluster: FakeCluster) -> None:
    cluster.topic("TopicTest")
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_addr = f"127.0.0.1:{dead.getsockname()[1]}"
    dead.close()
    async with Producer("pg", namesrv_addr=f"{dead_addr};{cluster.namesrv.addr}") as producer:
        for _ in range(3):
            assert (await producer.send(Message("TopicTest", b"x"))).status is SendStatus.SEND_OK


async def test_lifecycle_rules(cluster: FakeCluster) -> None:
    cluster.topic("TopicTest")
    producer = Producer("pg", namesrv_addr=cluster.namesrv.addr)
    with pytest.raises(ClientStateError, match="not running"):
        await producer.send(Message("TopicTest", b"x"))
    await producer.start()
    with pytest.raises(ClientStateError):
        await producer.start()
    await producer.send(Message("TopicTest", b"x"))
    await producer.close()
    await producer.close()
    assert any(u.producer_group == "pg" for b in cluster.brokers for u in b.unregistered)
    with pytest.raises(ClientStateError):
        await producer.send(Message("TopicTest", b"x"))


async def test_close_waits_for_async_sends(cluster: FakeCluster) -> None:
    cluster.topic("TopicTest")
    producer = Producer("pg", namesrv_addr=cluster.namesrv.addr)
    await producer.start()
    futures = [producer.send_async(Message("TopicTest", f"{i}".encode())) for i in range(10)]
    await producer.close()
    assert all(f.done() and f.result().status is SendStatus.SEND_OK for f in futures)
    assert len(stored(cluster)) == 10


def test_missing_name_server_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    producer = Producer("pg")
    with pytest.raises(ClientStateError, match="NAMESRV_ADDR"):
        asyncio.run(producer.start())

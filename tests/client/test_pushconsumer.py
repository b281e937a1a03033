"""PushConsumer against the in-process fake cluster: delivery, filtering, retries, balancing,
broadcasting, start offsets, flow control, lifecycle."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from client_fakes import FakeCluster, wait_until

from rocketq.client import consuming
from rocketq.client.allocation import allocate_averagely_by_circle
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.errors import ClientStateError
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer, parse_consume_timestamp
from rocketq.client.settings import ConsumeFromWhere, MessageModel
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.messagetypes import MessageExt

FAST = {"rebalance_interval": 300, "broker_suspend_max_time_millis": 500,
        "consumer_timeout_millis_when_suspend": 3000, "persist_consumer_offset_interval": 100}


class Collector:
    def __init__(self, status: ConsumeStatus = ConsumeStatus.CONSUME_SUCCESS) -> None:
        self.status = status
        self.messages: list[MessageExt] = []

    async def __call__(self, msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        self.messages.extend(msgs)
        return self.status

    def bodies(self) -> set[bytes]:
        return {m.body for m in self.messages}


@pytest.fixture
async def producer(cluster: FakeCluster) -> AsyncIterator[Producer]:
    cluster.topic("T")
    p = Producer("pg", namesrv_addr=cluster.namesrv.addr)
    await p.start()
    yield p
    await p.close()


def consumer(cluster: FakeCluster, listener: Any, expression: str = "*", group: str = "cg",
             **options: Any) -> PushConsumer:
    c = PushConsumer(group, namesrv_addr=cluster.namesrv.addr, **{**FAST, **options})
    c.subscribe("T", expression)
    c.register_listener(listener)
    return c


async def send(producer: Producer, n: int, tags: str | None = None, prefix: str = "m") -> set[bytes]:
    bodies = {f"{prefix}{i}".encode() for i in range(n)}
    for body in sorted(bodies):
        await producer.send(Message("T", body, tags=tags))
    return bodies


async def test_every_message_is_consumed_and_offsets_are_committed(cluster: FakeCluster, producer: Producer) -> None:
    sent = await send(producer, 20)
    collector = Collector()
    async with consumer(cluster, collector, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET):
        await wait_until(lambda: collector.bodies() >= sent)
        more = await send(producer, 10, prefix="late")
        await wait_until(lambda: collector.bodies() >= sent | more)
    assert len(collector.messages) == 30
    for broker in cluster.brokers:
        for (topic, qid), _q in list(broker.queues.items()):
            if topic == "T":
                assert broker.offsets[("cg", "T", qid)] == broker.max_offset("T", qid)
        assert any(u.consumer_group == "cg" for u in broker.unregistered)
    heartbeat = next(h for h in cluster.brokers[0].heartbeats if h["consumerDataSet"])["consumerDataSet"][0]
    assert heartbeat["groupName"] == "cg" and heartbeat["consumeType"] == "CONSUME_PASSIVELY"
    assert {s["topic"] for s in heartbeat["subscriptionDataSet"]} == {"T", "%RETRY%cg"}


async def test_tags_are_filtered_and_filtered_ranges_still_commit(cluster: FakeCluster, producer: Producer) -> None:
    wanted = await send(producer, 6, tags="TagA", prefix="a")
    await send(producer, 6, tags="TagC", prefix="c")
    collector = Collector()
    c = consumer(cluster, collector, "TagA || TagB")
    async with c:
        await wait_until(lambda: collector.bodies() >= wanted)
        # The TagC messages are never delivered, yet the offsets move past them.
        offsets = c._offsets
        assert offsets is not None
        await wait_until(lambda: sum(offsets.read_memory(mq) or 0 for mq in c.assigned() if mq.topic == "T") == 12)
    assert collector.bodies() == wanted and all(m.tags == "TagA" for m in collector.messages)
    committed = sum(o for b in cluster.brokers for (g, t, _q), o in b.offsets.items() if g == "cg" and t == "T")
    assert committed == 12


async def test_reconsume_later_goes_back_to_the_broker_and_returns_on_the_original_topic(
        cluster: FakeCluster, producer: Producer) -> None:
    cluster.namesrv.set_route("%RETRY%cg", cluster.brokers, queue_nums=1)
    seen: list[MessageExt] = []

    async def fail_first_time(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        seen.extend(msgs)
        return ConsumeStatus.RECONSUME_LATER if msgs[0].reconsume_times == 0 else ConsumeStatus.CONSUME_SUCCESS

    await send(producer, 1)
    async with consumer(cluster, fail_first_time):
        await wait_until(lambda: len(seen) >= 2)
    first, second = seen[:2]
    assert first.body == second.body == b"m0" and second.topic == "T" and second.reconsume_times == 1
    assert second.msg_id == first.msg_id
    [back] = [h for b in cluster.brokers for h in b.sent_back]
    assert back.group == "cg" and back.delay_level == 0 and back.max_reconsume_times == 16
    assert back.origin_topic == "T" and back.offset == first.commit_log_offset


async def test_failed_send_back_is_reconsumed_locally(cluster: FakeCluster, producer: Producer,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consuming, "RECONSUME_LOCALLY_DELAY", 0.05)
    for broker in cluster.brokers:
        broker.fail_next[RequestCode.CONSUMER_SEND_MSG_BACK] = [ResponseCode.SYSTEM_ERROR]
    calls: list[int] = []

    async def flaky(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        calls.append(msgs[0].reconsume_times)
        if len(calls) == 1:
            raise RuntimeError("listener bug")
        return ConsumeStatus.CONSUME_SUCCESS

    await send(producer, 1)
    async with consumer(cluster, flaky):
        await wait_until(lambda: len(calls) >= 2)
    assert calls[:2] == [0, 1]
    committed = sum(o for b in cluster.brokers for (g, t, _q), o in b.offsets.items() if g == "cg" and t == "T")
    assert committed == 1


async def test_ack_index_acknowledges_a_prefix(cluster: FakeCluster, producer: Producer) -> None:
    cluster.namesrv.set_route("%RETRY%cg", cluster.brokers, queue_nums=1)
    batches: list[list[bytes]] = []

    async def first_only(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        batches.append([m.body for m in msgs])
        ctx.ack_index = 0
        return ConsumeStatus.CONSUME_SUCCESS

    for i in range(3):
        await producer.send(Message("T", f"x{i}".encode()), selector=lambda qs: qs[0])
    async with consumer(cluster, first_only, consume_message_batch_max_size=3):
        await wait_until(lambda: sum(len(b.sent_back) for b in cluster.brokers) >= 2)
    assert batches[0] == [b"x0", b"x1", b"x2"]


async def test_two_members_split_the_queues_and_one_takes_all_when_the_other_leaves(
        cluster: FakeCluster, producer: Producer) -> None:
    one, two = Collector(), Collector()
    c1 = consumer(cluster, one, allocate=allocate_averagely_by_circle)
    c2 = consumer(cluster, two, allocate=allocate_averagely_by_circle)
    await c1.start()
    await c2.start()
    try:
        def topic_queues(c: PushConsumer) -> set[Any]:
            return {mq for mq in c.assigned() if mq.topic == "T"}

        await wait_until(lambda: len(topic_queues(c1)) == 4 and len(topic_queues(c2)) == 4)
        assert not topic_queues(c1) & topic_queues(c2)
        sent = await send(producer, 16)
        await wait_until(lambda: one.bodies() | two.bodies() >= sent)
        assert one.messages and two.messages and not one.bodies() & two.bodies()
        await c2.close()
        await wait_until(lambda: len(topic_queues(c1)) == 8)
        more = await send(producer, 8, prefix="after")
        await wait_until(lambda: one.bodies() >= more)
    finally:
        await c1.close()
        await c2.close()


async def test_broadcasting_delivers_everything_to_everyone_with_local_offsets(
        cluster: FakeCluster, producer: Producer, tmp_path: Path) -> None:
    one, two = Collector(), Collector()
    opts: dict[str, Any] = {"message_model": MessageModel.BROADCASTING, "offset_store_dir": str(tmp_path),
            "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
    c1 = consumer(cluster, one, instance_name="one", **opts)
    c2 = consumer(cluster, two, instance_name="two", **opts)
    await c1.start()
    await c2.start()
    try:
        sent = await send(producer, 10)
        await wait_until(lambda: one.bodies() >= sent and two.bodies() >= sent)
        assert "%RETRY%cg" not in c1.subscriptions()
    finally:
        await c1.close()
        await c2.close()
    files = sorted(tmp_path.glob("*/cg/offsets.json"))
    assert len(files) == 2
    table = json.loads(files[0].read_text())["offsetTable"]
    assert sum(e["offset"] for e in table if e["topic"] == "T") == 10
    assert not any(("cg", "T", 0) in b.offsets for b in cluster.brokers)


async def test_last_offset_skips_history_first_offset_reads_it(cluster: FakeCluster, producer: Producer) -> None:
    for i in range(5):
        await producer.send(Message("T", f"old{i}".encode()), selector=lambda qs: qs[0])
    cluster.brokers[0].truncate("T", 0, 2)  # offsets 2..4 remain; the broker has no offset to offer
    last, first = Collector(), Collector()
    c = consumer(cluster, last, group="g-last")
    async with c:
        await wait_until(lambda: len([mq for mq in c.assigned() if mq.topic == "T"]) == 8)
        new = await send(producer, 4, prefix="new")
        await wait_until(lambda: last.bodies() >= new)
    assert not any(m.body.startswith(b"old") for m in last.messages)
    async with consumer(cluster, first, group="g-first", consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET):
        # FIRST asks for offset 0; the broker answers OFFSET_MOVED to 2 and reading goes on from there.
        await wait_until(lambda: first.bodies() >= new | {b"old2", b"old3", b"old4"})
    assert b"old0" not in first.bodies()


async def test_timestamp_start_uses_search_offset(cluster: FakeCluster, producer: Producer) -> None:
    for broker in cluster.brokers:
        for q in range(4):
            broker.queues[("T", q)].min_offset = 50
    collector = Collector()
    async with consumer(cluster, collector, consume_from_where=ConsumeFromWhere.CONSUME_FROM_TIMESTAMP):
        sent = await send(producer, 4)
        await wait_until(lambda: collector.bodies() >= sent)
    assert any(code == RequestCode.SEARCH_OFFSET_BY_TIMESTAMP for b in cluster.brokers for code in b.codes())


async def test_flow_control_bounds_the_cache_of_a_queue(cluster: FakeCluster, producer: Producer) -> None:
    release = asyncio.Event()
    started: list[int] = []

    async def blocked(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        started.append(msgs[0].queue_offset)
        await release.wait()
        return ConsumeStatus.CONSUME_SUCCESS

    for i in range(30):
        await producer.send(Message("T", f"q{i}".encode()), selector=lambda qs: qs[0])
    c = consumer(cluster, blocked, pull_threshold_for_queue=3, pull_batch_size=2)
    await c.start()
    try:
        await wait_until(lambda: len(started) >= 3)
        task = next(t for mq, t in c._pull_tasks.items() if mq.topic == "T" and mq.queue_id == 0
                    and mq.broker_name == "broker-a")
        for _ in range(30):  # the cache never exceeds threshold + one pull batch
            assert task.pq.msg_count <= 3 + 2
            await asyncio.sleep(0.01)
        release.set()
        await wait_until(lambda: len(started) >= 30)
    finally:
        await c.close()


async def test_configuration_errors_are_clear(cluster: FakeCluster) -> None:
    c = PushConsumer("cg", namesrv_addr=cluster.namesrv.addr)
    with pytest.raises(ClientStateError, match="listener"):
        await c.start()
    with pytest.raises(ClientStateError, match="callable"):
        c.register_listener("nope")  # type: ignore[arg-type]
    with pytest.raises(ClientStateError, match="bad subscription"):
        c.subscribe("T", "||")
    with pytest.raises(ClientStateError, match="consumeTimestamp"):
        PushConsumer("cg", namesrv_addr="h:1", consume_timestamp="yesterday")
    assert parse_consume_timestamp("20240102030405") > 0
    await c.close()
    await c.close()
    with pytest.raises(ClientStateError):
        await c.start()

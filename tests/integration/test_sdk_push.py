"""The SDK against real `rocketq namesrv` + `rocketq broker` processes: Producer and PushConsumer.

Delivery of everything sent, balancing between two members with NOTIFY_CONSUMER_IDS_CHANGED,
resuming from committed offsets, ordered sends, and redelivery of RECONSUME_LATER messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from rocketq.client import consuming
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.selectors import hash_by_key
from rocketq.client.settings import ConsumeFromWhere
from rocketq.protocol.messagetypes import MessageExt

TOPIC = "SdkIT"
FAST: dict[str, Any] = {
    "rebalance_interval": 1000, "persist_consumer_offset_interval": 200, "poll_name_server_interval": 1000,
    "heartbeat_broker_interval": 1000, "broker_suspend_max_time_millis": 1000,
    "consumer_timeout_millis_when_suspend": 5000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
}


async def wait_until(predicate: Callable[[], bool], limit: float = 30.0) -> None:
    """Poll until ``predicate`` holds; the limit only turns a hang into a failure."""
    for _ in range(int(limit / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


class Collector:
    def __init__(self) -> None:
        self.messages: list[MessageExt] = []

    async def __call__(self, msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        self.messages.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    def bodies(self) -> set[bytes]:
        return {m.body for m in self.messages}


def push(namesrv: str, listener: Any, group: str = "sdk-cg", **options: Any) -> PushConsumer:
    consumer = PushConsumer(group, namesrv_addr=namesrv, **{**FAST, **options})
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(listener)
    return consumer


async def send_all(producer: Producer, prefix: str, n: int) -> set[bytes]:
    bodies = {f"{prefix}-{i}".encode() for i in range(n)}
    for body in sorted(bodies):
        await producer.send(Message(TOPIC, body, tags="TagA"))
    return bodies


async def test_push_consumer_gets_everything_and_a_restart_resumes(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    async with Producer("sdk-pg", namesrv_addr=ns.address) as producer:
        first = await send_all(producer, "first", 40)  # auto-created through TBW102
        collector = Collector()
        async with push(ns.address, collector):
            await wait_until(lambda: collector.bodies() >= first)
        assert len(collector.messages) == len(first)
        second = await send_all(producer, "second", 10)
        resumed = Collector()
        async with push(ns.address, resumed):
            await wait_until(lambda: resumed.bodies() >= second)
            await asyncio.sleep(0.5)
    # The committed offsets survived the first consumer: nothing from the first round again.
    assert resumed.bodies() == second


async def test_two_members_share_the_queues(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config={"defaultTopicQueueNums": "8"})
    async with Producer("sdk-pg", namesrv_addr=ns.address) as producer:
        await send_all(producer, "warmup", 8)
        one, two = Collector(), Collector()
        c1, c2 = push(ns.address, one), push(ns.address, two)
        await c1.start()
        await c2.start()
        try:
            def owned(c: PushConsumer) -> set[Any]:
                return {mq for mq in c.assigned() if mq.topic == TOPIC}

            await wait_until(lambda: len(owned(c1)) == 2 and len(owned(c2)) == 2)
            assert not owned(c1) & owned(c2)
            sent = await send_all(producer, "shared", 40)
            await wait_until(lambda: one.bodies() | two.bodies() >= sent)
            assert one.bodies() & sent and two.bodies() & sent
            await c2.close()
            await wait_until(lambda: len(owned(c1)) == 4)  # told at once by NOTIFY_CONSUMER_IDS_CHANGED
            after = await send_all(producer, "alone", 12)
            await wait_until(lambda: one.bodies() >= after)
        finally:
            await c1.close()
            await c2.close()


async def test_ordered_sends_arrive_in_order(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    async with Producer("sdk-pg", namesrv_addr=ns.address) as producer:
        results = [await producer.send(Message(TOPIC, f"step-{i}".encode()), selector=hash_by_key("order-42"))
                   for i in range(20)]
        assert len({r.message_queue for r in results}) == 1
        assert [r.queue_offset for r in results] == sorted(r.queue_offset for r in results)
        collector = Collector()
        async with push(ns.address, collector, consume_thread_max=1):
            await wait_until(lambda: len(collector.messages) >= 20)
    assert [m.body for m in collector.messages] == [f"step-{i}".encode() for i in range(20)]


async def test_reconsume_later_delivers_the_message_again(processes: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Whether the broker takes the message back (retry topic) or not (local re-consume), it returns.
    monkeypatch.setattr(consuming, "RECONSUME_LOCALLY_DELAY", 0.2)
    ns = processes.namesrv()
    processes.broker(ns.address)
    deliveries: list[MessageExt] = []

    async def fail_once(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        deliveries.extend(msgs)
        ctx.delay_level_when_next_consume = 1
        return ConsumeStatus.RECONSUME_LATER if len(deliveries) == 1 else ConsumeStatus.CONSUME_SUCCESS

    async with Producer("sdk-pg", namesrv_addr=ns.address) as producer:
        result = await producer.send(Message(TOPIC, b"again"))
        async with push(ns.address, fail_once):
            await wait_until(lambda: len(deliveries) >= 2)
    assert [m.msg_id for m in deliveries[:2]] == [result.msg_id, result.msg_id]
    assert deliveries[1].topic == TOPIC and deliveries[1].reconsume_times == 1

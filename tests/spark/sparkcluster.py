"""The Spark tests' workload on a real cluster (the fixtures in conftest.py run it once).

It leaves behind everything the tests check:

* ``SparkData``: 40 messages with keys, tags and a property, consumed by ``lag-cg``, which then
  goes offline; 12 more are sent, so ``lag-cg`` has a backlog and no consumer.
* ``SparkTraced``: traced sends, consumed by the traced groups ``fast-cg`` (refuses one message
  once: a retry) and ``slow-cg`` (a deliberately slow listener). ``slow-cg`` stops before the
  last message (``orphan``) is sent, so that message is an orphan for ``slow-cg``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from rocketq.admin import cluster as cluster_ops
from rocketq.admin import messages
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.sending import SendResult
from rocketq.client.settings import ConsumeFromWhere
from rocketq.protocol.messagetypes import MessageExt

DATA_TOPIC = "SparkData"
TRACED_TOPIC = "SparkTraced"
STREAM_TOPIC = "SparkStream"
LAG_GROUP = "lag-cg"
FAST_GROUP = "fast-cg"
SLOW_GROUP = "slow-cg"
SLOW_LISTENER_SECONDS = 0.25
FAST: dict[str, Any] = {
    "rebalance_interval": 1000, "persist_consumer_offset_interval": 200, "poll_name_server_interval": 1000,
    "heartbeat_broker_interval": 1000, "broker_suspend_max_time_millis": 1000,
    "consumer_timeout_millis_when_suspend": 5000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
}


@dataclass
class Workload:
    namesrv: str
    data_sends: list[tuple[SendResult, bytes, str, str, str]] = field(default_factory=list)
    """(result, body, keys, tags, the 'seq' property) of every SparkData message."""
    traced_ids: list[str] = field(default_factory=list)
    retried_id: str = ""
    orphan_id: str = ""
    started_ms: int = 0
    ended_ms: int = 0


async def _until(predicate: Any, what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if await predicate() if asyncio.iscoroutinefunction(predicate) else predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _consumer(namesrv: str, group: str, topic: str, listener: Any, **extra: Any) -> PushConsumer:
    consumer = PushConsumer(group, namesrv_addr=namesrv, **{**FAST, **extra})
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    return consumer


async def _data_and_lag(w: Workload, producer: Producer) -> None:
    async def send(i: int) -> None:
        body, keys, tags = f"data-{i}".encode(), f"key-{i}", f"Tag{i % 2}"
        msg = Message(DATA_TOPIC, body, properties={"seq": str(i)}, tags=tags, keys=keys)
        w.data_sends.append((await producer.send(msg), body, keys, tags, str(i)))

    for i in range(40):
        await send(i)
    seen: set[bytes] = set()

    def collect(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        seen.update(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    async with _consumer(w.namesrv, LAG_GROUP, DATA_TOPIC, collect):
        await _until(lambda: len(seen) >= 40, "lag-cg to consume 40 messages")
        await asyncio.sleep(0.5)  # let the last offsets be committed by the periodic persist
    for i in range(40, 52):
        await send(i)


async def _traces(w: Workload) -> None:
    fast_done: set[str] = set()
    slow_done: set[str] = set()
    refused: set[str] = set()

    def fast(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        for m in msgs:
            if m.body == b"retry-me" and m.msg_id not in refused:
                refused.add(m.msg_id)
                return ConsumeStatus.RECONSUME_LATER
        fast_done.update(m.msg_id for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    async def slow(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        await asyncio.sleep(SLOW_LISTENER_SECONDS)
        slow_done.update(m.msg_id for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    async with Producer("traced-pg", namesrv_addr=w.namesrv, enable_msg_trace=True) as producer:
        fast_consumer = _consumer(w.namesrv, FAST_GROUP, TRACED_TOPIC, fast, enable_msg_trace=True)
        slow_consumer = _consumer(w.namesrv, SLOW_GROUP, TRACED_TOPIC, slow, enable_msg_trace=True)
        async with fast_consumer:
            async with slow_consumer:
                for i in range(8):
                    w.traced_ids.append((await producer.send(Message(TRACED_TOPIC, f"traced-{i}".encode()))).msg_id)
                w.retried_id = (await producer.send(Message(TRACED_TOPIC, b"retry-me"))).msg_id
                w.traced_ids.append(w.retried_id)
                wanted = set(w.traced_ids)
                await _until(lambda: wanted <= slow_done and wanted <= fast_done, "both traced groups")
            w.orphan_id = (await producer.send(Message(TRACED_TOPIC, b"orphan"))).msg_id
            await _until(lambda: w.orphan_id in fast_done, "fast-cg to consume the orphan")
    async with AdminClient(w.namesrv) as admin:
        async def orphan_traced() -> bool:
            try:
                return len(await messages.query_trace(admin, w.orphan_id)) >= 3
            except AdminError:
                return False

        await _until(orphan_traced, "the orphan's trace")


async def _workload(w: Workload) -> None:
    async with AdminClient(w.namesrv) as admin:
        for topic, queues in ((DATA_TOPIC, 4), (TRACED_TOPIC, 2), (STREAM_TOPIC, 2)):
            await cluster_ops.create_topic(admin, TopicConfig(topic, queues, queues), cluster="DefaultCluster")
    await asyncio.sleep(1.5)  # registration with the name server (registerNameServerPeriod=1000)
    w.started_ms = time.time_ns() // 1_000_000
    async with Producer("data-pg", namesrv_addr=w.namesrv) as producer:
        await _data_and_lag(w, producer)
    await _traces(w)
    w.ended_ms = time.time_ns() // 1_000_000


def run_workload(namesrv: str) -> Workload:
    w = Workload(namesrv)
    asyncio.run(_workload(w))
    return w

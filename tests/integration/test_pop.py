"""POP consumption against real `rocketq namesrv` + `rocketq broker` processes: pop/ack, invisible
time expiry through the revive log and the retry topic, change invisible time, the DLQ, orderly
pops, long polling, a kill -9 with un-acked messages, and a pull group beside a POP group."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from rocketq.admin.client import AdminClient
from rocketq.client.messages import Message
from rocketq.client.popclient import PopClient
from rocketq.client.producer import Producer
from rocketq.protocol import popinfo
from rocketq.protocol.poprequests import PoppedMessage, PopStatus

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
        result = await pops.pop(addr, BROKER, group, TOPIC, max_nums=32, **kw)
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


async def test_unacked_message_comes_back_from_the_retry_topic_counted(processes: Any, pops: PopClient) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=FAST_REVIVE)
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

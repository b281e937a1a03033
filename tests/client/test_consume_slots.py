"""ConcurrentConsumeService without a task per batch: the ``consumeThreadMax`` cap and close.

A batch with no delay and no rate limit runs as a plain callback in the loop turn after
``submit``; only an answer that must be awaited holds a slot beyond that turn. These tests pin
what the tasks used to guarantee: no more than ``consume_thread_max`` listener calls under way,
batches waiting for a slot in the order they came, ``close(grace)`` letting submitted batches
run and ``close()`` without grace dropping those not started (uncommitted, so redelivered).
"""

from __future__ import annotations

import asyncio
from typing import Any

from rocketq.client import consuming
from rocketq.client.consuming import ConcurrentConsumeService, ConsumeContext, ConsumeStatus
from rocketq.client.offsetstores import RemoteBrokerOffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import PushConsumerSettings, configure
from rocketq.protocol import storedrecords
from rocketq.protocol.messagetypes import MessageExt

MQ = MessageQueue("T", "broker-a", 0)


def messages(count: int) -> list[MessageExt]:
    return [storedrecords.decode_stored_record(storedrecords.encode_stored_record(
        topic="T", queue_id=0, body=b"b%d" % o, queue_offset=o)) for o in range(count)]


def service_for(listener: Any, threads: int) -> tuple[ConcurrentConsumeService, RemoteBrokerOffsetStore]:
    settings = configure(PushConsumerSettings, {"consume_message_batch_max_size": 1, "consume_thread_max": threads})
    offsets = RemoteBrokerOffsetStore(None, "G")  # type: ignore[arg-type]  # only its memory table is used
    return ConcurrentConsumeService("G", settings, listener, None, offsets), offsets  # type: ignore[arg-type]


async def test_async_answers_hold_at_most_consume_thread_max_slots_in_order() -> None:
    release = asyncio.Event()
    running, most, started = 0, 0, []

    async def slow(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        nonlocal running, most
        running += 1
        most = max(most, running)
        started.append(msgs[0].queue_offset)
        await release.wait()
        running -= 1
        return ConsumeStatus.CONSUME_SUCCESS

    service, offsets = service_for(slow, threads=2)
    pq, msgs = ProcessQueue(), messages(6)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    for _ in range(10):
        await asyncio.sleep(0)
    assert running == 2 and started == [0, 1] and service.in_flight == 6
    release.set()
    for _ in range(50):
        await asyncio.sleep(0)
    assert most == 2 and started == [0, 1, 2, 3, 4, 5]
    assert pq.msg_count == 0 and offsets.read_memory(MQ) == 6 and service.in_flight == 0
    await service.close()


async def test_plain_listener_batches_are_consumed_in_the_next_turn_without_tasks() -> None:
    seen: list[int] = []

    def plain(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        seen.append(msgs[0].queue_offset)
        return ConsumeStatus.CONSUME_SUCCESS

    service, offsets = service_for(plain, threads=1)
    pq, msgs = ProcessQueue(), messages(4)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    assert seen == [] and service.in_flight == 4  # not inside ``submit``: in the loop turn after it
    await asyncio.sleep(0)
    assert seen == [0, 1, 2, 3] and service.in_flight == 0 and offsets.read_memory(MQ) == 4


async def test_close_with_grace_runs_what_was_submitted_and_without_drops_it() -> None:
    calls: list[int] = []

    def plain(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        calls.append(len(msgs))
        return ConsumeStatus.CONSUME_SUCCESS

    service, offsets = service_for(plain, threads=4)
    pq, msgs = ProcessQueue(), messages(3)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await service.close(grace=5.0)
    assert calls == [1, 1, 1] and offsets.read_memory(MQ) == 3

    service, offsets = service_for(plain, threads=4)
    calls.clear()
    pq, msgs = ProcessQueue(), messages(3)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await service.close()
    await asyncio.sleep(0)
    assert calls == [] and pq.msg_count == 3 and offsets.read_memory(MQ) is None


async def test_a_cancelled_waiter_passes_its_slot_on() -> None:
    slots = consuming._Slots(1)
    assert slots.try_take() and not slots.try_take()
    first = asyncio.ensure_future(slots.take())
    second = asyncio.ensure_future(slots.take())
    await asyncio.sleep(0)
    slots.give()  # handed to ``first`` ...
    first.cancel()  # ... which is cancelled before it runs: the slot goes to ``second``
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.sleep(0)
    assert second.done() and slots.free == 0
    slots.give()
    assert slots.free == 1 and slots.try_take()

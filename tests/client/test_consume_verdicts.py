"""ConcurrentConsumeService: what each kind of listener answer does to a batch.

The service calls a plain listener inline and only awaits what is not already a
``ConsumeStatus``; these tests pin the outcome of every kind of answer (plain or async, a
status, an exception, something else, a partial ``ack_index``). BROADCASTING keeps the broker
out of it: an unacknowledged message is dropped with a warning naming it, and the batch's
offsets are committed either way.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from rocketq.client.consuming import ConcurrentConsumeService, ConsumeContext, ConsumeStatus
from rocketq.client.offsetstores import RemoteBrokerOffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import MessageModel, PushConsumerSettings, configure
from rocketq.protocol import messageproperties, storedrecords
from rocketq.protocol.messagetypes import MessageExt

MQ = MessageQueue("T", "broker-a", 0)
DROPPED = "BROADCASTING: consume of"


def batch(count: int) -> list[MessageExt]:
    return [storedrecords.decode_stored_record(storedrecords.encode_stored_record(
        topic="T", queue_id=0, body=b"b%d" % o, queue_offset=o)) for o in range(count)]


def plain_success(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    return ConsumeStatus.CONSUME_SUCCESS


def plain_later(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    return ConsumeStatus.RECONSUME_LATER


def plain_raises(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    raise RuntimeError("listener bug")


def plain_none(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    return None


def plain_text(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    return "CONSUME_SUCCESS"


async def async_success(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    await asyncio.sleep(0)
    return ConsumeStatus.CONSUME_SUCCESS


async def async_raises(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    await asyncio.sleep(0)
    raise RuntimeError("async listener bug")


async def async_none(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    return None


def plain_acks_first_two(msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
    ctx.ack_index = 1
    return ConsumeStatus.CONSUME_SUCCESS


@pytest.mark.parametrize(("listener", "dropped"), [
    (plain_success, 0), (async_success, 0), (plain_later, 4), (plain_raises, 4), (plain_none, 4),
    (plain_text, 4), (async_raises, 4), (async_none, 4), (plain_acks_first_two, 2),
])
async def test_each_answer_acknowledges_what_it_should(listener: Any, dropped: int,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    settings = configure(PushConsumerSettings, {"consume_message_batch_max_size": 8,
                                                "message_model": MessageModel.BROADCASTING})
    offsets = RemoteBrokerOffsetStore(None, "G")  # type: ignore[arg-type]  # only its memory table is used
    service = ConcurrentConsumeService("G", settings, listener, None, offsets)  # type: ignore[arg-type]
    pq, msgs = ProcessQueue(), batch(4)
    pq.put(msgs)
    with caplog.at_level(logging.WARNING, logger="rocketq.client.consuming"):
        service.submit(msgs, pq, MQ)
        await service.close(grace=5.0)
    assert sum(DROPPED in r.getMessage() for r in caplog.records) == dropped
    assert pq.msg_count == 0 and offsets.read_memory(MQ) == 4
    assert all(messageproperties.CONSUME_START_TIME in m.properties for m in msgs)


async def test_a_dropped_queue_commits_nothing() -> None:
    settings = configure(PushConsumerSettings, {"consume_message_batch_max_size": 8})
    offsets = RemoteBrokerOffsetStore(None, "G")  # type: ignore[arg-type]
    pq, msgs = ProcessQueue(), batch(3)

    def drops(batch_: list[MessageExt], ctx: ConsumeContext) -> Any:
        pq.dropped = True  # a rebalance took the queue while the listener ran
        return ConsumeStatus.CONSUME_SUCCESS

    service = ConcurrentConsumeService("G", settings, drops, None, offsets)  # type: ignore[arg-type]
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await service.close(grace=5.0)
    assert pq.msg_count == 3 and offsets.read_memory(MQ) is None

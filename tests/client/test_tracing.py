"""The trace dispatcher without a cluster: batching, overflow, and nothing lost on close."""

from __future__ import annotations

import asyncio
from typing import Any

from rocketq.client import tracing
from rocketq.protocol import traces
from rocketq.protocol.traces import TraceRecord, TraceType


class SlowProducer:
    """Stands in for the dispatcher's producer: each send takes a while, as over a network."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.sent: list[Any] = []
        self.started = asyncio.Event()

    async def send(self, msg: Any) -> None:
        self.started.set()
        await asyncio.sleep(self.delay)
        self.sent.append(msg)

    async def close(self) -> None:
        return None


def shipped_ids(producer: SlowProducer) -> list[str]:
    return [r.msg_id for m in producer.sent for r in traces.decode(m.body)]


async def test_close_during_a_send_loses_nothing() -> None:
    producer = SlowProducer(0.3)
    dispatcher = tracing.TraceDispatcher("127.0.0.1:1")
    await dispatcher.start(producer)  # type: ignore[arg-type]
    dispatcher.submit([TraceRecord(type=TraceType.PUB, msg_id="first")])
    await producer.started.wait()  # the first batch is on its way
    dispatcher.submit([TraceRecord(type=TraceType.PUB, msg_id="second")])
    await dispatcher.close()
    assert sorted(shipped_ids(producer)) == ["first", "second"]
    assert dispatcher.shipped == 2


async def test_records_are_batched_and_keyed_by_msg_id() -> None:
    producer = SlowProducer(0)
    dispatcher = tracing.TraceDispatcher("127.0.0.1:1", "MyTraces")
    await dispatcher.start(producer)  # type: ignore[arg-type]
    dispatcher.submit([TraceRecord(type=TraceType.PUB, msg_id=f"m{i}", keys="k" if i == 0 else "")
                       for i in range(tracing.MAX_BATCH_RECORDS + 5)])
    await dispatcher.close()
    assert [len(traces.decode(m.body)) for m in producer.sent] == [tracing.MAX_BATCH_RECORDS, 5]
    assert producer.sent[0].topic == "MyTraces"
    assert producer.sent[0].keys[:3] == ["m0", "k", "m1"]


async def test_a_full_queue_drops_and_counts() -> None:
    dispatcher = tracing.TraceDispatcher("127.0.0.1:1", max_pending=2)  # never started: nothing drains
    dispatcher.submit([TraceRecord(type=TraceType.PUB, msg_id=str(i)) for i in range(5)])
    assert dispatcher.dropped == 3
    await dispatcher.close()

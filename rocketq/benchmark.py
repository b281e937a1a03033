"""Benchmarks in the spirit of RocketMQ's ``Producer``/``Consumer`` benchmark tools.

A benchmark message carries its own send time (``time.time_ns()``, 8 bytes) and a sequence
number (8 bytes) at the start of its body, padded to the requested size. That lets the consumer
side measure end-to-end latency (send call -> listener) and count duplicates and gaps without
any other bookkeeping. Both sides print one line per second while running and return a summary.
Numbers belong in docs/benchmarks.md, never in test assertions.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.protocol.message import Message, MessageExt

STAMP: Final = struct.Struct(">qq")
MIN_SIZE: Final = STAMP.size
Report = Callable[[str], None]


class SendMode(enum.Enum):
    SYNC = "sync"
    ASYNC = "async"
    ONEWAY = "oneway"
    BATCH = "batch"


@dataclass
class Latencies:
    """Latency samples in milliseconds, with RocketMQ-benchmark-style summaries."""

    samples: list[float] = field(default_factory=list)

    def add(self, ms: float) -> None:
        self.samples.append(ms)

    def percentile(self, p: float) -> float:
        if not self.samples:
            return 0.0
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    def summary(self) -> str:
        if not self.samples:
            return "no samples"
        avg = sum(self.samples) / len(self.samples)
        return (f"avg {avg:.2f} ms, p50 {self.percentile(50):.2f} ms, p99 {self.percentile(99):.2f} ms, "
                f"max {max(self.samples):.2f} ms")


def make_body(seq: int, size: int) -> bytes:
    stamp = STAMP.pack(time.time_ns(), seq)
    return stamp + b"x" * max(0, size - len(stamp))


def read_stamp(body: bytes) -> tuple[int, int]:
    """(send time in ns, sequence number) of a benchmark body."""
    sent_ns, seq = STAMP.unpack_from(body, 0)
    return sent_ns, seq


@dataclass
class ProducerResult:
    sent: int
    failed: int
    elapsed: float
    latency: Latencies

    @property
    def tps(self) -> float:
        return self.sent / self.elapsed if self.elapsed > 0 else 0.0


class _Window:
    """Counts for the once-a-second progress line."""

    def __init__(self) -> None:
        self.count = 0
        self.failed = 0
        self.rt_sum = 0.0
        self.rt_max = 0.0

    def take(self) -> tuple[int, int, float, float]:
        out = (self.count, self.failed, self.rt_sum, self.rt_max)
        self.count = self.failed = 0
        self.rt_sum = self.rt_max = 0.0
        return out


async def _every_second(action: Callable[[], None]) -> None:
    while True:
        await asyncio.sleep(1)
        action()


class ProducerBench:
    def __init__(self, namesrv: str, topic: str, *, size: int = 1024, concurrency: int = 16,
                 mode: SendMode = SendMode.SYNC, batch_size: int = 32, total: int | None = None,
                 duration: float | None = None, report: Report = print, group: str = "benchmark_producer",
                 first_seq: int = 0) -> None:
        if total is None and duration is None:
            raise ValueError("give a message count or a duration")
        self.namesrv, self.topic, self.size, self.concurrency = namesrv, topic, max(size, MIN_SIZE), concurrency
        self.mode, self.batch_size, self.total, self.duration = mode, batch_size, total, duration
        self.report, self.group = report, group
        self._seq = itertools.count(first_seq)
        self._end = None if total is None else first_seq + total
        self._result = ProducerResult(0, 0, 0.0, Latencies())
        self._window = _Window()

    def _claim(self, n: int) -> list[int]:
        """Up to n sequence numbers, fewer when the total is nearly reached."""
        seqs = []
        for _ in range(n):
            seq = next(self._seq)
            if self._end is not None and seq >= self._end:
                break
            seqs.append(seq)
        return seqs

    def _record(self, n: int, started: float, ok: bool) -> None:
        rt = (time.perf_counter() - started) * 1000
        w = self._window
        if ok:
            self._result.sent += n
            self._result.latency.add(rt)
            w.count += n
        else:
            self._result.failed += n
            w.failed += n
        w.rt_sum += rt
        w.rt_max = max(w.rt_max, rt)

    async def _worker(self, producer: Producer, deadline: float) -> None:
        per_call = self.batch_size if self.mode is SendMode.BATCH else 1
        while time.monotonic() < deadline:
            seqs = self._claim(per_call)
            if not seqs:
                return
            msgs = [Message(self.topic, make_body(s, self.size)) for s in seqs]
            started = time.perf_counter()
            try:
                if self.mode is SendMode.BATCH:
                    await producer.send_batch(msgs)
                elif self.mode is SendMode.ONEWAY:
                    await producer.send_oneway(msgs[0])
                elif self.mode is SendMode.ASYNC:
                    await producer.send_async(msgs[0])
                else:
                    await producer.send(msgs[0])
            except Exception:  # a failed send is a data point, not the end of the benchmark
                self._record(len(msgs), started, ok=False)
            else:
                self._record(len(msgs), started, ok=True)

    def _tick(self) -> None:
        count, failed, rt_sum, rt_max = self._window.take()
        calls = count // (self.batch_size if self.mode is SendMode.BATCH else 1) or 1
        self.report(f"Send TPS: {count} Max RT(ms): {rt_max:.2f} Average RT(ms): {rt_sum / calls:.3f} "
                    f"Send Failed: {failed}")

    async def run(self) -> ProducerResult:
        async with Producer(self.group, namesrv_addr=self.namesrv) as producer:
            await producer.send(Message(self.topic, make_body(-1, self.size)))  # route warm-up
            deadline = time.monotonic() + (self.duration if self.duration is not None else 10**9)
            ticker = asyncio.ensure_future(_every_second(self._tick))
            started = time.perf_counter()
            try:
                await asyncio.gather(*(self._worker(producer, deadline) for _ in range(self.concurrency)))
            finally:
                ticker.cancel()
            self._result.elapsed = time.perf_counter() - started
        return self._result


@dataclass
class ConsumerResult:
    received: int
    duplicates: int
    elapsed: float
    latency: Latencies
    sequences: set[int]

    @property
    def tps(self) -> float:
        return self.received / self.elapsed if self.elapsed > 0 else 0.0


class ConsumerBench:
    """A PushConsumer that counts and times what it receives until it has ``expected`` messages."""

    def __init__(self, namesrv: str, topic: str, group: str, *, expected: int | None = None,
                 report: Report = print, consume_from_first: bool = True) -> None:
        self.namesrv, self.topic, self.group, self.expected, self.report = namesrv, topic, group, expected, report
        self._from_first = consume_from_first
        self._result = ConsumerResult(0, 0, 0.0, Latencies(), set())
        self._window = _Window()
        self._done = asyncio.Event()
        self._first: float | None = None
        self._last = 0.0

    def _listener(self, msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        now_ns = time.time_ns()
        now = time.perf_counter()
        if self._first is None:
            self._first = now
        self._last = now
        for m in msgs:
            if len(m.body) < MIN_SIZE:
                continue
            sent_ns, seq = read_stamp(m.body)
            if seq < 0:
                continue  # the producer's warm-up message
            if seq in self._result.sequences:
                self._result.duplicates += 1
                continue
            self._result.sequences.add(seq)
            self._result.received += 1
            latency = (now_ns - sent_ns) / 1e6
            self._result.latency.add(latency)
            self._window.count += 1
            self._window.rt_sum += latency
            self._window.rt_max = max(self._window.rt_max, latency)
        if self.expected is not None and self._result.received >= self.expected:
            self._done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    def _tick(self) -> None:
        count, _failed, rt_sum, rt_max = self._window.take()
        self.report(f"Consume TPS: {count} Average(B2C) RT(ms): {rt_sum / (count or 1):.3f} "
                    f"Max(B2C) RT(ms): {rt_max:.2f}")

    async def start(self) -> PushConsumer:
        from rocketq.client.settings import ConsumeFromWhere

        where = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET if self._from_first else \
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        consumer = PushConsumer(self.group, namesrv_addr=self.namesrv, consume_from_where=where,
                                consume_message_batch_max_size=32, consume_thread_max=64)
        consumer.subscribe(self.topic, "*")
        consumer.register_listener(self._listener)
        await consumer.start()
        self._ticker = asyncio.ensure_future(_every_second(self._tick))
        return consumer

    async def wait(self, consumer: PushConsumer, timeout: float | None) -> ConsumerResult:
        try:
            await asyncio.wait_for(self._done.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            self._ticker.cancel()
            await consumer.close()
        self._result.elapsed = (self._last - self._first) if self._first is not None else 0.0
        return self._result

"""Benchmarks in the spirit of RocketMQ's ``Producer``/``Consumer`` benchmark tools.

A benchmark message carries its own send time (``time.time_ns()``, 8 bytes) and a sequence
number (8 bytes) at the start of its body, padded to the requested size. That lets the consumer
side measure end-to-end latency (send call -> listener) and count duplicates and gaps without
any other bookkeeping. Both sides print one line per second while running and return a summary.
Numbers belong in docs/benchmarks.md, never in test assertions.

A producer can be held to a rate (``rate`` messages per second, for latency at a given load),
and either side can be split over several processes (``run_producers``/``run_consumers``) so
that one Python client process is not what limits the measurement; the processes' results
are summed (latency samples merged). Every run uses uvloop when it is installed and the
servers' garbage-collector thresholds (``rocketq.eventloop``).
"""

from __future__ import annotations

import asyncio
import enum
import functools
import itertools
import multiprocessing
import struct
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from multiprocessing.sharedctypes import Synchronized
from typing import Any, Final, TypeVar

from rocketq import eventloop
from rocketq.client.consuming import ConsumeContext, ConsumeStatus, Listener
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.protocol.messagetypes import Message, MessageExt

STAMP: Final = struct.Struct(">qq")
MIN_SIZE: Final = STAMP.size
MAX_PROCESSES: Final = 64
Report = Callable[[str], None]
T = TypeVar("T")


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` as the servers run theirs (``rocketq.eventloop``: uvloop unless
    ``ROCKETQ_UVLOOP=0``, the servers' collector thresholds)."""
    return eventloop.run(main)


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
    return STAMP.pack(time.time_ns(), seq) + _padding(max(0, size - MIN_SIZE))


_PADDING: dict[int, bytes] = {}


def _padding(size: int) -> bytes:
    pad = _PADDING.get(size)
    if pad is None:
        pad = _PADDING[size] = b"x" * size
    return pad


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
                 first_seq: int = 0, rate: float | None = None) -> None:
        if total is None and duration is None:
            raise ValueError("give a message count or a duration")
        if rate is not None and rate <= 0:
            raise ValueError("the rate must be positive")
        self.namesrv, self.topic, self.size, self.concurrency = namesrv, topic, max(size, MIN_SIZE), concurrency
        self.mode, self.batch_size, self.total, self.duration = mode, batch_size, total, duration
        self.report, self.group, self.rate = report, group, rate
        self._seq = itertools.count(first_seq)
        self._end = None if total is None else first_seq + total
        self._result = ProducerResult(0, 0, 0.0, Latencies())
        self._window = _Window()
        self._paced = 0
        """Messages the rate limit has let through so far."""
        self._pace_start = 0.0

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

    async def _pace(self, n: int) -> None:
        """Wait until ``n`` more messages fit the rate (an even schedule from the start)."""
        if self.rate is None:
            return
        due = self._pace_start + self._paced / self.rate
        self._paced += n
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)

    async def _pipelined(self, producer: Producer, deadline: float) -> None:
        """``send_async`` with up to ``concurrency`` sends in flight from one loop: each answer
        is counted by its callback, and a new send starts as soon as one ends."""
        in_flight = 0
        room: asyncio.Future[None] | None = None
        loop = asyncio.get_running_loop()

        def done(started: float, result: object, error: BaseException | None) -> None:
            nonlocal in_flight, room
            in_flight -= 1
            self._record(1, started, ok=error is None)
            if room is not None and not room.done():
                room.set_result(None)

        while time.monotonic() < deadline:
            seqs = self._claim(1)
            if not seqs:
                break
            await self._pace(1)
            while in_flight >= self.concurrency:
                room = loop.create_future()
                await room
            in_flight += 1
            try:
                producer.send_async(Message(self.topic, make_body(seqs[0], self.size)),
                                    functools.partial(done, time.perf_counter()))
            except Exception:  # refused before it was sent: a data point like any failure
                done(time.perf_counter(), None, RuntimeError("send refused"))
        while in_flight:
            room = loop.create_future()
            await room

    async def _worker(self, producer: Producer, deadline: float) -> None:
        per_call = self.batch_size if self.mode is SendMode.BATCH else 1
        while time.monotonic() < deadline:
            seqs = self._claim(per_call)
            if not seqs:
                return
            await self._pace(len(seqs))
            msgs = [Message(self.topic, make_body(s, self.size)) for s in seqs]
            started = time.perf_counter()
            try:
                if self.mode is SendMode.BATCH:
                    await producer.send_batch(msgs)
                elif self.mode is SendMode.ONEWAY:
                    await producer.send_oneway(msgs[0])
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
            self._pace_start = time.monotonic()
            started = time.perf_counter()
            try:
                if self.mode is SendMode.ASYNC:
                    await self._pipelined(producer, deadline)
                else:
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
                 report: Report = print, consume_from_first: bool = True,
                 shared_count: Synchronized[int] | None = None) -> None:
        """``shared_count``: a counter shared by the processes of ``run_consumers``; each adds
        what it receives, and ``expected`` then counts for all of them together."""
        self.namesrv, self.topic, self.group, self.expected, self.report = namesrv, topic, group, expected, report
        self._from_first = consume_from_first
        self._shared = shared_count
        self._result = ConsumerResult(0, 0, 0.0, Latencies(), set())
        self._window = _Window()
        self._done = asyncio.Event()
        self._first: float | None = None
        self._last = 0.0
        self._counted = 0
        """Of ``received``, what was already added to ``shared_count``."""

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
        received = self._result.received
        if self._shared is not None:
            with self._shared.get_lock():
                self._shared.value += received - self._counted
                received = self._shared.value
            self._counted = self._result.received
        if self.expected is not None and received >= self.expected:
            self._done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    def _tick(self) -> None:
        count, _failed, rt_sum, rt_max = self._window.take()
        self.report(f"Consume TPS: {count} Average(B2C) RT(ms): {rt_sum / (count or 1):.3f} "
                    f"Max(B2C) RT(ms): {rt_max:.2f}")

    async def start(self) -> PushConsumer:
        consumer = await start_push_consumer(self.namesrv, self.topic, self.group, self._listener,
                                             from_first=self._from_first)
        self._ticker = asyncio.ensure_future(_every_second(self._tick))
        return consumer

    async def wait(self, consumer: PushConsumer, timeout: float | None) -> ConsumerResult:
        try:
            await asyncio.wait_for(self._wait_done(), timeout)
        except TimeoutError:
            pass
        finally:
            self._ticker.cancel()
            await consumer.close()
        self._result.elapsed = (self._last - self._first) if self._first is not None else 0.0
        return self._result

    async def _wait_done(self) -> None:
        if self._shared is None:
            await self._done.wait()
            return
        # the other processes' messages count too, and they do not wake this loop
        while not self._done.is_set():
            if self.expected is not None and self._shared.value >= self.expected:
                return
            await asyncio.sleep(0.05)


async def start_push_consumer(namesrv: str, topic: str, group: str, listener: Listener, *,
                              from_first: bool) -> PushConsumer:
    """The benchmark's consumer, started: ``topic``'s messages in batches of up to 32 to ``listener``.

    bench/peers (the comparison with other brokers) consumes through the same settings.
    """
    from rocketq.client.settings import ConsumeFromWhere

    where = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET if from_first else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    consumer = PushConsumer(group, namesrv_addr=namesrv, consume_from_where=where,
                            consume_message_batch_max_size=32, consume_thread_max=64)
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    await consumer.start()
    return consumer


# --- several processes ------------------------------------------------------------------------


def _prefixed(index: int) -> Report:
    return lambda line: print(f"[p{index}] {line}", flush=True)


def _producer_process(index: int, options: dict[str, Any]) -> ProducerResult:
    return run_loop(ProducerBench(**options, report=_prefixed(index)).run())


def run_producers(processes: int, report: Report, **options: Any) -> ProducerResult:
    """Run ``ProducerBench(**options)`` split over ``processes`` processes; the results summed.

    Each process sends its share of ``total`` (with its own range of sequence numbers) at its
    share of ``rate``; ``elapsed`` is the slowest process's.
    """
    if not 1 <= processes <= MAX_PROCESSES:
        raise ValueError(f"processes must be 1..{MAX_PROCESSES}")
    if processes == 1:
        return run_loop(ProducerBench(**options, report=report).run())
    total: int | None = options.get("total")
    first = options.get("first_seq", 0)
    jobs = []
    for i in range(processes):
        share = dict(options)
        if total is not None:
            share["total"] = total // processes + (1 if i < total % processes else 0)
            share["first_seq"] = first + i * (total // processes) + min(i, total % processes)
        if options.get("rate") is not None:
            share["rate"] = options["rate"] / processes
        jobs.append((i, share))
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        results = pool.starmap(_producer_process, jobs)
    merged = ProducerResult(0, 0, 0.0, Latencies())
    for r in results:
        merged.sent += r.sent
        merged.failed += r.failed
        merged.elapsed = max(merged.elapsed, r.elapsed)
        merged.latency.samples.extend(r.latency.samples)
    return merged


def _consumer_process(index: int, options: dict[str, Any], duration: float, shared: Synchronized[int],
                      results: Any) -> None:
    async def run() -> ConsumerResult:
        bench = ConsumerBench(**options, report=_prefixed(index), shared_count=shared)
        consumer = await bench.start()
        return await bench.wait(consumer, duration)

    results.put(run_loop(run()))


def run_consumers(processes: int, duration: float, report: Report, **options: Any) -> ConsumerResult:
    """Run ``ConsumerBench(**options)`` in ``processes`` processes of one consumer group.

    The group's queues are balanced over the processes; they stop together once their shared
    count reaches ``expected`` (or after ``duration``). Duplicates are counted across all of
    them; ``elapsed`` is the longest span (first to last message) of any one process.
    """
    if not 1 <= processes <= MAX_PROCESSES:
        raise ValueError(f"processes must be 1..{MAX_PROCESSES}")
    if processes == 1:
        async def single() -> ConsumerResult:
            bench = ConsumerBench(**options, report=report)
            return await bench.wait(await bench.start(), duration)
        return run_loop(single())
    ctx = multiprocessing.get_context("spawn")
    shared = ctx.Value("q", 0)
    results = ctx.Queue()
    workers = [ctx.Process(target=_consumer_process, args=(i, options, duration, shared, results))
               for i in range(processes)]
    for w in workers:
        w.start()
    try:
        parts = [results.get() for _ in workers]
    finally:
        for w in workers:
            w.join()
    return _merge_consumers(parts)


def _merge_consumers(parts: list[ConsumerResult]) -> ConsumerResult:
    merged = ConsumerResult(0, 0, 0.0, Latencies(), set())
    for part in parts:
        merged.duplicates += part.duplicates + len(merged.sequences & part.sequences)
        merged.sequences |= part.sequences
        merged.latency.samples.extend(part.latency.samples)
        merged.elapsed = max(merged.elapsed, part.elapsed)
    merged.received = len(merged.sequences)
    return merged

"""The timed loops, the same for every system: each drives a ``StreamClient`` and measures.

A measurement covers only its timed part: wall time, this process's CPU time
(``resource.getrusage``: the client's cost) and the servers' CPU time (``/proc``: the
servers' cost), so CPU per message can be compared when the shared machine makes throughput
noisy. Every body is ``MESSAGE_SIZE`` bytes and starts with its creation time and a sequence
number (``rocketq.bench.loadgen.make_body``), from which a consumer measures end-to-end
latency and counts duplicates. Sequence -1 marks the warm-up message each producer sends
before timing starts (it opens the connection and, for rocketq, fetches the route);
consumers skip it.

The shapes of the produce loops:

- ``sync_sends``: one send at a time, each waiting for its acknowledgement;
- ``pipelined``: ``PIPELINE_LANES`` coroutines, each putting ``window / lanes`` single
  messages in flight with ``send_many`` and waiting for their acks, so at most ``window``
  messages are un-acknowledged at any moment and the pipe never runs dry while one lane waits;
- ``batched``: ``in_flight`` coroutines, each sending batches of ``batch`` with ``send_batch``;
- ``paced``: sends at an offered rate on an even schedule (a tick every ``TICK_S``, what is
  due then goes out as one ``send_many``), for end-to-end latency at a given load.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from peers import procstats
from peers.clients.api import StreamClient
from rocketq.bench.loadgen import Latencies, make_body, read_stamp

MESSAGE_SIZE: Final = 1024
WARM_UP_SEQ: Final = -1
PIPELINE_LANES: Final = 4
TICK_S: Final = 0.001
MAX_PACED_BACKLOG: Final = 10_000
"""Paced messages in flight at most; past it the producer waits and so falls behind its rate."""
KEPT_UP_RATE_SHARE: Final = 0.95
"""A paced run kept up if the producer held this share of the offered rate ..."""
KEPT_UP_LAST_MS: Final = 1000.0
"""... and the consumer got every message, the last one within this many ms of its sending."""


@dataclass
class Measurement:
    messages: int = 0
    seconds: float = 0.0
    client_cpu_s: float = 0.0
    server_cpu_s: float = 0.0
    failures: int = 0
    latency_ms: dict[str, float] = field(default_factory=dict)
    """p50, p99 and max: of each send's round trip (sync), or end to end (consumers)."""
    offered_rate: float = 0.0
    kept_up: bool | None = None

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


def _latency_summary(latencies: Latencies) -> dict[str, float]:
    if not latencies.samples:
        return {}
    return {"p50": latencies.percentile(50), "p99": latencies.percentile(99), "max": max(latencies.samples)}


class _Stopwatch:
    """Wall time, own CPU and the servers' CPU between ``start`` and ``stop``."""

    def __init__(self, server_pids: list[int]) -> None:
        self._pids = server_pids
        self._wall = self._cpu = self._server = 0.0

    @staticmethod
    def _own_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def start(self) -> None:
        self._wall, self._cpu, self._server = time.perf_counter(), self._own_cpu(), procstats.cpu_seconds(self._pids)

    def stop(self, into: Measurement, *, seconds: float | None = None) -> Measurement:
        into.seconds = time.perf_counter() - self._wall if seconds is None else seconds
        into.client_cpu_s = self._own_cpu() - self._cpu
        into.server_cpu_s = procstats.cpu_seconds(self._pids) - self._server
        return into


def _bodies(first: int, count: int) -> list[bytes]:
    return [make_body(seq, MESSAGE_SIZE) for seq in range(first, first + count)]


class _Claims:
    """Hands out consecutive ranges of sequence numbers until ``total`` are taken."""

    def __init__(self, total: int) -> None:
        self._next, self._total = 0, total

    def take(self, n: int) -> tuple[int, int]:
        first = self._next
        n = max(0, min(n, self._total - first))
        self._next += n
        return first, n


async def warm_up(client: StreamClient) -> None:
    await client.send(make_body(WARM_UP_SEQ, MESSAGE_SIZE))


async def sync_sends(client: StreamClient, count: int, server_pids: list[int]) -> Measurement:
    result, latencies = Measurement(), Latencies()
    await warm_up(client)
    watch = _Stopwatch(server_pids)
    watch.start()
    for seq in range(count):
        body = make_body(seq, MESSAGE_SIZE)
        started = time.perf_counter()
        try:
            await client.send(body)
        except Exception:  # a refused send is a data point, not the end of the run
            result.failures += 1
            continue
        latencies.add((time.perf_counter() - started) * 1000)
        result.messages += 1
    watch.stop(result)
    result.latency_ms = _latency_summary(latencies)
    return result


async def _lanes(lanes: int, per_call: int, count: int, call: Callable[[list[bytes]], Awaitable[int]]) -> int:
    """``lanes`` coroutines calling ``call`` with ``per_call`` fresh bodies until ``count`` are
    sent; the number that failed."""
    claims, failures = _Claims(count), 0

    async def lane() -> None:
        nonlocal failures
        while True:
            first, n = claims.take(per_call)
            if n == 0:
                return
            try:
                failures += await call(_bodies(first, n))
            except Exception:  # a refused batch counts as failed messages
                failures += n

    await asyncio.gather(*(lane() for _ in range(lanes)))
    return failures


async def pipelined(client: StreamClient, count: int, window: int, server_pids: list[int]) -> Measurement:
    return await _timed_lanes(client, count, PIPELINE_LANES, max(1, window // PIPELINE_LANES), client.send_many,
                              server_pids)


async def batched(client: StreamClient, count: int, batch: int, in_flight: int,
                  server_pids: list[int]) -> Measurement:
    async def send_batch(bodies: list[bytes]) -> int:
        await client.send_batch(bodies)
        return 0

    return await _timed_lanes(client, count, in_flight, batch, send_batch, server_pids)


async def _timed_lanes(client: StreamClient, count: int, lanes: int, per_call: int,
                       call: Callable[[list[bytes]], Awaitable[int]], server_pids: list[int]) -> Measurement:
    result = Measurement()
    await warm_up(client)
    watch = _Stopwatch(server_pids)
    watch.start()
    result.failures = await _lanes(lanes, per_call, count, call)
    result.messages = count - result.failures
    return watch.stop(result)


class _Receipts:
    """What a consumer has received: counts, duplicates, end-to-end latencies, first and last time."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.seen: set[int] = set()
        self.duplicates = 0
        self.latencies = Latencies()
        self.first = self.last = 0.0
        self.last_latency_ms = 0.0

    def __call__(self, bodies: list[bytes]) -> bool:
        now_ns, now = time.time_ns(), time.perf_counter()
        if not self.first:
            self.first = now
        self.last = now
        for body in bodies:
            sent_ns, seq = read_stamp(body)
            if seq == WARM_UP_SEQ:
                continue
            if seq in self.seen:
                self.duplicates += 1
                continue
            self.seen.add(seq)
            self.last_latency_ms = (now_ns - sent_ns) / 1e6
            self.latencies.add(self.last_latency_ms)
        return len(self.seen) >= self.expected


async def drain(client: StreamClient, group: str, count: int, server_pids: list[int],
                ready: Callable[[], None] | None = None) -> Measurement:
    """Consume ``count`` messages from the stream's start; the rate is first to last delivery.

    With ``ready`` (an end-to-end run: called once the consumer is set up, so the producer can
    start) the result has the end-to-end latencies and whether the consumer kept up; without
    it the messages were stored earlier and their age says nothing, so neither is reported."""
    receipts, result = _Receipts(count), Measurement()
    watch = _Stopwatch(server_pids)
    watch.start()
    await client.consume(group, receipts, ready or (lambda: None))
    watch.stop(result, seconds=receipts.last - receipts.first)
    result.messages = len(receipts.seen)
    result.failures = receipts.duplicates
    if ready is not None:
        result.latency_ms = _latency_summary(receipts.latencies)
        # what the consumer alone can tell about keeping up; the producer's rate is judged by the caller
        result.kept_up = result.messages >= count and receipts.last_latency_ms <= KEPT_UP_LAST_MS
    return result


async def fill(client: StreamClient, count: int, batch: int, in_flight: int) -> None:
    """Store ``count`` messages with batched sends, untimed (what ``drain`` then reads), and
    write them to disk before it returns: a drain lasts ~100-200 ms, and a server's periodic
    flush of the fill's ~100 MB landing inside that window or not made one repeat in three slow
    (docs/benchmarks.md, "Round 14 (consumer)"). Every system's drain starts the same way."""
    await batched(client, count, batch, in_flight, [])
    await asyncio.to_thread(os.sync)


async def paced(client: StreamClient, count: int, rate: float, server_pids: list[int]) -> Measurement:
    """Offer ``count`` messages at ``rate`` per second; the rate achieved is the one measured."""
    result = Measurement(offered_rate=rate)
    await warm_up(client)
    backlog = 0
    in_flight: set[asyncio.Task[None]] = set()

    async def send(bodies: list[bytes]) -> None:
        nonlocal backlog
        try:
            result.failures += await client.send_many(bodies)
        except Exception:
            result.failures += len(bodies)
        finally:
            backlog -= len(bodies)

    watch = _Stopwatch(server_pids)
    watch.start()
    begin, sent = time.perf_counter(), 0
    while sent < count:
        due = min(count, int((time.perf_counter() - begin) * rate) + 1)
        if due > sent and backlog < MAX_PACED_BACKLOG:
            n = min(due - sent, MAX_PACED_BACKLOG - backlog)
            backlog += n
            task = asyncio.ensure_future(send(_bodies(sent, n)))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            sent += n
        await asyncio.sleep(TICK_S)
    offered_for = time.perf_counter() - begin
    await asyncio.gather(*in_flight)
    watch.stop(result, seconds=offered_for)
    result.messages = count - result.failures
    result.kept_up = result.rate >= KEPT_UP_RATE_SHARE * rate
    return result

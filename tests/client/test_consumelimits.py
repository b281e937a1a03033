"""The consume-TPS limit on a fake clock: the pacing itself, and the consume service holding
listener calls to it."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Any

import pytest

from rocketq.client import consumelimits
from rocketq.client.consumelimits import ConsumeRateLimiter
from rocketq.client.consuming import ConcurrentConsumeService, ConsumeContext, ConsumeStatus
from rocketq.client.errors import ClientStateError
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import PushConsumerSettings
from rocketq.protocol import message
from rocketq.protocol.message import MessageExt

MQ = MessageQueue("T", "broker-a", 0)


class FakeClock:
    """Virtual time: ``sleep`` waits until ``advance`` moves the clock past its deadline."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        await future

    async def run_for(self, seconds: float) -> None:
        """Advance to now + seconds, waking each sleeper at its own deadline, in order."""
        end = self.now + seconds
        await _yield()
        while self._sleepers and self._sleepers[0][0] <= end:
            deadline, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, deadline)
            future.set_result(None)
            await _yield()
        self.now = end


async def _yield() -> None:
    for _ in range(20):  # let woken tasks run to their next wait
        await asyncio.sleep(0)


def most_in_any_second(times: list[float]) -> int:
    return max(sum(1 for t in times if start <= t < start + 1.0) for start in times)


async def test_calls_are_paced_evenly_and_never_exceed_the_rate() -> None:
    clock = FakeClock()
    limiter = ConsumeRateLimiter(4, clock=clock, sleep=clock.sleep)
    passed: list[float] = []

    async def one(n: int) -> None:
        await limiter.acquire(n)
        passed.extend([clock.now] * n)

    tasks = [asyncio.ensure_future(one(1)) for _ in range(10)]
    await clock.run_for(5)
    assert passed == pytest.approx([i * 0.25 for i in range(10)])
    await asyncio.gather(*tasks)
    assert most_in_any_second(passed) == 4


async def test_an_idle_limiter_saves_no_burst_and_a_big_batch_is_paid_off_afterwards() -> None:
    clock = FakeClock()
    limiter = ConsumeRateLimiter(2, clock=clock, sleep=clock.sleep)
    clock.now = 100.0  # idle for a long time: still no credit
    assert limiter.reserve(1) == 0.0
    assert limiter.reserve(1) == pytest.approx(0.5)
    assert limiter.reserve(5) == pytest.approx(1.0)  # a batch above the rate passes whole...
    assert limiter.reserve(1) == pytest.approx(3.5)  # ...and the next call waits until it is paid off


def test_the_setting_is_checked_and_zero_means_no_limit() -> None:
    assert consumelimits.limiter_for(0.0) is None
    assert consumelimits.limiter_for(2.5) is not None
    for bad in (-1, float("inf"), True):
        with pytest.raises(ClientStateError):
            PushConsumerSettings(namesrv_addr="127.0.0.1:9876", consume_tps_limit=bad)


def ext(offset: int) -> MessageExt:
    record = message.encode_stored_record(topic="T", queue_id=0, body=b"m", queue_offset=offset,
                                          properties={message.UNIQ_KEY: f"U{offset}"})
    return message.decode_stored_record(record)


class Offsets:
    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        pass


async def test_the_consume_service_holds_listener_calls_to_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(consumelimits, "limiter_for",
                        lambda rate: ConsumeRateLimiter(rate, clock=clock, sleep=clock.sleep))
    settings = PushConsumerSettings(namesrv_addr="127.0.0.1:9876", consume_tps_limit=5,
                                    consume_message_batch_max_size=2)
    called: list[tuple[float, int]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        called.append((clock.now, len(msgs)))
        return ConsumeStatus.CONSUME_SUCCESS

    instance: Any = None  # success needs no broker: nothing is sent back
    service = ConcurrentConsumeService("cg", settings, listener, instance, Offsets())  # type: ignore[arg-type]
    pq = ProcessQueue()
    msgs = [ext(o) for o in range(10)]
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await clock.run_for(1.0)
    assert [t for t, _ in called] == pytest.approx([0.0, 0.4, 0.8])  # 2 messages cost 0.4 s at 5/s
    assert {n for _, n in called} == {2}
    await clock.run_for(1.0)
    assert [t for t, _ in called] == pytest.approx([0.0, 0.4, 0.8, 1.2, 1.6])
    await service.close()

"""A push consumer's consume-TPS limit: listener calls held so no more than N messages/s pass.

RocketMQ has no such option; its users reach for Sentinel's "rate limiter" flow rule on the
consumer, which paces requests at a uniform interval and queues the rest. ``ConsumeRateLimiter``
does the same for one consumer, counted in *messages*, not calls: a listener call with ``n``
messages takes ``n / N`` seconds of the consumer's allowance.

How (virtual scheduling, the "generic cell rate" idea): the limiter remembers ``next_free``,
the earliest time the next message may pass. A call for ``n`` messages reserves from
``max(now, next_free)`` and moves ``next_free`` on by ``n / N``, then waits until its reserved
start. Reserving and advancing happen with no await in between, so concurrent callers queue in
arrival order and never overlap; an idle consumer builds up no credit, so there is never a
burst above the rate (a call whose batch alone is larger than N still passes, and the next one
waits for it to be paid off).

A caller cancelled while waiting gives nothing back: the consumer then runs a little below the
rate for that stretch, never above it. The clock and the sleep are injectable for tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Final

NO_LIMIT: Final = 0.0
"""``consume_tps_limit`` meaning "do not limit"."""

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class ConsumeRateLimiter:
    """Paces messages to at most ``rate`` per second across every caller."""

    def __init__(self, rate: float, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep) -> None:
        if rate <= 0:
            raise ValueError(f"rate {rate!r}: expected messages per second > 0")
        self.rate = rate
        self._clock = clock
        self._sleep = sleep
        self._next_free = float("-inf")
        """The earliest time the next message may pass (the end of the last reservation)."""

    def reserve(self, messages: int) -> float:
        """Book ``messages`` and answer how many seconds to wait before they may pass."""
        now = self._clock()
        start = max(now, self._next_free)
        self._next_free = start + messages / self.rate
        return start - now

    async def acquire(self, messages: int) -> None:
        """Wait until ``messages`` may be handed to the listener."""
        wait = self.reserve(messages)
        if wait > 0:
            await self._sleep(wait)


def limiter_for(consume_tps_limit: float) -> ConsumeRateLimiter | None:
    """The limiter a consumer setting asks for; None when it is ``NO_LIMIT``."""
    return None if consume_tps_limit == NO_LIMIT else ConsumeRateLimiter(consume_tps_limit)

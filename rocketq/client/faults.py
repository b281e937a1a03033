"""Latency fault tolerance: a producer's memory of which broker groups were slow or failing.

After every send attempt the producer reports the broker and how long the attempt took. A slow
answer or a failure makes the broker *unavailable* for a while, by RocketMQ's table
(``MQFaultStrategy``): a latency of at least ``LATENCY_MAX[i]`` ms earns
``NOT_AVAILABLE_DURATION[i]`` ms of avoidance; a failure counts as 30 s of latency, i.e. ten
minutes of avoidance. Queue selection then skips unavailable brokers while others exist.

This is advice, not a circuit breaker: when every broker is marked, the least bad one is still
used (``pick_one_at_least``), and one success clears a broker's mark.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

LATENCY_MAX: Final = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_DURATION: Final = (0, 0, 30000, 60000, 120000, 180000, 600000)
ISOLATION_LATENCY: Final = 30000
"""A failed attempt is recorded as this many ms of latency (RocketMQ's isolation case)."""


FIRST_PENALIZED_LATENCY: Final = min(limit for limit, duration in zip(LATENCY_MAX, NOT_AVAILABLE_DURATION, strict=True)
                                     if duration > 0)
"""The lowest latency (ms) that makes a broker unavailable for a while: every faster answer
only clears a mark, which ``update`` decides without the table walk."""


def not_available_duration(latency_ms: int) -> int:
    """How long (ms) to avoid a broker that answered in ``latency_ms``."""
    for limit, duration in zip(reversed(LATENCY_MAX), reversed(NOT_AVAILABLE_DURATION), strict=True):
        if latency_ms >= limit:
            return duration
    return 0


@dataclass(frozen=True, slots=True)
class FaultItem:
    broker_name: str
    latency_ms: int
    available_at_ms: int


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class LatencyFaultTolerance:
    __slots__ = ("_clock", "_items", "marks")  # ``marks`` read at its offset by RoundRobin.choose's C twin

    def __init__(self, clock_ms: Callable[[], int] = _monotonic_ms) -> None:
        self._clock = clock_ms
        self._items: dict[str, FaultItem] = {}
        self.marks: Mapping[str, FaultItem] = self._items
        """The marked brokers, for reading only: empty (the common case) means every broker is
        available and a fast success changes nothing, which a producer checks per send
        without a call."""

    def update(self, broker_name: str, latency_ms: int, *, isolation: bool) -> None:
        """Record one attempt's outcome; ``isolation`` marks a failure."""
        if not isolation and latency_ms < FIRST_PENALIZED_LATENCY:
            if self._items:
                self._items.pop(broker_name, None)
            return
        latency = ISOLATION_LATENCY if isolation else max(latency_ms, 0)
        duration = not_available_duration(latency)
        if duration == 0:
            # A fast answer means the broker is fine again: forget any earlier mark.
            self._items.pop(broker_name, None)
            return
        self._items[broker_name] = FaultItem(broker_name, latency, self._clock() + duration)

    def is_available(self, broker_name: str) -> bool:
        item = self._items.get(broker_name)
        return item is None or self._clock() >= item.available_at_ms

    def remove(self, broker_name: str) -> None:
        self._items.pop(broker_name, None)

    def pick_one_at_least(self) -> str | None:
        """The marked broker expected to recover first (lowest latency breaks ties), or None."""
        if not self._items:
            return None
        best = min(self._items.values(), key=lambda item: (item.available_at_ms, item.latency_ms))
        return best.broker_name

    def marked(self) -> dict[str, FaultItem]:
        return dict(self._items)

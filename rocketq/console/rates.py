"""Messages per second from counters: the console's own TPS where a broker does not report one.

A rocketq broker reports how many messages it stored and handed out today
(``msgPutTotalTodayNow``, ``msgGetTotalTodayNow`` in GET_BROKER_RUNTIME_INFO) but no rate.
``RateMeter`` remembers the previous reading of each counter and turns two readings into a
rate; the first reading, a counter that went down (broker restarted, day rolled over) or a
reading older than ``MAX_AGE_S`` gives no rate rather than a wrong one. Apache RocketMQ brokers
report ``putTps``/``getTransferedTps`` themselves (``"10.0 9.5 9.8"``: the last 10 s, 1 min,
10 min); those are used as they are.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Final

MAX_AGE_S: Final = 300.0
MAX_COUNTERS: Final = 4096
"""Counters remembered at once (a broker address and a counter name each)."""


class RateMeter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[str, tuple[float, int]] = {}

    def rate(self, key: str, value: int) -> float | None:
        """Per-second change since the previous reading of ``key``; None when there is none to use."""
        now = self._clock()
        previous = self._last.get(key)
        if previous is None and len(self._last) >= MAX_COUNTERS:
            self._last.pop(next(iter(self._last)))
        self._last[key] = (now, value)
        if previous is None:
            return None
        then, old = previous
        elapsed = now - then
        if elapsed <= 0 or elapsed > MAX_AGE_S or value < old:
            return None
        return (value - old) / elapsed


def reported_tps(runtime: Mapping[str, str], key: str) -> float | None:
    """The first (most recent) figure of an Apache-style ``"a b c"`` TPS value, if there is one."""
    text = runtime.get(key, "").split()
    try:
        return float(text[0]) if text else None
    except ValueError:
        return None


def broker_tps(meter: RateMeter, addr: str, runtime: Mapping[str, str]) -> tuple[float | None, float | None]:
    """(in, out) messages per second of one broker."""
    result = []
    for reported, counter in (("putTps", "msgPutTotalTodayNow"), ("getTransferedTps", "msgGetTotalTodayNow")):
        tps = reported_tps(runtime, reported)
        if tps is None and runtime.get(counter, "").isdigit():
            tps = meter.rate(f"{addr} {counter}", int(runtime[counter]))
        result.append(tps)
    return result[0], result[1]

"""Password guessing, slowed: after ``MAX_FAILURES`` failed logins from one address within
``WINDOW_S`` seconds, that address may not try again until the window has passed.

Each argon2 check already costs tens of milliseconds; this bounds how many guesses one address
gets per window. Addresses remembered are bounded (``MAX_ADDRESSES``, oldest forgotten), so a scan
from many addresses costs bounded memory. Behind a proxy every client shares the proxy's address:
the limit then applies to all of them together, which errs on the safe side.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

MAX_FAILURES: Final = 10
WINDOW_S: Final = 300.0
MAX_ADDRESSES: Final = 4096


class LoginThrottle:
    def __init__(self, *, max_failures: int | None = None, window: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._max_failures = MAX_FAILURES if max_failures is None else max_failures
        self._window, self._clock = window, clock
        self._failures: OrderedDict[str, list[float]] = OrderedDict()

    def _recent(self, address: str) -> list[float]:
        cutoff = self._clock() - self._window
        recent = [t for t in self._failures.get(address, ()) if t > cutoff]
        if recent:
            self._failures[address] = recent
        else:
            self._failures.pop(address, None)
        return recent

    def blocked_for(self, address: str) -> float:
        """Seconds until ``address`` may try again; 0 when it may now."""
        recent = self._recent(address)
        if len(recent) < self._max_failures:
            return 0.0
        return max(0.0, recent[0] + self._window - self._clock())

    def failed(self, address: str) -> None:
        recent = self._recent(address)
        recent.append(self._clock())
        self._failures[address] = recent
        self._failures.move_to_end(address)
        while len(self._failures) > MAX_ADDRESSES:
            self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        self._failures.pop(address, None)

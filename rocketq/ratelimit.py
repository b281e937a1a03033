"""Rate-limited log lines: a hostile or broken peer must not be able to flood the log.

A broker answers every bad frame, refused heartbeat or refused send, and each deserves a line an
operator can act on — but a client that sends the same bad request 10 000 times a second would
turn that into a log flood (disk, CPU, and the one useful line lost among copies). ``LogLimiter``
lets the first line for a key (a peer address, a client id) through, then at most one per
``interval`` seconds per key, and says how many it held back when it next speaks.

The set of keys is bounded (``max_keys``): past it the oldest key is forgotten, so a scan from
many addresses costs bounded memory and at worst lets a few more lines through.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

DEFAULT_INTERVAL: Final = 10.0
"""Seconds between two lines for one key."""
DEFAULT_MAX_KEYS: Final = 4096
"""Keys remembered at once (peer addresses, client ids)."""


class LogLimiter:
    """At most one log line per key per ``interval``; suppressed lines are counted, not lost."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval: float = DEFAULT_INTERVAL,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._max_keys = max_keys
        self._clock = clock
        self._last: OrderedDict[str, tuple[float, int]] = OrderedDict()
        """key -> (when it last logged, lines suppressed since)."""

    def log(self, level: int, key: str, msg: str, *args: object) -> bool:
        """Log ``msg % args`` for ``key`` unless it logged within ``interval``; True if it did."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self._interval:
            self._last[key] = (last[0], last[1] + 1)
            return False
        suppressed = last[1] if last is not None else 0
        self._last[key] = (now, 0)
        self._last.move_to_end(key)
        while len(self._last) > self._max_keys:
            self._last.popitem(last=False)
        if suppressed:
            msg = f"{msg} (%d similar lines suppressed)"
            args = (*args, suppressed)
        self._logger.log(level, msg, *args)
        return True

    def warning(self, key: str, msg: str, *args: object) -> bool:
        return self.log(logging.WARNING, key, msg, *args)

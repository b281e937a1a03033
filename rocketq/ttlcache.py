"""Short-lived reads shared by every caller: one read answers all who ask the same soon after.

The operator asks the same things of the API server and of brokers for thousands of objects
per pass, and the proxy asks a broker for a topic's or group's config on every send or pop.
A ``TtlCache`` keeps each answer for ``ttl`` seconds and, while a read is under way, makes
every other caller of the same key wait for that read instead of starting its own (single
flight). A waiter's cancellation never cancels the read the others wait for.

Failures are not cached: every waiter gets the exception and the next caller reads again.
What a caller does on a failure is its own choice: the proxy answers with the last value
known (``stale``), the operator fails its pass. Callers that change what was read update it
(``put``) or ``drop`` it, so their own writes are never hidden by the cache; a value someone
else keeps fresh can be ``put`` with a ttl of its own.

The cache is bounded: a write that finds it full pushes out the entry written longest ago
(a dict keeps insertion order and ``put`` re-inserts, so that is one step, not a scan).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MAX_ENTRIES: Final = 4096
"""The default bound on entries (peers and objects come and go)."""


@dataclass
class _Entry(Generic[V]):
    value: V
    expires: float


class TtlCache(Generic[K, V]):
    """Values by key for ``ttl`` seconds, each loaded by at most one read at a time."""

    def __init__(self, ttl: float, *, max_entries: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if ttl < 0:
            raise ValueError(f"ttl {ttl} must not be negative")
        if max_entries < 1:
            raise ValueError(f"max_entries {max_entries} must be at least 1")
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._entries: dict[K, _Entry[V]] = {}
        self._loading: dict[K, asyncio.Task[V]] = {}

    def peek(self, key: K) -> V | None:
        """The fresh value of ``key``, or None (never loads)."""
        entry = self._entries.get(key)
        if entry is None or entry.expires <= self._clock():
            return None
        return entry.value

    def stale(self, key: K) -> V | None:
        """The value of ``key`` whatever its age (until it is dropped or pushed out), or None."""
        entry = self._entries.get(key)
        return None if entry is None else entry.value

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        """The fresh value of ``key``; else ``load()``'s, shared with every concurrent caller."""
        entry = self._entries.get(key)
        if entry is not None and entry.expires > self._clock():
            return entry.value
        task = self._loading.get(key)
        if task is None:
            task = asyncio.ensure_future(self._load(key, load))
            self._loading[key] = task
        return await asyncio.shield(task)

    async def _load(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        try:
            value = await load()
            self.put(key, value)
            return value
        finally:
            self._loading.pop(key, None)

    def put(self, key: K, value: V, ttl: float | None = None) -> None:
        """Keep ``value`` for ``ttl`` seconds (the cache's own ttl when None)."""
        now = self._clock()
        self._entries.pop(key, None)  # re-inserted last: the dict's order is the write order
        if len(self._entries) >= self._max:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = _Entry(value, now + (self._ttl if ttl is None else ttl))

    def drop(self, key: K) -> None:
        """Forget ``key``: the next ``get`` reads again (a read under way still answers its waiters)."""
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)

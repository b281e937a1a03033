"""Shared, short-lived reads: one read answers every pass that asks the same question soon after.

Thousands of RocketMQTopic / RocketMQConsumerGroup objects of one cluster all need the same
two things on every pass: the cluster's view (its spec, StatefulSets, ConfigMaps, pods and the
name servers' registrations) and what each master already has (GET_ALL_TOPIC_CONFIG,
GET_ALL_SUBSCRIPTIONGROUP_CONFIG). Read per object, that is four API calls and one full topic
table per master per object per pass: quadratic in the number of topics of a broker. A
``TtlCache`` keeps each answer for ``ttl`` seconds and, while a read is under way, makes every
other caller of the same key wait for that read instead of starting its own (single flight).

Failures are not cached: every waiter gets the exception and the next caller reads again.
A value may be up to ``ttl`` seconds old; callers that change what was read update it in place
or ``drop`` it, so the operator's own writes are never hidden by the cache. A value someone
else keeps fresh (the cluster pass publishing what it observed) can be ``put`` with a ttl of
its own.
Expired entries are removed when the cache grows past ``MAX_ENTRIES`` (peers come and go).
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
"""Above this many entries a write first sweeps out the expired ones."""


@dataclass
class _Entry(Generic[V]):
    value: V
    expires: float


class TtlCache(Generic[K, V]):
    """Values by key for ``ttl`` seconds, each loaded by at most one read at a time."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl < 0:
            raise ValueError(f"ttl {ttl} must not be negative")
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[K, _Entry[V]] = {}
        self._loading: dict[K, asyncio.Task[V]] = {}

    def peek(self, key: K) -> V | None:
        """The fresh value of ``key``, or None (never loads)."""
        entry = self._entries.get(key)
        if entry is None or entry.expires <= self._clock():
            return None
        return entry.value

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        """The fresh value of ``key``; else ``load()``'s, shared with every concurrent caller."""
        value = self.peek(key)
        if value is not None:
            return value
        task = self._loading.get(key)
        if task is None:
            task = asyncio.ensure_future(self._load(key, load))
            self._loading[key] = task
        # shield: one caller being cancelled (its pass timed out) must not fail the others.
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
        if len(self._entries) >= MAX_ENTRIES:
            now = self._clock()
            for stale in [k for k, e in self._entries.items() if e.expires <= now]:
                del self._entries[stale]
        self._entries[key] = _Entry(value, self._clock() + (self._ttl if ttl is None else ttl))

    def drop(self, key: K) -> None:
        """Forget ``key``: the next ``get`` reads again (a read under way still answers its waiters)."""
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)

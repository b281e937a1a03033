"""Periodic passes over every RocketMQCluster, without a finalizer on the clusters.

A reconciler that is level-based needs a pass every few seconds even when nothing about the
cluster object changes (a pod became ready, a master is lost, a drain emptied). kopf offers
timers for that, but a kopf timer makes kopf put its finalizer on every object it runs on, so
that it can stop the timer before the object goes. A finalizer on a RocketMQCluster means a
cluster cannot be deleted while the operator is stopped (nor by ``helm uninstall`` of a release
that made one), and it protects nothing: every child is removed by Kubernetes' garbage
collector through its owner reference, so deleting a cluster needs no work from the operator.

So clusters get a ``Ticker`` instead: kopf's event handler tells it which clusters exist
(``track``; event handlers need no finalizer), and one task owned by the ticker runs
``run_one(namespace, name)`` for each of them every ``interval`` seconds. Create, update and
resume still run a pass at once through kopf's change handlers. A pass that fails is logged and
counted by ``run_one``'s caller; the next tick tries again.

Passes of different clusters run at the same time, at most ``CONCURRENT_PASSES`` at once: one
after another, a hundred clusters whose passes make some twenty API calls each would need more
than the interval for one round as soon as the API server answers in tens of milliseconds.
What it does not do: spread passes over the interval.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from rocketq import tasks

Key = tuple[str, str]
"""(namespace, name) of a tracked object."""

log = logging.getLogger(__name__)

CONCURRENT_PASSES: Final = 8
"""Cluster passes a tick runs at the same time (each waits on API calls and brokers)."""


class Ticker:
    """Runs ``run_one`` for every tracked object every ``interval`` seconds until ``close()``."""

    def __init__(self, interval: float, run_one: Callable[[str, str], Awaitable[None]]) -> None:
        self._interval = interval
        self._run_one = run_one
        self._known: set[Key] = set()
        self._task = tasks.OwnedTask("rocketq cluster ticker", self._loop)

    @property
    def known(self) -> frozenset[Key]:
        return frozenset(self._known)

    def track(self, namespace: str, name: str, *, present: bool) -> None:
        if present:
            self._known.add((namespace, name))
        else:
            self._known.discard((namespace, name))

    def start(self) -> None:
        """Start the loop in the current context; a no-op while it runs."""
        self._task.start()

    async def close(self) -> None:
        """Stop the loop (a pass under way is cancelled); safe to call twice."""
        await self._task.stop()

    async def _loop(self) -> None:
        slots = asyncio.Semaphore(CONCURRENT_PASSES)
        while True:
            await asyncio.sleep(self._interval)
            await asyncio.gather(*(self._one(slots, key) for key in sorted(self._known)))

    async def _one(self, slots: asyncio.Semaphore, key: Key) -> None:
        async with slots:
            if key not in self._known:
                return  # deleted while an earlier pass of this tick ran
            try:
                await self._run_one(*key)
            except Exception:  # one broken cluster must not stop the others' passes
                log.exception(f"Periodic pass over RocketMQCluster {key[0]}/{key[1]} failed.")

"""SYNC_MASTER: a send is answered once a slave holds it, like group commit for the disk.

Each stored send that must wait registers the CommitLog offset just past its last record and
a future. Every slave report acknowledges everything below the offset it names, and one
acknowledgement releases every waiter it covers at once, so a burst of concurrent sends costs
one slave round trip, not one each (RocketMQ's GroupTransferService does the same with
``push2SlaveMaxOffset``). A waiter not released within the timeout (``syncFlushTimeout``) is
answered False: the send gets FLUSH_SLAVE_TIMEOUT, and the message stays stored on the master.

Before waiting at all the caller asks ``in_sync``: with no slave connected, or one further
behind than ``haMaxGapNotInSync``, a send gets SLAVE_NOT_AVAILABLE at once instead of a timeout.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Final

PRUNE_AT: Final = 1024
"""Timed-out waiters stay in the heap until an acknowledgement passes them; past this many
the heap is rebuilt without them, so a slave that never acknowledges costs bounded memory."""


class ReplicaWaiters:
    """Sends waiting for a slave acknowledgement, ordered by the offset they need."""

    def __init__(self) -> None:
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._order = itertools.count()
        self.acked = 0
        """Highest offset any slave acknowledged (RocketMQ's push2SlaveMaxOffset)."""

    def __len__(self) -> int:
        return len(self._waiters)

    def acknowledge(self, offset: int) -> None:
        """A slave holds everything below ``offset``: release the waiters that covers."""
        if offset > self.acked:
            self.acked = offset
        waiters = self._waiters
        while waiters and waiters[0][0] <= self.acked:
            _offset, _order, future = heapq.heappop(waiters)
            if not future.done():
                future.set_result(True)

    async def wait(self, offset: int, timeout: float) -> bool:
        """True once a slave acknowledged ``offset``; False after ``timeout`` seconds."""
        if self.acked >= offset:
            return True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        heapq.heappush(self._waiters, (offset, next(self._order), future))
        timer = loop.call_later(timeout, _time_out, future)
        try:
            released = await future
        finally:
            timer.cancel()
        if not released and len(self._waiters) > PRUNE_AT:
            self._waiters = [w for w in self._waiters if not w[2].done()]
            heapq.heapify(self._waiters)
        return released

    def release_all(self) -> None:
        """Answer every waiter False (the broker is stopping)."""
        waiters, self._waiters = self._waiters, []
        for _offset, _order, future in waiters:
            if not future.done():
                future.set_result(False)


def _time_out(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)

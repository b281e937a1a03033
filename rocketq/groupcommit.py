"""Group commit: many callers, at most one run in flight, and the next run carries them all.

A change that must be made durable (a topic written to topics.json) or announced (a topic
registered with the name servers) is slow compared with the change itself, and its cost is
the whole document, not the change. Doing it once per change makes N concurrent changes cost
N whole documents. ``GroupCommit`` is the CommitLog's group commit applied to such work:

- ``await commit()`` returns once a run that *started after the call* has finished, so the
  caller's change (made before it called) is covered; a failed run raises in every caller it
  covered.
- While a run is in flight, every new caller waits for the *next* run, and all of them share it:
  N callers arriving during one run cost one more run, not N.
- ``commit_soon()`` asks for a run without waiting for it (a change nobody is answered about).

What it does not do: decide what a run writes (the owner's ``run`` reads its current state when
it starts), retry a failed run, or debounce (a lone caller's run starts at once).
The driver task is owned here: ``close`` lets the pending runs finish and waits for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class GroupCommit:
    def __init__(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self._run = run
        self._next: asyncio.Future[None] | None = None
        """Completed by the run that starts after the current one; None when nobody waits."""
        self._driver: asyncio.Task[None] | None = None
        self.runs = 0
        """Runs done so far (tests and benchmarks compare it with the callers served)."""

    @property
    def idle(self) -> bool:
        return self._driver is None

    async def commit(self) -> None:
        """Return once a run that started after this call has finished; raise what it raised."""
        future = self._request()
        await asyncio.shield(future)  # a cancelled caller must not cancel the run others share

    def commit_soon(self) -> None:
        """Ask for a run and do not wait; its failure is logged (nobody else would see it)."""
        self._request()

    def _request(self) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
            self._next.add_done_callback(_retrieve)
        if self._driver is None:
            self._driver = loop.create_task(self._drive(), name=f"group-commit-{self.name}")
        return self._next

    async def _drive(self) -> None:
        try:
            while self._next is not None:
                future, self._next = self._next, None
                try:
                    await self._run()
                except Exception as exc:
                    log.error("%s failed: %s", self.name, exc)
                    future.set_exception(exc)
                else:
                    future.set_result(None)
                finally:
                    self.runs += 1
        finally:
            self._driver = None

    async def close(self) -> None:
        """Wait for the runs already asked for (their callers were promised them). Idempotent."""
        driver = self._driver
        if driver is not None:
            await asyncio.gather(driver, return_exceptions=True)


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a failure as seen: ``commit_soon`` callers never await it, and ``_drive`` logged it."""
    if not future.cancelled():
        future.exception()

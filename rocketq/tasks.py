"""A background task with one owner: started once, cancelled and awaited on stop.

Every long-running loop in rocketq (flushing, retention, registration, rebalancing, pulling)
belongs to exactly one object that starts it and, in its idempotent ``close()``, stops it and
waits until it has really ended — no task is started and then forgotten. ``OwnedTask`` is that
pattern once: ``start`` is a no-op while running, ``stop`` may be called any number of times.
A loop that dies of an exception is logged when it dies (never silently), and ``stop`` still
completes, so an owner's ``close()`` always finishes.

Loops that sleep until woken or until a period passes use ``wait_event``, never
``asyncio.wait_for(event.wait(), t)``: in Python 3.11 ``wait_for`` returns normally when the
event is set in the same loop turn as the task is cancelled, the cancellation is lost, and the
loop goes round again while its owner waits in ``stop`` forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until ``event`` is set (True) or ``timeout`` seconds pass (False); a cancellation
    of the waiting task is always raised, whatever else happens in the same turn."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True


class OwnedTask:
    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)
            self._task.add_done_callback(self._report)

    @staticmethod
    def _report(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s died", task.get_name(), exc_info=task.exception())

    async def stop(self) -> None:
        """Cancel the task and wait until it has finished; safe to call twice or before start."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

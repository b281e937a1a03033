"""Periodic work: the loop behind every client timer (routes, heartbeats, offset commits).

``every`` runs an action after each interval until cancelled. An action that fails with a
client or transport error is logged and tried again next time: a name server or broker that is
away for a while must not stop a timer for good. Anything else is a bug and ends the loop
loudly (the owner's task then holds the exception). The owner of the task cancels and awaits it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from rocketq.client.errors import ClientError
from rocketq.remoting.errors import RemotingError

log = logging.getLogger(__name__)


async def every(interval_ms: int, action: Callable[[], Awaitable[object]], *, what: str, owner: str) -> None:
    while True:
        await asyncio.sleep(interval_ms / 1000)
        try:
            await action()
        except (ClientError, RemotingError) as exc:
            log.warning("%s: %s failed: %s", owner, what, exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: %s failed unexpectedly; this timer stops", owner, what)
            raise

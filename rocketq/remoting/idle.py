"""Finding connections that have been silent for too long, without timing every read.

Each read and write sets ``Connection.active`` (one attribute store, nothing else on the
request's path). A sweep every ``idle_seconds / SWEEPS_PER_PERIOD`` clears the flag of every
active connection and notes the time; a connection whose flag is still clear ``idle_seconds``
after that note has had no traffic either way, and is returned to be closed. A connection is
therefore closed between ``idle_seconds`` and ``idle_seconds`` plus one sweep interval after its
last byte, like Netty's IdleStateHandler(ALL_IDLE) in RocketMQ's server and client. Unlike
Netty's, a connection with a request under way (a held long-poll pull, a slow call) counts as
active: it is waiting, not abandoned.

Servers sweep their accepted connections (``server``), clients the ones they opened
(``client``, RocketMQ's clientChannelMaxIdleTimeSeconds), with the same default of 120 s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Final

from rocketq import tasks
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)

SWEEPS_PER_PERIOD: Final = 4
MAX_SWEEP_INTERVAL: Final = 10.0
"""Seconds: with RocketMQ's 120 s idle time, a silent connection goes within 130 s."""


def sweep_interval(idle_seconds: float) -> float:
    return min(idle_seconds / SWEEPS_PER_PERIOD, MAX_SWEEP_INTERVAL)


def sweep(connections: Iterable[Connection], now: float, idle_seconds: float) -> list[Connection]:
    """Note this sweep's time on active connections; return the ones silent for ``idle_seconds``."""
    silent = []
    for conn in connections:
        if conn.active or conn.busy:
            conn.active = False
            conn.quiet_since = now
        elif now - conn.quiet_since >= idle_seconds and not conn.closed:
            silent.append(conn)
    return silent


class IdleCloser:
    """Owns the task that closes the idle ones among ``connections()`` every sweep interval."""

    def __init__(self, connections: Callable[[], Iterable[Connection]], idle_seconds: float, name: str,
                 on_close: Callable[[Connection], None] | None = None) -> None:
        self._connections = connections
        self._idle_seconds = idle_seconds
        self._name = name
        self._on_close = on_close
        self._task = tasks.OwnedTask(f"{name}-idle-sweep", self._run)

    def start(self) -> None:
        """Start sweeping (on the running loop); idempotent, and a no-op for an idle time of 0."""
        if self._idle_seconds > 0:
            self._task.start()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(sweep_interval(self._idle_seconds))
            for conn in sweep(list(self._connections()), loop.time(), self._idle_seconds):
                log.debug("%s: closing connection %s: no traffic for %g s", self._name, conn.remote_addr,
                          self._idle_seconds)
                if self._on_close is not None:
                    self._on_close(conn)
                conn.begin_close()

    async def close(self) -> None:
        """Stop sweeping; idempotent."""
        await self._task.stop()

"""Finding connections that have been silent for too long, without timing every read.

Each read and write sets ``Connection.active`` (one attribute store, nothing else on the
request's path). A sweep every ``idle_seconds / SWEEPS_PER_PERIOD`` clears the flag of every
active connection and notes the time; a connection whose flag is still clear ``idle_seconds``
after that note has had no traffic either way, and is returned to be closed. A connection is
therefore closed between ``idle_seconds`` and ``idle_seconds`` plus one sweep interval after its
last byte, like Netty's IdleStateHandler(ALL_IDLE) in RocketMQ's server.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from rocketq.remoting.connection import Connection

SWEEPS_PER_PERIOD: Final = 4
MAX_SWEEP_INTERVAL: Final = 10.0
"""Seconds: with RocketMQ's 120 s idle time, a silent connection goes within 130 s."""


def sweep_interval(idle_seconds: float) -> float:
    return min(idle_seconds / SWEEPS_PER_PERIOD, MAX_SWEEP_INTERVAL)


def sweep(connections: Iterable[Connection], now: float, idle_seconds: float) -> list[Connection]:
    """Note this sweep's time on active connections; return the ones silent for ``idle_seconds``."""
    silent = []
    for conn in connections:
        if conn.active:
            conn.active = False
            conn.quiet_since = now
        elif now - conn.quiet_since >= idle_seconds and not conn.closed:
            silent.append(conn)
    return silent

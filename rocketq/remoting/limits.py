"""How many connections a server accepts, and how long a silent one may stay.

File descriptors are one budget for the whole process: every accepted socket takes one, and so
does every store file (CommitLog segments, ConsumeQueue files, index files are all kept open).
Idle connections that nobody closes used to exhaust it, after which new clients were refused
by the kernel *and* the store's flushes failed with EMFILE. So:

* at start-up the soft ``RLIMIT_NOFILE`` is raised to the hard limit, as the JVM does
  (``raise_nofile_limit``);
* a server accepts at most ``max_connections`` connections, by default the soft limit less a
  reserve (``descriptor_reserve``) kept for the store, and refuses any connection whose socket
  got a descriptor inside that reserve, whatever the count: the kernel hands out the lowest
  free number, so a high number means the table is nearly full, whoever filled it;
* a connection with no traffic either way for ``idle_seconds`` is closed
  (``serverChannelMaxIdleTimeSeconds``, RocketMQ's name and default). RocketMQ clients send a
  heartbeat every 30 s, so only dead or abandoned connections are ever idle that long.
"""

from __future__ import annotations

import logging
import resource
from dataclasses import dataclass
from typing import Final

from rocketq.settings import SettingsError

log = logging.getLogger(__name__)

DEFAULT_IDLE_SECONDS: Final = 120
"""RocketMQ's serverChannelMaxIdleTimeSeconds default."""
MIN_DESCRIPTOR_RESERVE: Final = 64
"""Descriptors never given to connections, however low the limit: the store's files, logs, the
metrics listener, outgoing connections to name servers."""
DESCRIPTOR_RESERVE_FRACTION: Final = 8
"""One descriptor in this many is kept for the store when the limit is high (1 024 → 128)."""
MAX_RAISED_NOFILE: Final = 1 << 20
"""Where an unlimited hard limit is met, the soft limit is raised to this (Linux's nr_open)."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    """Seconds without a byte read or written after which a connection is closed; 0 never."""
    max_connections: int = 0
    """Connections open at once; 0 derives it from RLIMIT_NOFILE (soft limit less the reserve)."""

    def __post_init__(self) -> None:
        if self.idle_seconds < 0:
            raise SettingsError(f"serverChannelMaxIdleTimeSeconds={self.idle_seconds}: expected 0 (never) or more")
        if self.max_connections < 0:
            raise SettingsError(f"serverMaxConnections={self.max_connections}: expected 0 (derived) or more")


def raise_nofile_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = MAX_RAISED_NOFILE if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, target, exc)
            return soft
        log.info("raised the open-file limit (RLIMIT_NOFILE) from %d to %d", soft, target)
        return target
    return soft if soft != resource.RLIM_INFINITY else MAX_RAISED_NOFILE


def descriptor_reserve(soft_limit: int) -> int:
    """Descriptors kept free for everything that is not a client connection."""
    return max(MIN_DESCRIPTOR_RESERVE, soft_limit // DESCRIPTOR_RESERVE_FRACTION)


def first_reserved_descriptor(soft_limit: int) -> int:
    """The lowest descriptor number inside the reserve: a socket numbered so is refused."""
    return max(0, soft_limit - descriptor_reserve(soft_limit))


def derived_max_connections(soft_limit: int) -> int:
    return first_reserved_descriptor(soft_limit)

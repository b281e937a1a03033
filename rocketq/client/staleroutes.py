"""Stale routes: telling from a failed request that a failover happened, and when to ask again.

A client learns broker addresses only from the name servers, and Java's client asks them every
``pollNameServerInterval`` (30 s). After a failover (a slave promoted with ``rocketq admin
electMaster``, a DLedger leader change) the cached route still names the old master until the
next tick, and every send to it fails meanwhile: chaos runs measured 22-29 s recoveries for a
DLedger leader change that took 2 s, and 25-27 s after a master/slave promotion.

rocketq's client asks the name servers again at once when a request fails in a way that says
"this address is not the master, or not reachable, now" (``means_stale_route``):

- the connection could not be made, closed under the request, or the answer timed out (a dead,
  stopped or unreachable broker);
- the broker answered SERVICE_NOT_AVAILABLE (what a DLedger follower, a leader not ready yet,
  or a full disk answers a send) or NO_PERMISSION (what a demoted master answers a send; also a
  read-only topic or broker, for which the refresh merely finds nothing new).

SLAVE_NOT_AVAILABLE is not one of them: the master that says it has no slave stored the message
and still is the master, and a SYNC_MASTER left alone would cause a lookup per send for as long
as its slave is away. Neither is a full request queue (``RemotingTooMuchRequestError``): that is
this client's own backpressure.

Such refreshes are *rate-limited* per topic (``RefreshLimiter``: at most one every
``MIN_REFRESH_INTERVAL``), so a flood of failing sends, or a group with no master for a while,
costs the name server one lookup per topic per second, not one per failure. The client instance
makes them *single-flight* as well: callers that fail while a refresh is under way wait for that
one (``ClientInstance.refresh_stale_route``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from rocketq.client.errors import BrokerError
from rocketq.protocol.codes import ResponseCode
from rocketq.remoting.errors import RemotingConnectError, RemotingSendError, RemotingTimeoutError

MIN_REFRESH_INTERVAL: Final = 1.0
"""Seconds between two failure-driven route refreshes of one topic."""
MAX_TRACKED_TOPICS: Final = 10_000
"""Topics whose last refresh time is remembered (forgotten all at once when full)."""

STALE_ROUTE_CODES: Final = frozenset({ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.NO_PERMISSION})
"""Broker answers that may mean the address is no longer its group's master."""

_UNREACHABLE: Final = (RemotingConnectError, RemotingSendError, RemotingTimeoutError)


def means_stale_route(error: BaseException | None) -> bool:
    """Whether ``error`` (from a request to a broker) suggests the route may name a broker that
    is gone or no longer the master."""
    if isinstance(error, BrokerError):
        return error.code in STALE_ROUTE_CODES
    return isinstance(error, _UNREACHABLE)


class RefreshLimiter:
    """At most one refresh per topic every ``interval`` seconds."""

    def __init__(self, interval: float = MIN_REFRESH_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._last: dict[str, float] = {}

    def take(self, topic: str) -> bool:
        """True (and the topic's turn is used) when a refresh of ``topic`` may start now."""
        now = self._clock()
        last = self._last.get(topic)
        if last is not None and now - last < self._interval:
            return False
        if len(self._last) >= MAX_TRACKED_TOPICS:
            self._last.clear()
        self._last[topic] = now
        return True

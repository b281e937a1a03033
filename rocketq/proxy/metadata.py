"""What the proxy needs to know about topics and groups beyond routes, read from brokers and cached.

Two facts shape v2 answers: a topic's ``message.type`` attribute (which types its queues accept
in QueryRoute, and whether a send's type conflicts with it) and a group's
``consumeMessageOrderly`` (whether consumers are told ``fifo``, get one assignment per queue and
pop in order). RocketMQ's proxy reads both from a broker (GET_TOPIC_CONFIG, 351, and
GET_SUBSCRIPTIONGROUP_CONFIG, 352) and keeps them in caches refreshed every 20 s; so does this
module: a value is fetched from a master of the topic's route when older than ``REFRESH_S``.

A failed fetch keeps the last value known. With none, the answers are RocketMQ's: a topic whose
config cannot be read is UNSPECIFIED (every send to it then conflicts), a group that cannot be
read (or does not exist) is not orderly. Each cache holds at most ``MAX_ENTRIES`` names; the
oldest entry makes room for a new one. Callers that find a value due while it is being fetched
wait for that fetch instead of starting their own (a send per message must not mean a broker
request per message when the value expires).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Final, Generic, TypeVar

from rocketq.client import wire
from rocketq.client.errors import BrokerError, ClientError
from rocketq.client.routes import TopicRoute
from rocketq.protocol.topicattributes import MessageType
from rocketq.proxy.status import ProxyError
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.errors import RemotingError
from rocketq.ttlcache import TtlCache

log = logging.getLogger(__name__)

REFRESH_S: Final = 20.0
"""RocketMQ proxy's ``topicConfigCacheRefreshSeconds`` / ``subscriptionGroupConfigCacheRefreshSeconds``."""
MAX_ENTRIES: Final = 20_000
"""Names kept per cache (RocketMQ's ``topicConfigCacheMaxNum`` is of this order)."""
FETCH_TIMEOUT_S: Final = 3.0
FETCH_ERRORS: Final = (BrokerError, ClientError, RemotingError, ProxyError)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LastKnown(Generic[K, V]):
    """A ``TtlCache`` of broker reads that answers a failed read with the last value known, or
    with ``fallback`` when none is (a failure is logged, rate-limited per name)."""

    def __init__(self, fetch: Callable[[K], Awaitable[V]], fallback: V, *, refresh_s: float = REFRESH_S,
                 max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._fallback = fallback
        self._cache: TtlCache[K, V] = TtlCache(refresh_s, max_entries=max_entries, clock=clock)
        self._warnings = LogLimiter(log)

    async def get(self, name: K) -> V:
        """The value; one fetch at a time per name (concurrent callers wait for that one)."""
        try:
            return await self._cache.get(name, lambda: self._fetch(name))
        except FETCH_ERRORS as exc:
            self._warnings.warning(str(name), "cannot read the config of %s from a broker: %s", name, exc)
            known = self._cache.stale(name)
            return self._fallback if known is None else known


def _master(route: TopicRoute) -> str | None:
    """A master of the route (the first broker name that has one)."""
    for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
        if bd.master_addr is not None:
            return bd.master_addr
    return None


class Metadata:
    """Topic message types and group orderliness, as the brokers behind the proxy configure them."""

    def __init__(self, remoting: RemotingClient, route: Callable[[str], Awaitable[TopicRoute]]) -> None:
        self._remoting = remoting
        self._route = route
        self._types: LastKnown[str, MessageType] = LastKnown(self._fetch_type, MessageType.UNSPECIFIED)
        self._orderly: LastKnown[tuple[str, str], bool] = LastKnown(self._fetch_orderly, False)

    async def topic_type(self, topic: str) -> MessageType:
        return await self._types.get(topic)

    async def group_orderly(self, group: str, topic: str) -> bool:
        """``consumeMessageOrderly`` of ``group``, read from a master serving ``topic``."""
        return await self._orderly.get((group, topic))

    async def _fetch_type(self, topic: str) -> MessageType:
        addr = _master(await self._route(topic))
        if addr is None:
            return MessageType.UNSPECIFIED
        config = await wire.get_topic_config(self._remoting, addr, topic, FETCH_TIMEOUT_S)
        return config.message_type if config is not None else MessageType.UNSPECIFIED

    async def _fetch_orderly(self, key: tuple[str, str]) -> bool:
        group, topic = key
        addr = _master(await self._route(topic))
        if addr is None:
            return False
        try:
            config = await wire.get_group_config(self._remoting, addr, group, FETCH_TIMEOUT_S)
        except BrokerError:  # "No group in this broker": a group that is not orderly
            return False
        return config.consume_message_orderly

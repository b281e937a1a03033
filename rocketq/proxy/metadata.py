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

import asyncio
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

log = logging.getLogger(__name__)

REFRESH_S: Final = 20.0
"""RocketMQ proxy's ``topicConfigCacheRefreshSeconds`` / ``subscriptionGroupConfigCacheRefreshSeconds``."""
MAX_ENTRIES: Final = 20_000
"""Names kept per cache (RocketMQ's ``topicConfigCacheMaxNum`` is of this order)."""
FETCH_TIMEOUT_S: Final = 3.0
FETCH_ERRORS: Final = (BrokerError, ClientError, RemotingError, ProxyError)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """key -> (fetched at, value), bounded; ``get`` refetches a value older than the refresh time."""

    def __init__(self, fetch: Callable[[K], Awaitable[V]], fallback: V, *, refresh_s: float = REFRESH_S,
                 max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._fallback = fallback
        self._refresh_s = refresh_s
        self._max = max_entries
        self._clock = clock
        self._entries: dict[K, tuple[float, V]] = {}
        self._pending: dict[K, asyncio.Future[V]] = {}
        """Fetches under way, by key (at most one each)."""
        self._warnings = LogLimiter(log)

    async def get(self, name: K) -> V:
        """The value; one fetch at a time per key (concurrent callers wait for that one)."""
        now = self._clock()
        cached = self._entries.get(name)
        if cached is not None and now - cached[0] < self._refresh_s:
            return cached[1]
        pending = self._pending.get(name)
        if pending is not None:
            return await asyncio.shield(pending)  # a waiter's cancellation must not cancel the others'
        known = cached[1] if cached is not None else self._fallback
        pending = self._pending[name] = asyncio.get_running_loop().create_future()
        value = known
        try:
            value = await self._load(name, now, known)
            return value
        finally:  # also when this caller is cancelled: its waiters get what was known
            del self._pending[name]
            pending.set_result(value)

    async def _load(self, name: K, now: float, known: V) -> V:
        try:
            value = await self._fetch(name)
        except FETCH_ERRORS as exc:
            self._warnings.warning(str(name), "cannot read the config of %s from a broker: %s", name, exc)
            return known
        self._entries.pop(name, None)  # re-inserted last: the dict's order is the age order
        if len(self._entries) >= self._max:
            del self._entries[next(iter(self._entries))]
        self._entries[name] = (now, value)
        return value


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
        self._types: TtlCache[str, MessageType] = TtlCache(self._fetch_type, MessageType.UNSPECIFIED)
        self._orderly: TtlCache[tuple[str, str], bool] = TtlCache(self._fetch_orderly, False)

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

"""The client instance: one identity, one set of connections, routes and heartbeats.

Every producer and consumer owns one ``ClientInstance`` (RocketMQ's ``MQClientInstance``,
without the sharing between objects: sharing made Java's lifecycle hard to follow). It holds:

- the **client id** ``ip@instanceName``, which brokers use to tell consumers of a group apart;
  the default instance name is ``<pid>#<nanos>`` (RocketMQ 4.9's rule), unique per object, so
  two consumers of one group in one process are two members;
- one ``RemotingClient`` (one connection per broker or name server), whose handlers answer what
  brokers ask clients (NOTIFY_CONSUMER_IDS_CHANGED for consumers);
- the **routes** of the topics its owner uses, fetched from one name server of the list (a
  random one first, the next one on failure) and refreshed every ``pollNameServerInterval``,
  and at once (``refresh_stale_route``) when a request fails in a way that suggests a failover
  (``rocketq.client.staleroutes``); where two topics' routes disagree about a broker group's
  addresses, the route fetched last wins;
- the **heartbeat** to the brokers of those routes every ``heartbeatBrokerInterval``.

It starts two background tasks and its ``close()`` cancels and awaits both; the owner calls
``unregister`` before closing. It does not send messages or pull: producers and consumers do,
through ``wire``, asking the instance for addresses.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
import os
import random
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

from rocketq.acl import signing
from rocketq.client import heartbeats, periodic, staleroutes, wire
from rocketq.client.errors import BrokerError, ClientError, ClientStateError, RouteError
from rocketq.client.heartbeats import ConsumerData
from rocketq.client.queues import MessageQueue
from rocketq.client.replies import ReplyWaiters
from rocketq.client.routes import TopicRoute
from rocketq.client.settings import ClientSettings
from rocketq.protocol import msgid
from rocketq.protocol.codes import MASTER_ID, RequestCode
from rocketq.remoting.client import RemotingClient, split_addr
from rocketq.remoting.connection import Handler
from rocketq.remoting.errors import RemotingError

log = logging.getLogger(__name__)

_instance_counter = itertools.count()

T = TypeVar("T")


class ServiceState(enum.Enum):
    CREATE_JUST = "CREATE_JUST"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"


def default_instance_name() -> str:
    # nanos alone could repeat on a coarse clock; the counter cannot.
    return f"{os.getpid()}#{time.monotonic_ns() + next(_instance_counter)}"


def probe_client_ip(namesrv_addrs: list[str]) -> str:
    """The local address used to reach the first name server (no packet is sent)."""
    for addr in namesrv_addrs:
        try:
            host, port = split_addr(addr)
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect((host, port))
                return str(probe.getsockname()[0])
        except (OSError, RemotingError):
            continue
    return msgid.local_ip()


class ClientInstance:
    def __init__(
        self,
        settings: ClientSettings,
        *,
        handlers: Mapping[int, Handler] | None = None,
        producer_groups: Iterable[str] = (),
        consumer_data: Callable[[], ConsumerData | None] | None = None,
    ) -> None:
        self.settings = settings
        self._namesrvs = settings.namesrv_list()
        if not self._namesrvs:
            raise ClientStateError("no name server address: pass namesrv_addr or set NAMESRV_ADDR")
        self._namesrv_index = random.randrange(len(self._namesrvs))
        instance_name = settings.instance_name
        if instance_name == "DEFAULT":
            instance_name = default_instance_name()
        self.client_id = f"{settings.client_ip or probe_client_ip(self._namesrvs)}@{instance_name}"
        self.replies = ReplyWaiters()
        """Requests waiting for replies; every instance takes PUSH_REPLY_MESSAGE_TO_CLIENT, as in RocketMQ."""
        handlers = {RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT: self.replies.on_push, **(handlers or {})}
        self.remoting = RemotingClient(handlers, connect_timeout=settings.mq_client_api_timeout / 1000,
                                       name=self.client_id, rpc_hook=signing.signer(
                                           settings.access_key, settings.secret_key, settings.security_token))
        self._producer_groups = tuple(producer_groups)
        self._consumer_data = consumer_data
        self._routes: dict[str, TopicRoute] = {}
        self.routes: Mapping[str, TopicRoute] = self._routes
        """The cached routes by topic, for reading only (a producer's send checks its topic's
        without a call)."""
        self._brokers: dict[str, dict[int, str]] = {}
        self.masters: Mapping[str, str] = {}
        """Each broker group's master address (``master_addr``), for reading only: replaced
        whole when a route is stored, so read it afresh each time (a send reads it per message)."""
        self._route_fetches: dict[str, asyncio.Future[TopicRoute | None]] = {}
        self._stale_refreshes: dict[str, asyncio.Future[bool]] = {}
        self._refresh_limiter = staleroutes.RefreshLimiter()
        self._heartbeat_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._greeting: asyncio.Task[None] | None = None
        self.state = ServiceState.CREATE_JUST

    @property
    def api_timeout(self) -> float:
        return self.settings.mq_client_api_timeout / 1000

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        if self.state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"client instance {self.client_id} is {self.state.value}, cannot start")
        self.state = ServiceState.RUNNING
        self._tasks = [
            asyncio.create_task(periodic.every(self.settings.poll_name_server_interval, self.refresh_routes,
                                               what="route refresh", owner=self.client_id)),
            asyncio.create_task(periodic.every(self.settings.heartbeat_broker_interval, self.heartbeat,
                                               what="heartbeat", owner=self.client_id)),
        ]

    async def close(self) -> None:
        """Stop the timers and close every connection. Idempotent."""
        if self.state is ServiceState.SHUTDOWN_ALREADY:
            return
        self.state = ServiceState.SHUTDOWN_ALREADY
        tasks, self._tasks = self._tasks, []
        if self._greeting is not None:
            tasks.append(self._greeting)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for fetch in self._route_fetches.values():
            fetch.cancel()
        for refresh in self._stale_refreshes.values():
            refresh.cancel()
        await self.remoting.close()

    # --- routes -----------------------------------------------------------------------------

    async def _fetch_route(self, topic: str) -> TopicRoute | None:
        """Ask the name servers, starting with the last one that worked; None if topic unknown."""
        last_error: Exception | None = None
        for _ in range(len(self._namesrvs)):
            addr = self._namesrvs[self._namesrv_index]
            try:
                return await wire.get_route(self.remoting, addr, topic, self.api_timeout)
            except (RemotingError, BrokerError, ClientError) as exc:
                last_error = exc
                log.warning("%s: name server %s failed for route of %s: %s", self.client_id, addr, topic, exc)
                self._namesrv_index = (self._namesrv_index + 1) % len(self._namesrvs)
        raise RouteError(f"no name server answered for the route of {topic}: {last_error}")

    async def fetch_route(self, topic: str) -> TopicRoute | None:
        """One fetch per topic at a time: concurrent callers share it."""
        pending = self._route_fetches.get(topic)
        if pending is None:
            pending = asyncio.ensure_future(self._fetch_route(topic))
            self._route_fetches[topic] = pending
            pending.add_done_callback(lambda _f: self._route_fetches.pop(topic, None))
        return await asyncio.shield(pending)

    def _store_route(self, topic: str, route: TopicRoute) -> None:
        masters_only = self._consumer() is None  # whom heartbeat() greets
        known = set(self.broker_addrs(masters_only=masters_only))
        # re-inserted, so the freshest route comes last and its addresses win in the table
        self._routes.pop(topic, None)
        self._routes[topic] = route
        self._rebuild_broker_table()
        if self.state is ServiceState.RUNNING and not set(self.broker_addrs(masters_only=masters_only)) <= known:
            # A broker we never greeted (or a slave just promoted): say hello now rather than at
            # the next 30 s tick.
            self._greeting = self._greeting or asyncio.create_task(self._greet())

    async def _greet(self) -> None:
        try:
            await self.heartbeat()
        finally:
            self._greeting = None

    def _rebuild_broker_table(self) -> None:
        """Each broker group's addresses, from the last-fetched route that names the group: an
        older route of another topic may still list a master that has since failed over."""
        brokers: dict[str, dict[int, str]] = {}
        for route in self._routes.values():  # oldest first
            for data in route.broker_datas:
                brokers[data.broker_name] = dict(data.addrs)
        self._brokers = brokers
        self.masters = {name: addrs[MASTER_ID] for name, addrs in brokers.items() if MASTER_ID in addrs}

    async def update_route(self, topic: str) -> TopicRoute | None:
        """Fetch and remember the topic's route; None (and nothing remembered) when unknown."""
        route = await self.fetch_route(topic)
        if route is not None:
            self._store_route(topic, route)
        return route

    def cached_route(self, topic: str) -> TopicRoute | None:
        return self._routes.get(topic)

    async def route(self, topic: str) -> TopicRoute | None:
        cached = self._routes.get(topic)
        return cached if cached is not None else await self.update_route(topic)

    async def publish_route(self, topic: str, create_topic_key: str, queue_nums: int) -> TopicRoute:
        """The route to send to, borrowing the auto-create topic's route for a new topic."""
        cached = self._routes.get(topic)
        if cached is not None and cached.publish_queues(topic):
            return cached
        route = await self.update_route(topic)
        if route is not None and route.publish_queues(topic):
            return route
        default = await self.fetch_route(create_topic_key)
        if default is None or not default.publish_queues(topic):
            raise RouteError(f"No route info of this topic: {topic}; and no auto-create route ({create_topic_key})")
        borrowed = default.limited_to(queue_nums)
        self._store_route(topic, borrowed)
        return borrowed

    async def refresh_stale_route(self, topic: str, timeout: float) -> bool:
        """After a request for ``topic`` failed as ``staleroutes.means_stale_route`` describes:
        fetch its route now, once per topic at a time and at most once a second (otherwise
        return at once). True when the route changed. Waits at most ``timeout`` seconds (the
        fetch goes on for the others); a name server failure is logged and gives False."""
        pending = self._stale_refreshes.get(topic)
        if pending is None:
            if self.state is not ServiceState.RUNNING or not self._refresh_limiter.take(topic):
                return False
            pending = asyncio.ensure_future(self._refresh_stale(topic))
            self._stale_refreshes[topic] = pending
            pending.add_done_callback(lambda _f: self._stale_refreshes.pop(topic, None))
        try:
            return await asyncio.wait_for(asyncio.shield(pending), max(timeout, 0.0))
        except TimeoutError:
            return False

    async def call_current(self, topic: str, find: Callable[[], Awaitable[str]],
                           call: Callable[[str], Awaitable[T]]) -> T:
        """``call(await find())``: a request to the address ``find`` picks from the cached route.
        When it fails as ``staleroutes.means_stale_route`` describes, the topic's route is
        refreshed and, if ``find`` then gives another address (a promoted master), the request
        is made once more there; otherwise the failure is raised."""
        addr = await find()
        try:
            return await call(addr)
        except (RemotingError, BrokerError) as exc:
            if not staleroutes.means_stale_route(exc):
                raise
            await self.refresh_stale_route(topic, self.api_timeout)
            moved = await find()
            if moved == addr:
                raise
            log.info("%s: %s failed (%s); trying %s, the route's address now", self.client_id, addr, exc, moved)
        return await call(moved)

    async def _refresh_stale(self, topic: str) -> bool:
        before = self._routes.get(topic)
        try:
            route = await self.update_route(topic)
        except RouteError as exc:
            log.warning("%s: route refresh of %s after a failure failed: %s", self.client_id, topic, exc)
            return False
        changed = route is not None and route != before
        if changed:
            log.info("%s: route of %s changed (refreshed after a failed request)", self.client_id, topic)
        return changed

    async def refresh_routes(self) -> None:
        """Re-fetch every remembered topic; a topic the name server forgot keeps its last route."""
        for topic in list(self._routes):
            try:
                await self.update_route(topic)
            except RouteError as exc:
                log.warning("%s: route refresh of %s failed: %s", self.client_id, topic, exc)

    def forget_route(self, topic: str) -> None:
        if self._routes.pop(topic, None) is not None:
            self._rebuild_broker_table()

    # --- addresses --------------------------------------------------------------------------

    def master_addr(self, broker_name: str) -> str | None:
        return self.masters.get(broker_name)

    async def find_master(self, mq: MessageQueue) -> str:
        """The master of the queue's broker group, refreshing the route once if unknown."""
        addr = self.master_addr(mq.broker_name)
        if addr is None:
            await self.update_route(mq.topic)
            addr = self.master_addr(mq.broker_name)
        if addr is None:
            raise RouteError(f"The broker[{mq.broker_name}] not exist (no master address)")
        return addr

    def subscribe_addr(self, broker_name: str, broker_id: int = MASTER_ID) -> tuple[str, bool] | None:
        """(address, is slave) preferring ``broker_id``, then the master, then any slave."""
        addrs = self._brokers.get(broker_name)
        if not addrs:
            return None
        for candidate in (broker_id, MASTER_ID):
            if candidate in addrs:
                return addrs[candidate], candidate != MASTER_ID
        slave_id = min(addrs)
        return addrs[slave_id], True

    async def find_subscribe_addr(self, mq: MessageQueue, broker_id: int = MASTER_ID) -> tuple[str, bool]:
        found = self.subscribe_addr(mq.broker_name, broker_id)
        if found is None:
            await self.update_route(mq.topic)
            found = self.subscribe_addr(mq.broker_name, broker_id)
        if found is None:
            raise RouteError(f"The broker[{mq.broker_name}] not exist")
        return found

    async def subscribe_master(self, mq: MessageQueue) -> str:
        """Where the group's offsets of ``mq`` go: the master; while the route has none, a slave
        (RocketMQ's findBrokerAddressInSubscribe), which keeps them until the master is back."""
        addr, _is_slave = await self.find_subscribe_addr(mq)
        return addr

    async def any_broker_addr(self, topic: str) -> str | None:
        """An address of a random broker group serving the topic (for group-wide questions)."""
        route = await self.route(topic)
        if route is None or not route.broker_datas:
            return None
        return random.choice(route.broker_datas).select_addr()

    def broker_addrs(self, *, masters_only: bool) -> list[str]:
        return sorted({
            addr for ids in self._brokers.values() for broker_id, addr in ids.items()
            if broker_id == MASTER_ID or not masters_only
        })

    # --- heartbeats -------------------------------------------------------------------------

    def _consumer(self) -> ConsumerData | None:
        return self._consumer_data() if self._consumer_data is not None else None

    async def heartbeat(self) -> None:
        """HEART_BEAT to every known broker (masters only when there is no consumer)."""
        consumer = self._consumer()
        body = heartbeats.encode(self.client_id, self._producer_groups, [consumer] if consumer else [])
        async with self._heartbeat_lock:
            addrs = self.broker_addrs(masters_only=consumer is None)
            results = await asyncio.gather(
                *(wire.heartbeat(self.remoting, addr, body, self.api_timeout) for addr in addrs),
                return_exceptions=True,
            )
        for addr, result in zip(addrs, results, strict=True):
            if isinstance(result, Exception):
                log.warning("%s: heartbeat to %s failed: %s", self.client_id, addr, result)

    async def unregister(self, *, producer_group: str | None = None, consumer_group: str | None = None) -> None:
        """UNREGISTER_CLIENT on every known broker; failures are logged (the broker expires us anyway)."""
        addrs = self.broker_addrs(masters_only=consumer_group is None)
        calls = (
            wire.unregister_client(self.remoting, addr, self.client_id, self.api_timeout,
                                   producer_group=producer_group, consumer_group=consumer_group)
            for addr in addrs
        )
        results = await asyncio.gather(*calls, return_exceptions=True)
        for addr, result in zip(addrs, results, strict=True):
            if isinstance(result, Exception):
                log.warning("%s: unregister from %s failed: %s", self.client_id, addr, result)

"""QUERY_ASSIGNMENT (400) and SET_MESSAGE_REQUEST_MODE (401): server-side balancing and popShareQueueNum.

RocketMQ 5's remoting consumers may let a broker balance for them (``QueryAssignmentProcessor``):
a client asks which queues of a topic it should consume and whether by PULL or by POP. The
answer comes from the topic's route (every readable queue on every broker, from the name
server), the group's live client ids (from heartbeats, ``rocketq.broker.clienttable``) and the
client's strategy (``AVG``, ``AVG_BY_CIRCLE``, as ``rocketq.client.allocation`` computes them).

The mode is a group's per-topic setting made with SET_MESSAGE_REQUEST_MODE and kept in
``config/messageRequestMode.json``; without one it is ``defaultMessageRequestMode`` (PULL), and
always PULL for a retry topic. For POP, ``popShareQueueNum`` (default ``defaultPopShareQueueNum``
-1) says how widely clients share queues (``allocate4Pop``):

* <= 0, or >= the number of clients - 1: every client pops every broker (one assignment per
  broker with queueId -1);
* N, with no more clients than queues: a client's own queues plus those of the N clients after
  it in the sorted id list, so each queue has N + 1 poppers;
* N, with more clients than queues: each client gets the single queue ``index % queues``.

A BROADCASTING consumer gets every queue. Nothing is known (no route, no client of the group,
an unknown strategy): the answer has no assignments, as RocketMQ's has none.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Final

from rocketq.broker.clienttable import ClientManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.client import wire
from rocketq.client.allocation import STRATEGIES, AllocateStrategy
from rocketq.client.errors import ClientError
from rocketq.protocol import codes, popbodies
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.popbodies import MODE_POP, MODE_PULL, MessageRequestMode, QueryAssignmentRequest
from rocketq.protocol.queues import MessageQueue
from rocketq.protocol.sharedbodies import BodyError
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection, Handler
from rocketq.remoting.errors import RemotingError
from rocketq.store import configfiles

log = logging.getLogger(__name__)

RouteQueues = Callable[[str], Awaitable[list[MessageQueue] | None]]
"""Every readable queue of a topic across brokers (from the name server), or None if unknown."""


ROUTE_TIMEOUT_S: Final = 3.0
ROUTE_TTL_S: Final = 30.0
"""How long a topic's route is reused (RocketMQ's TopicRouteInfoManager refreshes every 30 s)."""
MAX_CACHED_ROUTES: Final = 10_000
"""Topics whose routes are kept; past it the cache starts over (bounds what queries for made-up
topics can make the broker hold)."""
MODES_FILE: Final = "messageRequestMode.json"
MAX_NAME_SHOWN: Final = 127
"""Characters of a client-given name (topic, strategy) a log line shows."""


def namesrv_route_queues(rc: RemotingClient, namesrv_addrs: Sequence[str]) -> RouteQueues:
    """Route lookups through the name servers, first answer wins (RocketMQ's TopicRouteInfoManager)."""

    async def lookup(topic: str) -> list[MessageQueue] | None:
        for addr in namesrv_addrs:
            try:
                route = await wire.get_route(rc, addr, topic, ROUTE_TIMEOUT_S)
            except (ClientError, RemotingError) as exc:
                log.debug("route of %s from %s: %s", topic, addr, exc)
                continue
            return None if route is None else list(route.subscribe_queues(topic))
        return None

    return lookup


def cached_route_queues(lookup: RouteQueues, ttl_s: float = ROUTE_TTL_S,
                        clock: Callable[[], float] = time.monotonic) -> RouteQueues:
    """``lookup`` with each answer (a missing route too) reused for ``ttl_s``: every client of
    every group asks again each rebalance, and the name server need not hear each one."""
    cache: dict[str, tuple[float, list[MessageQueue] | None]] = {}

    async def cached(topic: str) -> list[MessageQueue] | None:
        hit = cache.get(topic)
        if hit is not None and clock() < hit[0]:
            return hit[1]
        queues = await lookup(topic)
        if len(cache) >= MAX_CACHED_ROUTES:
            cache.clear()
        cache[topic] = (clock() + ttl_s, queues)
        return queues

    return cached


class MessageRequestModes:
    """``messageRequestMode.json``: ``{"messageRequestModeMap": {topic: {group: body}}}``."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self.table: dict[str, dict[str, MessageRequestMode]] = {}

    def load(self) -> None:
        raw = configfiles.read_json(self._path)
        if not isinstance(raw, dict):
            return
        for topic, groups in (raw.get("messageRequestModeMap") or {}).items():
            try:
                self.table[str(topic)] = {str(g): MessageRequestMode.from_json(m) for g, m in groups.items()}
            except (AttributeError, BodyError) as exc:
                log.warning("ignoring unreadable request modes of %r in %s: %s", topic, self._path, exc)

    def get(self, topic: str, group: str) -> MessageRequestMode | None:
        return self.table.get(topic, {}).get(group)

    def set(self, mode: MessageRequestMode) -> None:
        self.table.setdefault(mode.topic, {})[mode.consumer_group] = mode
        configfiles.write_json_atomic(self._path, {"messageRequestModeMap": {
            t: {g: m.to_json() for g, m in groups.items()} for t, groups in self.table.items()}})


class AssignmentHandlers:
    def __init__(self, clients: ClientManager, modes: MessageRequestModes, behaviour: BrokerBehaviour,
                 route_queues: RouteQueues) -> None:
        self._clients = clients
        self._modes = modes
        self._behaviour = behaviour
        self._route_queues = route_queues
        self._warnings = LogLimiter(log)

    @classmethod
    def loaded(cls, config_dir: Path, clients: ClientManager, behaviour: BrokerBehaviour, rc: RemotingClient,
               namesrv_addrs: Sequence[str]) -> AssignmentHandlers:
        """The handlers with ``config/messageRequestMode.json`` read and routes from the name servers."""
        modes = MessageRequestModes(config_dir / MODES_FILE)
        modes.load()
        return cls(clients, modes, behaviour, cached_route_queues(namesrv_route_queues(rc, namesrv_addrs)))

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.QUERY_ASSIGNMENT: self.query_assignment,
                RequestCode.SET_MESSAGE_REQUEST_MODE: self.set_message_request_mode}

    async def set_message_request_mode(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            mode = MessageRequestMode.decode(request.body or b"")
        except BodyError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        if mode.topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX):
            return request.response(ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode")
        self._modes.set(mode)
        return request.response(ResponseCode.SUCCESS)

    async def query_assignment(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            ask = QueryAssignmentRequest.decode(request.body or b"")
        except BodyError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        mode = self._mode(ask.topic, ask.consumer_group)
        queues = await self._balance(conn.remote_addr, ask, mode)
        response = request.response(ResponseCode.SUCCESS)
        response.body = popbodies.encode_assignments((mq, mode.mode) for mq in sorted(set(queues or ())))
        return response

    def _mode(self, topic: str, group: str) -> MessageRequestMode:
        found = self._modes.get(topic, group)
        if found is not None:
            return found
        if topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX):
            return MessageRequestMode(topic, group, MODE_PULL)
        default = self._behaviour.default_message_request_mode
        share = self._behaviour.default_pop_share_queue_num if default == MODE_POP else 0
        return MessageRequestMode(topic, group, default, share)

    async def _balance(self, peer: str, ask: QueryAssignmentRequest,
                       mode: MessageRequestMode) -> list[MessageQueue] | None:
        queues = await self._route_queues(ask.topic)
        if queues is None:  # warned per peer: one client may ask for any number of made-up topics
            self._warnings.warning(peer, "query assignment from %s: no route of topic %s", peer,
                                   ask.topic[:MAX_NAME_SHOWN])
            return None
        if ask.message_model == "BROADCASTING" or not self._behaviour.server_load_balancer_enable:
            return queues
        cids = self._clients.consumer_ids(ask.consumer_group)
        if not cids:
            return None
        strategy = STRATEGIES.get(ask.strategy_name)
        if strategy is None:
            self._warnings.warning(peer, "query assignment from %s: unsupported strategy %r", peer,
                                   ask.strategy_name[:MAX_NAME_SHOWN])
            return None
        all_queues, all_cids = sorted(queues), sorted(cids)
        if mode.mode == MODE_POP:
            return allocate_for_pop(strategy, ask.client_id, all_queues, all_cids, mode.pop_share_queue_num)
        return strategy(ask.client_id, all_queues, all_cids)


def allocate_for_pop(strategy: AllocateStrategy, client_id: str, queues: Sequence[MessageQueue],
                     cids: Sequence[str], share: int) -> list[MessageQueue]:
    """RocketMQ's ``allocate4Pop`` (see the module docstring)."""
    if share <= 0 or share >= len(cids) - 1:
        return sorted({MessageQueue(q.topic, q.broker_name, -1) for q in queues})
    if len(cids) <= len(queues):
        result = strategy(client_id, queues, cids)
        if client_id in cids:
            index = cids.index(client_id)
            for step in range(1, share + 1):
                result.extend(strategy(cids[(index + step) % len(cids)], queues, cids))
        return result
    if client_id not in cids:
        return []
    return [queues[cids.index(client_id) % len(queues)]]

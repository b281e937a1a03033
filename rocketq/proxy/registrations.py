"""v2 clients at the brokers: the proxy sends HEART_BEAT for each gRPC client, under its identity.

A RocketMQ 5 client talks only to the proxy, yet operators look for it where they look for
every client: in the brokers' producer and consumer tables (``rocketq admin
consumerConnection``, ``producerConnection``, GET_CONSUMER_LIST_BY_GROUP, the console).
RocketMQ's proxy registers each v2 client in those tables (``ClientActivity``); rocketq's proxy
reaches brokers over remoting in both modes, so it sends HEART_BEAT on each client's behalf:

- when the client's Settings arrive on Telemetry and on every v2 Heartbeat (the Python client
  sends one every 10 s), to every broker of the routes of the client's topics (masters only
  for a producer, as remoting producers do);
- body: ``clientID`` = the v2 client id; a producer is a member of one producer group per
  topic it publishes, named as the topic (RocketMQ's proxy does the same); a consumer joins its
  group as CONSUME_ACTIVELY (simple) or CONSUME_PASSIVELY (push), CLUSTERING,
  CONSUME_FROM_LAST_OFFSET, with its subscriptions;
- frame ``language`` = the client's ``x-mq-language`` (PYTHON, JAVA, GO, ...; OTHER when the
  broker has no such code); ``version`` = the proxy's own (RocketMQ's proxy too reports its own
  version: ``5.1.2`` is no ``MQVersion`` name).

Each client gets its own remoting connection to each broker: a broker knows a client by its
connection, and sends requests for the client (GET_CONSUMER_RUNNING_INFO) on it; those reach
``relays``. The cost is one connection per v2 client and broker, as if it were a 4.x client.

A client is unregistered (UNREGISTER_CLIENT, then its connections closed) on
NotifyClientTermination, when its Telemetry stream ends, and when no Heartbeat came for
``channelExpiredTimeout``; ``on_gone`` then tells the receipt-handle renewer to let go of it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketq.client import heartbeats, wire
from rocketq.client.heartbeats import ConsumerData, ConsumeType
from rocketq.client.settings import ConsumeFromWhere, MessageModel
from rocketq.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketq.protocol.requests import command
from rocketq.proxy import clients
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.client import RemotingClient, RpcHook
from rocketq.remoting.connection import Handler

log = logging.getLogger(__name__)

BROKER_CALL_TIMEOUT_S: Final = 3.0
SWEEP_PERIOD_S: Final = 10.0
"""How often silent clients are looked for (RocketMQ's proxy scans every 10 s)."""
LANGUAGE_ALIASES: Final = {"DOT_NET": "DOTNET", "GOLANG": "GO"}
"""v2 ``Language`` names whose remoting ``LanguageCode`` is spelled differently."""

BrokerAddrs = Callable[[str, bool], Awaitable[list[str]]]
"""``(topic, masters_only)`` → the addresses of the brokers serving the topic."""


def remoting_language(language: str) -> str:
    name = LANGUAGE_ALIASES.get(language.upper(), language.upper())
    return name if name in LanguageCode.__members__ else LanguageCode.OTHER.name


def heartbeat_of(client_id: str, settings: pb.Settings) -> tuple[bytes, list[str], str | None]:
    """(HeartbeatData body, topics whose brokers get it, consumer group or None) of a client."""
    if settings.HasField("publishing"):
        topics = [t.name for t in settings.publishing.topics]
        return heartbeats.encode(client_id, topics, ()), topics, None
    sub = settings.subscription
    kind = ConsumeType.CONSUME_PASSIVELY if settings.client_type == pb.PUSH_CONSUMER else ConsumeType.CONSUME_ACTIVELY
    consumer = ConsumerData(sub.group.name, kind, MessageModel.CLUSTERING, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                            tuple(clients.subscriptions(settings)))
    return heartbeats.encode(client_id, (), [consumer]), [s.topic.name for s in sub.subscriptions], sub.group.name


@dataclass
class Registration:
    """One v2 client's presence at the brokers."""

    client_id: str
    language: str
    remoting: RemotingClient
    last_seen: float
    groups: tuple[list[str], str | None] = ([], None)
    """(producer groups, consumer group) last heartbeated."""
    brokers: set[str] = field(default_factory=set)
    sending: asyncio.Task[None] | None = None


class Registrar:
    """Heartbeats for v2 clients, their expiry, and their unregistration. Owns one task per
    client heartbeat in flight and the sweep task; ``close`` unregisters every client."""

    def __init__(self, broker_addrs: BrokerAddrs, handlers: Mapping[int, Handler], *,
                 expire_ms: int, on_gone: Callable[[str], None] = lambda _c: None,
                 clock: Callable[[], float] = time.monotonic, rpc_hook: RpcHook | None = None) -> None:
        """``rpc_hook``: what signs the proxy's remoting calls (ACL brokers), for the clients' connections too."""
        self._broker_addrs = broker_addrs
        self._handlers = handlers
        self._expire_s = expire_ms / 1000
        self._on_gone = on_gone
        self._clock = clock
        self._rpc_hook = rpc_hook
        self._registered: dict[str, Registration] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._warnings = LogLimiter(log)

    def start(self) -> None:
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever(), name="proxy-client-expiry")

    def is_registered(self, client_id: str) -> bool:
        return client_id in self._registered

    def seen(self, caller: clients.Caller, client: clients.Client) -> None:
        """The client is alive (Settings or Heartbeat): heartbeat the brokers for it, in the background."""
        reg = self._registered.get(caller.client_id)
        if reg is None:
            reg = Registration(caller.client_id, remoting_language(caller.language),
                               RemotingClient(self._handlers, name=f"proxy-for-{caller.client_id}",
                                              rpc_hook=self._rpc_hook), self._clock())
            self._registered[caller.client_id] = reg
        reg.last_seen = self._clock()
        if reg.sending is None or reg.sending.done():
            reg.sending = asyncio.get_running_loop().create_task(self._heartbeat(reg, client.settings))

    async def _heartbeat(self, reg: Registration, settings: pb.Settings) -> None:
        body, topics, group = heartbeat_of(reg.client_id, settings)
        addrs: set[str] = set()
        for topic in topics:
            try:
                addrs.update(await self._broker_addrs(topic, group is None))
            except Exception as exc:  # an unknown topic: its receives and sends fail on their own
                self._warnings.warning(topic, "no route of %s for client %s: %s", topic, reg.client_id, exc)
        reg.groups = ([] if group else topics, group)
        reg.brokers |= addrs
        for addr in sorted(addrs):
            request = command(RequestCode.HEART_BEAT, body=body)
            request.language = reg.language  # what the broker lists as the client's language
            try:
                answer = await reg.remoting.invoke(addr, request, BROKER_CALL_TIMEOUT_S)
            except Exception as exc:
                answer = None
                self._warnings.warning(addr, "heartbeat to %s for v2 client %s failed: %s", addr, reg.client_id, exc)
            if answer is not None and answer.code != ResponseCode.SUCCESS:
                self._warnings.warning(addr, "heartbeat to %s for v2 client %s refused: %s", addr, reg.client_id,
                                       answer.remark)

    def gone(self, client_id: str) -> None:
        """The client left (termination, stream end, silence): unregister it, in the background."""
        reg = self._registered.pop(client_id, None)
        if reg is None:
            return
        log.info("v2 client %s unregistered from %d broker(s)", client_id, len(reg.brokers))
        self._on_gone(client_id)
        task = asyncio.get_running_loop().create_task(self._unregister(reg))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _unregister(self, reg: Registration) -> None:
        if reg.sending is not None:
            reg.sending.cancel()
            await asyncio.gather(reg.sending, return_exceptions=True)
        producer_groups, consumer_group = reg.groups
        try:
            for addr in sorted(reg.brokers):
                calls = [wire.unregister_client(reg.remoting, addr, reg.client_id, BROKER_CALL_TIMEOUT_S,
                                                producer_group=g) for g in producer_groups]
                if consumer_group:
                    calls.append(wire.unregister_client(reg.remoting, addr, reg.client_id, BROKER_CALL_TIMEOUT_S,
                                                        consumer_group=consumer_group))
                # a failure is only logged: closing the connection below unregisters it as well
                for result in await asyncio.gather(*calls, return_exceptions=True):
                    if isinstance(result, Exception):
                        self._warnings.warning(addr, "unregister of %s at %s failed: %s", reg.client_id, addr, result)
        finally:
            await reg.remoting.close()

    def expired(self) -> list[str]:
        """Clients whose last Heartbeat is older than ``channelExpiredTimeout``."""
        now = self._clock()
        return [cid for cid, reg in self._registered.items() if now - reg.last_seen > self._expire_s]

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(min(SWEEP_PERIOD_S, self._expire_s / 2))
            for client_id in self.expired():
                log.info("v2 client %s sent no heartbeat for %.0f s", client_id, self._expire_s)
                self.gone(client_id)

    async def close(self) -> None:
        """Unregister every client and stop. Idempotent."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        for client_id in list(self._registered):
            self.gone(client_id)
        await asyncio.gather(*list(self._closing), return_exceptions=True)

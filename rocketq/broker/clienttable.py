"""Who is connected: producer and consumer groups, their connections and subscriptions.

Clients say who they are with HEART_BEAT every 30 s. A consumer group's membership is the set
of its live connections; when it changes (join, UNREGISTER_CLIENT, connection closed, or silence
longer than ``channelExpiredTimeout``) every remaining member is told with
NOTIFY_CONSUMER_IDS_CHANGED so it rebalances at once instead of waiting for its 20 s timer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.subscription import SubscriptionData
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ClientChannel:
    connection: Connection
    client_id: str
    language: str
    version: int
    last_update: float = field(default_factory=time.monotonic)


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[Connection, ClientChannel] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        return sorted({c.client_id for c in self.channels.values()})


class ClientManager:
    def __init__(self, notify: Callable[[str, list[Connection]], None]) -> None:
        """``notify(group, connections)`` tells a group's members that membership changed."""
        self._notify = notify
        self.consumers: dict[str, ConsumerGroupInfo] = {}
        self.producers: dict[str, dict[Connection, ClientChannel]] = {}

    # --- consumers ----------------------------------------------------------------------

    def register_consumer(
        self,
        group: str,
        channel: ClientChannel,
        *,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        subscriptions: Iterable[SubscriptionData],
        notify_enabled: bool = True,
    ) -> None:
        info = self.consumers.setdefault(group, ConsumerGroupInfo(group))
        info.consume_type, info.message_model, info.consume_from_where = consume_type, message_model, consume_from_where
        existing = info.channels.get(channel.connection)
        joined = existing is None or existing.client_id != channel.client_id
        info.channels[channel.connection] = channel
        new_subs = {s.topic: s for s in subscriptions}
        subs_changed = {t: s.sub_string for t, s in new_subs.items()} != {
            t: s.sub_string for t, s in info.subscriptions.items()
        }
        info.subscriptions = new_subs
        if joined:
            log.info("consumer %s joined group %s from %s", channel.client_id, group, channel.connection.remote_addr)
        if (joined or subs_changed) and notify_enabled:
            self._notify(group, list(info.channels))

    def unregister_consumer(self, group: str, connection: Connection) -> None:
        info = self.consumers.get(group)
        if info is not None and info.channels.pop(connection, None) is not None:
            self._after_leave(info)

    def consumer_group(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumers.get(group)

    def consumer_ids(self, group: str) -> list[str]:
        info = self.consumers.get(group)
        return info.client_ids() if info else []

    def subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumers.get(group)
        return info.subscriptions.get(topic) if info else None

    def groups_consuming(self, topic: str) -> list[str]:
        return sorted(g for g, info in self.consumers.items() if topic in info.subscriptions)

    # --- producers ----------------------------------------------------------------------

    def register_producer(self, group: str, channel: ClientChannel) -> None:
        self.producers.setdefault(group, {})[channel.connection] = channel

    def unregister_producer(self, group: str, connection: Connection) -> None:
        channels = self.producers.get(group)
        if channels is not None:
            channels.pop(connection, None)
            if not channels:
                del self.producers[group]

    def producer_connection(self, group: str) -> Connection | None:
        """A live connection of the group, for CHECK_TRANSACTION_STATE."""
        channels = self.producers.get(group) or {}
        live = [c for c in channels if not c.closed]
        return live[0] if live else None

    # --- liveness -----------------------------------------------------------------------

    def connection_closed(self, connection: Connection) -> None:
        for info in list(self.consumers.values()):
            if info.channels.pop(connection, None) is not None:
                self._after_leave(info)
        for group in list(self.producers):
            self.unregister_producer(group, connection)

    def expire(self, max_idle_seconds: float, now: float | None = None) -> list[str]:
        """Drop clients silent for longer than ``max_idle_seconds``; returns their client ids."""
        now = time.monotonic() if now is None else now
        dropped: list[str] = []
        for info in list(self.consumers.values()):
            stale = [c for c, ch in info.channels.items() if now - ch.last_update > max_idle_seconds]
            for conn in stale:
                dropped.append(info.channels.pop(conn).client_id)
                conn.abort()
            if stale:
                self._after_leave(info)
        for group, channels in list(self.producers.items()):
            for conn in [c for c, ch in channels.items() if now - ch.last_update > max_idle_seconds]:
                dropped.append(channels.pop(conn).client_id)
            if not channels:
                del self.producers[group]
        return dropped

    def _after_leave(self, info: ConsumerGroupInfo) -> None:
        if info.channels:
            self._notify(info.group, list(info.channels))
        else:
            del self.consumers[info.group]


async def notify_ids_changed(group: str, connections: list[Connection]) -> None:
    """Send NOTIFY_CONSUMER_IDS_CHANGED (oneway) to each connection; a dead one is skipped."""
    for conn in connections:
        if conn.closed:
            continue
        try:
            await conn.invoke_oneway(
                RemotingCommand(code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, ext_fields={"consumerGroup": group})
            )
        except Exception as exc:  # a failed notify must never break the heartbeat that caused it
            log.debug("notify %s on %s failed: %s", group, conn.remote_addr, exc)

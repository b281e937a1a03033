"""Who is connected: producer and consumer groups, their connections and subscriptions.

Clients say who they are with HEART_BEAT every 30 s. A consumer group's membership is the set
of its live connections; when it changes (join, UNREGISTER_CLIENT, connection closed, or silence
longer than ``channelExpiredTimeout``) every remaining member is told with
NOTIFY_CONSUMER_IDS_CHANGED so it rebalances at once instead of waiting for its 20 s timer.

Thousands of clients: every per-client operation costs the change, not the table. A closed
connection finds its groups through an index (not a scan of every group); a group's sorted
client ids, which every member asks for (GET_CONSUMER_LIST_BY_GROUP) per subscribed topic and
rebalance, are built once per membership change; and ``IdsChangedNotifier`` tells a group's
members once per ``NOTIFY_WINDOW_S`` however many of them joined meanwhile (a broker restart
makes every member of a group re-join within seconds: N joins would otherwise cost N x N
notifications).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, TypeVar

from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.subscription import SubscriptionData
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)

Key = TypeVar("Key")

NOTIFY_WINDOW_S: Final = 0.1
"""Membership changes of one group within this window are told to its members once."""


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
    _ids: list[str] | None = None
    """The sorted client ids, until the membership changes (``members_changed``)."""

    def client_ids(self) -> list[str]:
        if self._ids is None:
            self._ids = sorted({c.client_id for c in self.channels.values()})
        return self._ids

    def members_changed(self) -> None:
        self._ids = None


class ClientManager:
    def __init__(self, notify: Callable[[str, list[Connection]], None]) -> None:
        """``notify(group, connections)`` tells a group's members that membership changed."""
        self._notify = notify
        self.consumers: dict[str, ConsumerGroupInfo] = {}
        self.producers: dict[str, dict[Connection, ClientChannel]] = {}
        self._groups_of: dict[Connection, set[str]] = {}
        """Consumer groups each connection is a member of: a closed connection leaves just those."""
        self._producer_groups_of: dict[Connection, set[str]] = {}
        self._groups_by_topic: dict[str, set[str]] = {}
        """Online groups subscribed to each topic (QUERY_TOPIC_CONSUME_BY_WHO, per topic listed)."""

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
        if joined:
            info.members_changed()
            self._groups_of.setdefault(channel.connection, set()).add(group)
        new_subs = {s.topic: s for s in subscriptions}
        subs_changed = {t: s.sub_string for t, s in new_subs.items()} != {
            t: s.sub_string for t, s in info.subscriptions.items()
        }
        if subs_changed:
            self._index_topics(group, info.subscriptions.keys() - new_subs.keys(), new_subs.keys())
        info.subscriptions = new_subs
        if joined:
            log.info("consumer %s joined group %s from %s", channel.client_id, group, channel.connection.remote_addr)
        if (joined or subs_changed) and notify_enabled:
            self._notify(group, list(info.channels))

    def unregister_consumer(self, group: str, connection: Connection) -> None:
        info = self.consumers.get(group)
        if info is not None and info.channels.pop(connection, None) is not None:
            self._forget_membership(connection, group)
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
        return sorted(self._groups_by_topic.get(topic, ()))

    def _index_topics(self, group: str, gone: Iterable[str], subscribed: Iterable[str]) -> None:
        for topic in gone:
            _forget(self._groups_by_topic, topic, group)
        for topic in subscribed:
            self._groups_by_topic.setdefault(topic, set()).add(group)

    # --- producers ----------------------------------------------------------------------

    def register_producer(self, group: str, channel: ClientChannel) -> None:
        self.producers.setdefault(group, {})[channel.connection] = channel
        self._producer_groups_of.setdefault(channel.connection, set()).add(group)

    def unregister_producer(self, group: str, connection: Connection) -> None:
        channels = self.producers.get(group)
        if channels is not None:
            channels.pop(connection, None)
            if not channels:
                del self.producers[group]
        _forget(self._producer_groups_of, connection, group)

    def producer_connection(self, group: str) -> Connection | None:
        """A live connection of the group, for CHECK_TRANSACTION_STATE."""
        channels = self.producers.get(group) or {}
        live = [c for c in channels if not c.closed]
        return live[0] if live else None

    # --- liveness -----------------------------------------------------------------------

    def connection_closed(self, connection: Connection) -> None:
        for group in self._groups_of.pop(connection, ()):
            info = self.consumers.get(group)
            if info is not None and info.channels.pop(connection, None) is not None:
                self._after_leave(info)
        for group in list(self._producer_groups_of.get(connection, ())):
            self.unregister_producer(group, connection)

    def _forget_membership(self, connection: Connection, group: str) -> None:
        _forget(self._groups_of, connection, group)

    def expire(self, max_idle_seconds: float, now: float | None = None) -> list[str]:
        """Drop clients silent for longer than ``max_idle_seconds``; returns their client ids."""
        now = time.monotonic() if now is None else now
        dropped: list[str] = []
        for info in list(self.consumers.values()):
            stale = [c for c, ch in info.channels.items() if now - ch.last_update > max_idle_seconds]
            for conn in stale:
                dropped.append(info.channels.pop(conn).client_id)
                self._forget_membership(conn, info.group)
                conn.abort()
            if stale:
                self._after_leave(info)
        for group, channels in list(self.producers.items()):
            for conn in [c for c, ch in channels.items() if now - ch.last_update > max_idle_seconds]:
                dropped.append(channels.pop(conn).client_id)
                _forget(self._producer_groups_of, conn, group)
            if not channels:
                del self.producers[group]
        return dropped

    def _after_leave(self, info: ConsumerGroupInfo) -> None:
        info.members_changed()
        if info.channels:
            self._notify(info.group, list(info.channels))
        else:
            del self.consumers[info.group]
            self._index_topics(info.group, info.subscriptions, ())


def _forget(index: dict[Key, set[str]], key: Key, group: str) -> None:
    groups = index.get(key)
    if groups is not None:
        groups.discard(group)
        if not groups:
            del index[key]


class IdsChangedNotifier:
    """NOTIFY_CONSUMER_IDS_CHANGED fan-out, at most once per group per ``NOTIFY_WINDOW_S``.

    ``changed`` is the ``ClientManager``'s notify callback; the members told are the group's
    members when the window closes (``members(group)``), so every change in the window is seen.
    Owns its one task: ``close`` cancels it.
    """

    def __init__(self, members: Callable[[str], list[Connection]], window: float = NOTIFY_WINDOW_S) -> None:
        self._members = members
        self._window = window
        self._pending: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self.sent = 0
        """Notifications sent (a group's fan-out counts once per member)."""

    def changed(self, group: str, connections: list[Connection]) -> None:
        self._pending.add(group)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._send_pending(), name="notify-ids-changed")

    async def _send_pending(self) -> None:
        try:
            await asyncio.sleep(self._window)
            while self._pending:
                groups, self._pending = self._pending, set()
                for group in groups:
                    members = self._members(group)
                    self.sent += len(members)
                    await notify_ids_changed(group, members)
        finally:
            self._task = None

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


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

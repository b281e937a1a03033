"""HEART_BEAT, UNREGISTER_CLIENT and the consumer-offset requests.

A consumer heartbeat does three things RocketMQ clients rely on: it (auto-)creates the group's
subscription config, creates the group's ``%RETRY%group`` topic so failed messages have somewhere
to go, and records the subscriptions the broker filters pulls with. The body is read as a Java
broker reads it (``rocketq.protocol.heartbeat``: enums by name or ordinal, numbers as strings),
so every official client's consumers get queues. A heartbeat that is still refused is answered
SYSTEM_ERROR and logged at WARNING, at most once per connection per interval, with the client id,
the group and the reason: a consumer that silently gets no queues is the costliest failure.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import orjson

from rocketq.broker.clienttable import ClientChannel, ClientManager
from rocketq.broker.filters import ConsumerFilters
from rocketq.broker.groups import GroupError, SubscriptionGroupManager, validate_group_name
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import codes
from rocketq.protocol import heartbeat as heartbeat_body
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    ConsumerGroupHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.heartbeat import HeartbeatError
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import MessageStore

log = logging.getLogger(__name__)


class ClientHandlers:
    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetManager,
        clients: ClientManager,
        behaviour: BrokerBehaviour,
        on_topic_created: Callable[[], Awaitable[None]],
        filters: ConsumerFilters | None = None,
    ) -> None:
        self._filters = filters
        self._store = store
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._clients = clients
        self._behaviour = behaviour
        self._on_topic_created = on_topic_created
        self._refusals = LogLimiter(log)

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.HEART_BEAT: self.heartbeat,
            RequestCode.UNREGISTER_CLIENT: self.unregister,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.consumer_list,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_offset,
        }

    async def heartbeat(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            data = heartbeat_body.decode(request.body)
            created = self._apply_heartbeat(conn, request, data)
        except HeartbeatError as exc:
            return self._refuse(conn, request, exc.client_id, exc.group, str(exc))
        if created:
            # clients may use the retry topic right away: the name servers must know it first
            await self._on_topic_created()
        return request.response(ResponseCode.SUCCESS)

    def _refuse(self, conn: Connection, request: RemotingCommand, client_id: str | None, group: str | None,
                reason: str) -> RemotingCommand:
        """SYSTEM_ERROR (what a Java broker's failed HeartbeatData decode ends in), and a line an
        operator can find when a client gets no queues: whose heartbeat, which group, why."""
        # keyed by the connection, not the client id it claims: one client is one connection,
        # and a client that invents a new id per heartbeat still gets one line per interval
        self._refusals.warning(conn.remote_addr, "heartbeat from client %s (%s) refused, group %s: %s",
                               client_id or "?", conn.remote_addr, group or "-", reason)
        return request.response(ResponseCode.SYSTEM_ERROR, f"heartbeat rejected: {reason}")

    def _apply_heartbeat(self, conn: Connection, request: RemotingCommand, data: heartbeat_body.HeartbeatData) -> bool:
        """Record the heartbeat; True when it created a retry topic."""
        for consumer in data.consumers:  # all or nothing: check every name before recording any
            try:
                validate_group_name(consumer.group_name)
            except GroupError as exc:
                raise HeartbeatError(str(exc), data.client_id, consumer.group_name) from None
        created = False
        channel = ClientChannel(conn, data.client_id, request.language, request.version)
        for consumer in data.consumers:
            group = consumer.group_name
            config = self._groups.find_or_create(group, auto_create=self._behaviour.auto_create_subscription_group)
            if config is not None and config.retry_queue_nums > 0:
                retry = codes.retry_topic(group)
                if self._topics.get(retry) is None:
                    self._topics.ensure(retry, config.retry_queue_nums)
                    created = True
            self._clients.register_consumer(
                group,
                channel,
                consume_type=consumer.consume_type,
                message_model=consumer.message_model,
                consume_from_where=consumer.consume_from_where,
                subscriptions=consumer.subscriptions,
                notify_enabled=config.notify_consumer_ids_changed_enable if config else True,
            )
            if self._filters is not None:
                self._filters.register(group, consumer.subscriptions, data.client_id)
        for group in data.producer_groups:
            self._clients.register_producer(group, channel)
        return created

    async def unregister(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = UnregisterClientRequestHeader.from_ext(request.ext_fields)
        if header.producer_group:
            self._clients.unregister_producer(header.producer_group, conn)
        if header.consumer_group:
            self._clients.unregister_consumer(header.consumer_group, conn)
        return request.response(ResponseCode.SUCCESS)

    async def consumer_list(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = ConsumerGroupHeader.from_ext(request.ext_fields)
        ids = self._clients.consumer_ids(header.consumer_group)
        if not ids:
            return request.response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}")
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps({"consumerIdList": ids}))

    async def query_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader.from_ext(request.ext_fields)
        offset = self._offsets.query(header.consumer_group, header.topic, header.queue_id)
        if offset < 0:
            # A group that never committed reads a fresh queue from its start (RocketMQ 4.x rule).
            if self._store.get_min_offset(header.topic, header.queue_id) <= 0 or header.set_zero_if_not_found:
                offset = 0
            else:
                return request.response(
                    ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
                )
        return request.response(ResponseCode.SUCCESS, None, OffsetResponseHeader(offset=offset).to_ext())

    async def update_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = UpdateConsumerOffsetRequestHeader.from_ext(request.ext_fields)
        if header.commit_offset < 0:
            return request.response(ResponseCode.SYSTEM_ERROR, f"commitOffset {header.commit_offset} is negative")
        self._offsets.commit(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        return request.response(ResponseCode.SUCCESS)

"""HEART_BEAT, UNREGISTER_CLIENT and the consumer-offset requests.

A consumer heartbeat does three things RocketMQ clients rely on: it (auto-)creates the group's
subscription config, creates the group's ``%RETRY%group`` topic so failed messages have somewhere
to go, and records the subscriptions the broker filters pulls with.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from rocketq.broker.clients import ClientChannel, ClientManager
from rocketq.broker.groups import GroupError, SubscriptionGroupManager, validate_group_name
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import codes, subscription
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    ConsumerGroupHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.subscription import SubscriptionError
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import MessageStore

log = logging.getLogger(__name__)


class HeartbeatError(ValueError):
    """The heartbeat body is not RocketMQ's HeartbeatData."""


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
    ) -> None:
        self._store = store
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._clients = clients
        self._behaviour = behaviour
        self._on_topic_created = on_topic_created

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
            data = _parse_heartbeat(request.body)
            created = self._apply_heartbeat(conn, request, data)
        except (HeartbeatError, SubscriptionError, GroupError) as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, f"heartbeat rejected: {exc}")
        if created:
            # clients may use the retry topic right away: the name servers must know it first
            await self._on_topic_created()
        return request.response(ResponseCode.SUCCESS)

    def _apply_heartbeat(self, conn: Connection, request: RemotingCommand, data: dict[str, Any]) -> bool:
        """Record the heartbeat; True when it created a retry topic."""
        created = False
        client_id = data["clientID"]
        for consumer in data.get("consumerDataSet") or []:
            group = _string(consumer, "groupName")
            validate_group_name(group)
            config = self._groups.find_or_create(group, auto_create=self._behaviour.auto_create_subscription_group)
            subs = [subscription.SubscriptionData.from_json(s) for s in consumer.get("subscriptionDataSet") or []]
            if config is not None and config.retry_queue_nums > 0:
                retry = codes.retry_topic(group)
                if self._topics.get(retry) is None:
                    self._topics.ensure(retry, config.retry_queue_nums)
                    created = True
            self._clients.register_consumer(
                group,
                ClientChannel(conn, client_id, request.language, request.version),
                consume_type=str(consumer.get("consumeType") or "CONSUME_PASSIVELY"),
                message_model=str(consumer.get("messageModel") or "CLUSTERING"),
                consume_from_where=str(consumer.get("consumeFromWhere") or "CONSUME_FROM_LAST_OFFSET"),
                subscriptions=subs,
                notify_enabled=config.notify_consumer_ids_changed_enable if config else True,
            )
        for producer in data.get("producerDataSet") or []:
            group = _string(producer, "groupName")
            self._clients.register_producer(group, ClientChannel(conn, client_id, request.language, request.version))
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


def _parse_heartbeat(body: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise HeartbeatError(f"body is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("clientID"), str) or not data["clientID"]:
        raise HeartbeatError("body needs a clientID string")
    for key in ("consumerDataSet", "producerDataSet"):
        value = data.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, dict) for v in value)):
            raise HeartbeatError(f"{key} must be a list of objects")
    return data


def _string(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise HeartbeatError(f"{key} must be a non-empty string")
    return value

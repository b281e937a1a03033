"""CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message its listener failed on.

The broker looks the message up by its CommitLog offset and stores a copy for redelivery, as
Apache RocketMQ's ``SendMessageProcessor.asyncConsumerSendMsgBack`` does:

- into ``%RETRY%<group>`` (created on demand with the group's ``retryQueueNums`` queues, RW)
  with ``DELAY`` = the requested ``delayLevel``, or ``3 + reconsumeTimes`` when it is 0, so the
  copy waits in SCHEDULE_TOPIC_XXXX (``rocketq.broker.schedule``) and the consumer, which
  subscribes its retry topic, gets it again after 10 s, 30 s, 1 m, ... with default levels;
- into ``%DLQ%<group>`` (1 queue, RW as in RocketMQ 4.9.2+, created on demand) once
  ``reconsumeTimes`` reaches the maximum — the header's ``maxReconsumeTimes`` from clients of
  protocol version >= 121, else the group's ``retryMaxTimes`` (16) — or when ``delayLevel < 0``.

A producer's plain send into ``%RETRY%<group>`` (the Java client's fallback when send-back
fails, and how orderly consumers dead-letter) is checked the same way (``route_retry_send``,
RocketMQ's ``handleRetryAndDLQ``): past the maximum it is stored in the DLQ instead.

The copy keeps body, flags and born fields, gets ``reconsumeTimes + 1``, ``RETRY_TOPIC`` (the
topic it was first consumed from, kept across retries) and ``ORIGIN_MESSAGE_ID`` (the first
copy's offset message id, kept across retries). Nothing is waited for beyond the store's put
(``WAIT=false``): the consumer commits its offset after this answer.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Final

from rocketq.broker import schedule
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import codes, messageproperties, storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader
from rocketq.protocol.messageerrors import MessageFormatError
from rocketq.protocol.messagetypes import MessageExt
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig, TopicConfig
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import MessageStore, PutRequest

log = logging.getLogger(__name__)

MAX_RECONSUME_HEADER_VERSION: Final = 121
"""RocketMQ's V3_4_9 ordinal: older clients' ``maxReconsumeTimes`` header is ignored."""
FIRST_RETRY_LEVEL: Final = 3
"""The broker's choice for retry n is level ``3 + n`` (10 s, 30 s, 1 m ... with defaults)."""
DLQ_QUEUE_NUMS: Final = 1


def max_reconsume_times(version: int, asked: int | None, group: SubscriptionGroupConfig) -> int:
    """The header's maximum from clients that send one (protocol >= 121), else the group's."""
    if version >= MAX_RECONSUME_HEADER_VERSION and asked is not None:
        return asked
    return group.retry_max_times


class SendBackHandlers:
    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        behaviour: BrokerBehaviour,
        broker_permission: Callable[[], int],
        max_delay_level: int,
        on_topic_created: Callable[[], Awaitable[None]],
    ) -> None:
        self._store = store
        self._topics = topics
        self._groups = groups
        self._behaviour = behaviour
        self._broker_permission = broker_permission
        self._max_level = max_delay_level
        self._on_topic_created = on_topic_created
        self.sent_to_retry = 0
        self.sent_to_dlq = 0

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.CONSUMER_SEND_MSG_BACK: self.send_back}

    async def send_back(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = ConsumerSendMsgBackRequestHeader.from_ext(request.ext_fields)
        group = self._groups.find_or_create(header.group, auto_create=self._behaviour.auto_create_subscription_group)
        if group is None:
            return request.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                    f"subscription group [{header.group}] does not exist")
        if not self._broker_permission() & codes.Perm.WRITE:
            return request.response(ResponseCode.NO_PERMISSION, "the broker sending message is forbidden")
        if group.retry_queue_nums <= 0:
            return request.response(ResponseCode.SUCCESS)  # RocketMQ: no retry queues, the message is dropped
        original = self._look_up(header.offset)
        if original is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}")
        max_times = max_reconsume_times(request.version, header.max_reconsume_times, group)
        to_dlq = header.delay_level < 0 or original.reconsume_times >= max_times
        if to_dlq:
            target = await self._topic(codes.dlq_topic(header.group), DLQ_QUEUE_NUMS)
        else:
            target = await self._topic(codes.retry_topic(header.group), group.retry_queue_nums)
        if not target.perm & codes.Perm.WRITE:
            return request.response(ResponseCode.NO_PERMISSION,
                                    f"the topic[{target.topic_name}] sending message is forbidden")
        level = 0 if to_dlq else (header.delay_level or FIRST_RETRY_LEVEL + original.reconsume_times)
        put = self._copy(original, target, level)
        result = await self._store.put(put)
        if not result.ok:
            return request.response(ResponseCode.SYSTEM_ERROR, result.status.name)
        if to_dlq:
            self.sent_to_dlq += 1
            log.info("message %s of group %s moved to %s after %d reconsumes", original.msg_id, header.group,
                     target.topic_name, original.reconsume_times)
        else:
            self.sent_to_retry += 1
        return request.response(ResponseCode.SUCCESS)

    def _look_up(self, offset: int) -> MessageExt | None:
        view = self._store.look_message_by_offset(offset)
        if view is None:
            return None
        try:
            return storedrecords.decode_stored_record(view, decompress=False)
        except MessageFormatError:
            return None

    async def route_retry_send(self, request: RemotingCommand,
                               header: SendMessageRequestHeader) -> SendMessageRequestHeader | RemotingCommand:
        """A producer's send into ``%RETRY%<group>`` (RocketMQ's ``handleRetryAndDLQ``).

        Java clients send there when CONSUMER_SEND_MSG_BACK failed, and orderly consumers to
        dead-letter a message: past the group's maximum (header ``reconsumeTimes`` against
        ``maxReconsumeTimes`` or ``retryMaxTimes``) the message goes to ``%DLQ%<group>`` queue 0
        with DELAY 0 instead. Answers the header to store with, or a refusal.
        """
        name = header.topic[len(codes.RETRY_GROUP_TOPIC_PREFIX):]
        group = self._groups.find_or_create(name, auto_create=self._behaviour.auto_create_subscription_group)
        if group is None:
            return request.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {name}")
        if (header.reconsume_times or 0) < max_reconsume_times(request.version, header.max_reconsume_times, group):
            return header
        dlq = await self._topic(codes.dlq_topic(name), DLQ_QUEUE_NUMS)
        props = messageproperties.decode_properties(header.properties or "")
        props[messageproperties.DELAY] = "0"
        self.sent_to_dlq += 1
        return dataclasses.replace(header, topic=dlq.topic_name, queue_id=0,
                                   properties=messageproperties.encode_properties(props))

    async def _topic(self, name: str, queue_nums: int) -> TopicConfig:
        existing = self._topics.get(name)
        if existing is not None:
            return existing
        created = self._topics.ensure(name, queue_nums, codes.PERM_READ_WRITE)
        await self._on_topic_created()  # as RocketMQ: registered at once, so consumers can route to it
        return created

    def _copy(self, original: MessageExt, target: TopicConfig, level: int) -> PutRequest:
        props = dict(original.properties)
        props.setdefault(messageproperties.RETRY_TOPIC, original.topic)
        props.setdefault(messageproperties.ORIGIN_MESSAGE_ID, original.offset_msg_id)
        props[messageproperties.WAIT] = "false"
        props[messageproperties.DELAY] = str(level)
        topic, queue_id = target.topic_name, random.randrange(max(1, target.write_queue_nums))
        if level > 0:
            scheduled = schedule.to_schedule(topic, queue_id, props, original.sys_flag, self._max_level)
            if scheduled is not None:
                topic, queue_id, props = scheduled
        else:
            queue_id = 0
        return PutRequest(
            topic, queue_id, original.body, original.flag, props, original.sys_flag, original.born_timestamp,
            original.born_host, original.reconsume_times + 1,
        )

"""ACK_MESSAGE (200051), BATCH_ACK_MESSAGE (200151), CHANGE_MESSAGE_INVISIBLETIME (200053): the
answers to a pop.

Both name one popped message by its topic, queue, queue offset and the ``extraInfo`` the pop
answer gave it (``rocketq.protocol.popinfo``). The topic is the one the message really lives in:
a redelivered message's ``%RETRY%<group>_<topic>``, which clients derive from extraInfo's topic
type (rocketq also accepts the plain topic and derives it the same way).

* ACK, non-orderly: an ack record goes to the checkpoint's revive queue
  (``rocketq.broker.revivelog``); the revive service then never redelivers that offset.
  Orderly (reviveQid 999): the order bookkeeping marks the offset consumed, the group's offset
  moves to the first message still un-acked, and pops held on the topic are woken.
* BATCH_ACK_MESSAGE (200151): the same for many offsets at once (``rocketq.protocol.popbodies``);
  non-orderly, one ``bAck`` record per checkpoint named.
* CHANGE_MESSAGE_INVISIBLETIME, non-orderly (RocketMQ's ``appendCheckPointThenAckOrigin``): a new
  one-message checkpoint ``(start = offset, popTime = now, invisibleTime = new)`` is stored first,
  then an ack of the old one, so a crash between the two redelivers at worst once more, never
  loses the message. The answer's ``popTime``/``invisibleTime``/``reviveQid`` make the new
  extraInfo; the old one is dead. Orderly: that offset's next-visible time moves.

An offset outside the queue gets NO_MESSAGE, a queue outside the topic MESSAGE_ILLEGAL, an
extraInfo that does not parse MESSAGE_ILLEGAL, as RocketMQ answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.orderinfo import OrderInfoTable
from rocketq.broker.revivelog import AckRecord, CheckPoint, ReviveWriter
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import codes, popbodies, popinfo
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.popheaders import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
)
from rocketq.protocol.popinfo import ExtraInfo, PopInfoError
from rocketq.protocol.sharedbodies import BodyError
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import MessageStore


class PopAckHandlers:
    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        offsets: ConsumerOffsetManager,
        revive: ReviveWriter,
        order_infos: OrderInfoTable,
        *,
        broker_name: str,
        wake: Callable[[str], None],
    ) -> None:
        self._store = store
        self._topics = topics
        self._offsets = offsets
        self._revive = revive
        self._order = order_infos
        self._broker_name = broker_name
        self._wake = wake
        self.acked = 0
        """Offsets acked (ACK_MESSAGE, BATCH_ACK_MESSAGE) since start (a metric)."""
        """Re-runs the pops held on a topic (an orderly ack may unblock its queue)."""

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.ACK_MESSAGE: self.ack, RequestCode.BATCH_ACK_MESSAGE: self.batch_ack,
                RequestCode.CHANGE_MESSAGE_INVISIBLETIME: self.change_invisible}

    def _located(self, request: RemotingCommand, header: AckMessageRequestHeader | ChangeInvisibleTimeRequestHeader
                 ) -> tuple[str, ExtraInfo] | RemotingCommand:
        """The real topic and the parsed extraInfo, or the refusal."""
        try:
            extra = ExtraInfo.parse(header.extra_info)
        except PopInfoError as exc:
            return request.response(ResponseCode.MESSAGE_ILLEGAL, f"extraInfo is illegal: {exc}")
        topic = header.topic
        if not topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX):
            topic = popinfo.real_topic(extra.topic_type, topic, header.consumer_group)
        config = self._topics.get(topic)
        if config is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if not 0 <= header.queue_id < config.read_queue_nums:
            return request.response(ResponseCode.MESSAGE_ILLEGAL, f"queueId[{header.queue_id}] is illegal, "
                                    f"topic:[{topic}] topicConfig.readQueueNums:[{config.read_queue_nums}]")
        qid = header.queue_id
        low, high = self._store.get_min_offset(topic, qid), self._store.get_max_offset(topic, qid)
        if not low <= header.offset < high:
            return request.response(ResponseCode.NO_MESSAGE, f"offset is illegal, key:{topic}@{header.queue_id}, "
                                    f"commit:{header.offset}, store:{low},{high}")
        if not extra.orderly and not 0 <= extra.revive_qid < self._revive.queue_nums:
            return request.response(ResponseCode.MESSAGE_ILLEGAL, f"reviveQid {extra.revive_qid} is illegal")
        return topic, extra

    async def ack(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = AckMessageRequestHeader.from_ext(request.ext_fields)
        located = self._located(request, header)
        if isinstance(located, RemotingCommand):
            return located
        topic, extra = located
        if extra.orderly:
            self._ack_orderly(topic, header.consumer_group, header.queue_id, header.offset, header.topic)
            self.acked += 1
            return request.response(ResponseCode.SUCCESS)
        record = AckRecord(header.offset, extra.ck_queue_offset, header.consumer_group, topic, header.queue_id,
                           extra.pop_time, extra.broker_name)
        stored = await self._revive.ack(record, extra.revive_qid)
        if not stored.ok:
            return request.response(ResponseCode.SYSTEM_ERROR, f"ack not stored: {stored.status.name}")
        self.acked += 1
        return request.response(ResponseCode.SUCCESS)

    async def batch_ack(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """BATCH_ACK_MESSAGE: each BatchAck as the ACKs of its offsets, one revive record per checkpoint.

        As RocketMQ, every entry is applied that can be; the answer carries the last refusal.
        """
        try:
            broker_name, acks = popbodies.decode_batch_ack_body(request.body or b"")
        except BodyError as exc:
            return request.response(ResponseCode.MESSAGE_ILLEGAL, str(exc))
        answer = request.response(ResponseCode.SUCCESS)
        for entry in acks:
            refusal = await self._apply_batch_ack(request, broker_name or self._broker_name, entry)
            if refusal is not None:
                answer = refusal
        return answer

    async def _apply_batch_ack(self, request: RemotingCommand, broker_name: str,
                               entry: popbodies.BatchAck) -> RemotingCommand | None:
        topic = entry.topic
        if not topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX):
            topic = popinfo.real_topic(entry.topic_type, topic, entry.group)
        config = self._topics.get(topic)
        if config is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        qid = entry.queue_id
        low, high = self._store.get_min_offset(topic, qid), self._store.get_max_offset(topic, qid)
        offsets = tuple(o for o in entry.offsets if low <= o < high)
        if not 0 <= qid < config.read_queue_nums or not offsets:
            return request.response(ResponseCode.NO_MESSAGE, f"offsets are illegal, key:{topic}@{qid}")
        if entry.revive_qid == popinfo.ORDER_REVIVE_QID:
            for offset in offsets:
                self._ack_orderly(topic, entry.group, qid, offset, entry.topic)
            self.acked += len(offsets)
            return None
        if not 0 <= entry.revive_qid < self._revive.queue_nums:
            return request.response(ResponseCode.MESSAGE_ILLEGAL, f"reviveQid {entry.revive_qid} is illegal")
        record = AckRecord(offsets[0], entry.start_offset, entry.group, topic, qid, entry.pop_time, broker_name,
                           offsets)
        stored = await self._revive.ack(record, entry.revive_qid)
        if not stored.ok:
            return request.response(ResponseCode.SYSTEM_ERROR, f"ack not stored: {stored.status.name}")
        self.acked += len(offsets)
        return None

    def _ack_orderly(self, topic: str, group: str, qid: int, offset: int, asked_topic: str) -> None:
        info = self._order.ack((topic, group, qid), offset)
        if info is None:
            return
        committed = self._offsets.query(group, topic, qid)
        self._offsets.commit(group, topic, qid, max(committed, info.commit_offset()))
        if info.done:
            self._wake(asked_topic)

    async def change_invisible(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = ChangeInvisibleTimeRequestHeader.from_ext(request.ext_fields)
        located = self._located(request, header)
        if isinstance(located, RemotingCommand):
            return located
        topic, extra = located
        now = int(time.time() * 1000)
        answer = ChangeInvisibleTimeResponseHeader(pop_time=now, invisible_time=header.invisible_time,
                                                   revive_qid=extra.revive_qid).to_ext()
        if extra.orderly:
            self._order.change_invisible((topic, header.consumer_group, header.queue_id), header.offset,
                                         now + header.invisible_time)
            return request.response(ResponseCode.SUCCESS, None, answer)
        ck = CheckPoint(header.offset, now, header.invisible_time, header.queue_id, topic, header.consumer_group,
                        self._broker_name, [0])
        stored = await self._revive.checkpoint(ck, extra.revive_qid)
        if not stored.ok:
            return request.response(ResponseCode.SYSTEM_ERROR, f"checkpoint not stored: {stored.status.name}")
        old = AckRecord(header.offset, extra.ck_queue_offset, header.consumer_group, topic, header.queue_id,
                        extra.pop_time, extra.broker_name)
        acked = await self._revive.ack(old, extra.revive_qid)
        if not acked.ok:
            return request.response(ResponseCode.SYSTEM_ERROR, f"ack of the old checkpoint not stored: "
                                    f"{acked.status.name}")
        return request.response(ResponseCode.SUCCESS, None, answer)

"""Transactional messages on the broker: half messages, END_TRANSACTION and op messages.

A RocketMQ transaction is a message that becomes visible only once its producer's local
transaction has committed. rocketq keeps Apache RocketMQ 4.9's design and names exactly, so any
RocketMQ client works unchanged:

1. **Half message.** The producer sends the message with the properties ``TRAN_MSG=true`` and
   ``PGROUP=<producer group>`` (and sysFlag type PREPARED). The send path (``send.py``) passes
   it through ``to_half``: it is stored in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0, its real topic
   and queue kept in ``REAL_TOPIC``/``REAL_QID``, the transaction bits of its sysFlag cleared.
   No consumer subscribes that topic. The answer's queueOffset is the *half-queue* offset and
   its msgId the half's offset id; the two name the half message from now on.
2. **END_TRANSACTION (37).** The producer ends the transaction, usually oneway. COMMIT (8)
   writes the message again, now to its real topic and queue, with sysFlag type COMMIT and
   ``preparedTransactionOffset`` = the half's physical offset; ROLLBACK (12) writes nothing.
   Type 0 (unknown) does nothing and is not answered.
3. **Op message.** Either way, one message in ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (same queue id as
   the half, tag ``d``, body the half-queue offset in ASCII) records that the half is finished.
   The check loop (``transactionchecks.py``) reads these to know which halves still need their
   producer asked.

A committed message whose half carries ``DELAY`` > 0 is delayed from the commit on, as RocketMQ's
store does for type COMMIT: it goes through the same rewrite as a delayed send
(``schedule.to_schedule``) into ``SCHEDULE_TOPIC_XXXX`` and reaches its topic when its level is
due. (Java's TransactionMQProducer drops DELAY before sending; other clients keep it.)

The committed message keeps the half's properties string, TRAN_MSG, PGROUP, REAL_TOPIC and
REAL_QID included, as RocketMQ 4.9 stores it. An END_TRANSACTION whose group or offsets do not
match the half it names is refused with RocketMQ's remarks; a repeated END_TRANSACTION is not
detected (RocketMQ does not either): delivery stays at-least-once.
"""

from __future__ import annotations

import logging
import time
from typing import Final

from rocketq.broker import schedule
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import codes, message, msgid
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import EndTransactionRequestHeader
from rocketq.protocol.message import MessageExt, MessageSysFlag
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import PutRequest, PutResult, PutStatus

log = logging.getLogger(__name__)

HALF_TOPIC: Final = codes.TRANS_HALF_TOPIC
OP_TOPIC: Final = codes.TRANS_OP_HALF_TOPIC
HALF_QUEUE_ID: Final = 0
"""Every half message goes to queue 0 of the half topic (RocketMQ 4.9)."""
SYS_TRANS_GROUP: Final = "CID_RMQ_SYS_TRANS"
"""The internal consumer group whose committed offsets mark how far halves and ops were read."""
REMOVE_TAG: Final = "d"
"""The op message's tag: the half named by its body is finished (``TransactionalMessageUtil.REMOVETAG``)."""

STORED_STATUSES: Final = frozenset({
    PutStatus.PUT_OK, PutStatus.FLUSH_DISK_TIMEOUT, PutStatus.FLUSH_SLAVE_TIMEOUT, PutStatus.SLAVE_NOT_AVAILABLE,
})
"""Put outcomes after which a commit counts as done (the message is in the CommitLog)."""


def is_transactional(put: PutRequest) -> bool:
    """The producer sent a half message: TRAN_MSG=true (RocketMQ decides by the property alone)."""
    props = put.properties
    value = message.property_value(props, message.TRAN_MSG) if isinstance(props, str) else props.get(message.TRAN_MSG)
    return value == "true"


def to_half(put: PutRequest, topics: TopicConfigManager) -> PutRequest:
    """The half message stored for a transactional send (``parseHalfMessageInner``).

    The stored properties gain REAL_TOPIC and REAL_QID. The half topic is created (1 queue,
    read-write) on its first use, as RocketMQ does.
    """
    topics.ensure(HALF_TOPIC, 1)
    props = message.decode_properties(put.properties) if isinstance(put.properties, str) else dict(put.properties)
    half_props = {**props, message.REAL_TOPIC: put.topic, message.REAL_QID: str(put.queue_id)}
    return PutRequest(
        HALF_TOPIC, HALF_QUEUE_ID, put.body, put.flag, message.encode_properties(half_props),
        message.with_transaction_type(put.sys_flag, MessageSysFlag.TRANSACTION_NOT_TYPE),
        put.born_timestamp, put.born_host, put.reconsume_times, 0, put.tags_code, put.index_keys,
    )


def committed(half: MessageExt, commit_log_offset: int,
              max_delay_level: int = schedule.DEFAULT_MAX_DELAY_LEVEL) -> PutRequest:
    """The message a COMMIT writes: the half, back in its real topic and queue, or, when it
    carries DELAY, in SCHEDULE_TOPIC_XXXX until its level is due (``schedule.to_schedule``)."""
    props = half.properties
    topic, queue_id = props.get(message.REAL_TOPIC, half.topic), int(props.get(message.REAL_QID, "0"))
    sys_flag = message.with_transaction_type(half.sys_flag, MessageSysFlag.TRANSACTION_COMMIT_TYPE)
    if message.DELAY in props:
        scheduled = schedule.to_schedule(topic, queue_id, props, sys_flag, max_delay_level)
        if scheduled is not None:
            topic, queue_id, props = scheduled
    return PutRequest(
        topic,
        queue_id,
        half.body,
        half.flag,
        message.encode_properties(props),
        sys_flag,
        half.born_timestamp,
        half.born_host,
        half.reconsume_times,
        commit_log_offset,
    )


class HalfLog:
    """Reading half messages and writing op messages: what END_TRANSACTION and the check loop share."""

    def __init__(self, store: MessageStore, topics: TopicConfigManager, born_host: tuple[str, int]) -> None:
        self.store = store
        self.topics = topics
        self.born_host = born_host
        """The broker's own address: born and store host of the op messages it writes."""
        self._uniq_ids = msgid.UniqIdGenerator()

    def read_half(self, commit_log_offset: int) -> MessageExt | None:
        """The half message stored at a CommitLog offset, or None when there is none."""
        view = self.store.look_message_by_offset(commit_log_offset)
        if view is None:
            return None
        try:
            found = message.decode_stored_record(view, decompress=False)
        except message.MessageFormatError:
            return None
        return found if found.topic == HALF_TOPIC else None

    async def write_op(self, half_queue_id: int, half_queue_offset: int, now_ms: int) -> bool:
        """Record that the half at ``half_queue_offset`` is finished; False if the store refused."""
        self.topics.ensure(OP_TOPIC, 1)
        props = {message.TAGS: REMOVE_TAG, message.WAIT: "false", message.UNIQ_KEY: self._uniq_ids.next_id()}
        result = await self.store.put(PutRequest(
            OP_TOPIC, half_queue_id, str(half_queue_offset).encode(), 0, message.encode_properties(props), 0,
            now_ms, self.born_host,
        ))
        if result.status not in STORED_STATUSES:
            log.error("writing the op message for half offset %d failed: %s %s", half_queue_offset,
                      result.status.name, result.error)
            return False
        return True

    async def put(self, request: PutRequest) -> PutResult:
        return await self.store.put(request)


class TransactionHandlers:
    """END_TRANSACTION: commit or roll back the half message a producer names."""

    def __init__(self, halves: HalfLog, *, is_slave: bool, put_answers: dict[PutStatus, tuple[int, str | None]],
                 max_delay_level: int = schedule.DEFAULT_MAX_DELAY_LEVEL) -> None:
        self._halves = halves
        self._max_delay_level = max_delay_level
        """Delay levels above this are clamped to it (messageDelayLevel's length)."""
        self._is_slave = is_slave
        self._put_answers = put_answers
        self._refusals = LogLimiter(log)

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.END_TRANSACTION: self.end_transaction}

    async def end_transaction(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        header = EndTransactionRequestHeader.from_ext(request.ext_fields)  # HeaderError: SYSTEM_ERROR
        if self._is_slave:
            return request.response(ResponseCode.SLAVE_NOT_AVAILABLE,
                                    "Message store is slave mode, so end transaction is forbidden.")
        kind = header.commit_or_rollback
        if kind == MessageSysFlag.TRANSACTION_NOT_TYPE:
            return None  # the producer does not know yet: the check loop will ask again
        if kind not in (MessageSysFlag.TRANSACTION_COMMIT_TYPE, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE):
            return request.response(ResponseCode.SYSTEM_ERROR, "commitOrRollback field wrong")
        half = self._halves.read_half(header.commit_log_offset)
        if half is None:
            return self._refuse(conn, request, header, "Find prepared transaction message failed")
        wrong = _mismatch(half, header)
        if wrong is not None:
            return self._refuse(conn, request, header, wrong)
        if kind == MessageSysFlag.TRANSACTION_COMMIT_TYPE:
            result = await self._halves.put(committed(half, header.commit_log_offset, self._max_delay_level))
            if result.status not in STORED_STATUSES:
                code, remark = self._put_answers.get(result.status, (ResponseCode.SYSTEM_ERROR, None))
                return request.response(code, remark or result.error or result.status.name)
        await self._halves.write_op(half.queue_id, half.queue_offset, _now_ms())
        return request.response(ResponseCode.SUCCESS)

    def _refuse(self, conn: Connection, request: RemotingCommand, header: EndTransactionRequestHeader,
                remark: str) -> RemotingCommand:
        self._refusals.warning(conn.remote_addr, "END_TRANSACTION from %s (group %s, msgId %s) refused: %s",
                               conn.remote_addr, header.producer_group, header.msg_id, remark)
        return request.response(ResponseCode.SYSTEM_ERROR, remark)


def _mismatch(half: MessageExt, header: EndTransactionRequestHeader) -> str | None:
    """RocketMQ's ``checkPrepareMessage``: the remark naming the first field that differs."""
    if half.properties.get(message.PGROUP) != header.producer_group:
        return "The producer group wrong"
    if half.queue_offset != header.tran_state_table_offset:
        return "The transaction state table offset wrong"
    if half.commit_log_offset != header.commit_log_offset:
        return "The commit log offset wrong"
    return None


def _now_ms() -> int:
    return time.time_ns() // 1_000_000

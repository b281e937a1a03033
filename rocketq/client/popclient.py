"""POP against one broker address: pop, ack, change invisible time, forward to the DLQ, and the
broker's queue assignment (QUERY_ASSIGNMENT / SET_MESSAGE_REQUEST_MODE).

The thin, stateless client the gRPC proxy (RocketMQ's CLUSTER mode talks remoting to brokers)
and the SDK's ``SimpleConsumer`` build on: each call is one request over a ``RemotingClient``
(shared with the caller, or owned), with the typed headers of ``rocketq.protocol.popheaders``
and the answer decoding of ``rocketq.protocol.poprequests``. It chooses no broker and retries
nothing; errors are ``BrokerError`` (an error code), ``ProtocolError`` (an answer that does not
decode) or the transport's ``RemotingError``. Times are milliseconds, as on the wire; the RPC
timeout is seconds (a long-polling pop waits ``poll_ms`` on top of it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from rocketq.client.errors import BrokerError, ProtocolError
from rocketq.protocol import messageerrors, popbodies
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader, HeaderError
from rocketq.protocol.popbodies import MODE_POP, MessageRequestMode, QueryAssignmentRequest
from rocketq.protocol.popheaders import (
    ALL_QUEUES,
    INIT_MODE_MAX,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketq.protocol.popinfo import PopInfoError
from rocketq.protocol.poprequests import POP_STATUS_BY_CODE, PoppedMessage, PopResult, PopStatus, decode_pop_answer
from rocketq.protocol.queues import MessageQueue
from rocketq.protocol.requests import command
from rocketq.protocol.sharedbodies import BodyError
from rocketq.remoting.client import RemotingClient

DEFAULT_TIMEOUT_S: Final = 3.0
DLQ_DELAY_LEVEL: Final = -1
"""CONSUMER_SEND_MSG_BACK's delay level that sends a message straight to ``%DLQ%<group>``."""


class PopClient:
    def __init__(self, remoting: RemotingClient | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._owned = remoting is None
        self._rc = remoting or RemotingClient(name="pop-client")
        self.timeout_s = timeout_s

    async def close(self) -> None:
        if self._owned:
            await self._rc.close()

    async def pop(
        self, addr: str, broker_name: str, group: str, topic: str, *, max_nums: int = 32, invisible_ms: int = 60_000,
        poll_ms: int = 0, queue_id: int = ALL_QUEUES, expression: str = "*", expression_type: str = "TAG",
        order: bool = False, attempt_id: str | None = None, init_mode: int = INIT_MODE_MAX,
    ) -> PopResult:
        """POP_MESSAGE: up to ``max_nums`` messages, invisible to other pops for ``invisible_ms``."""
        header = PopMessageRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, max_msg_nums=max_nums, invisible_time=invisible_ms,
            poll_time=poll_ms, born_time=int(time.time() * 1000), init_mode=init_mode, exp_type=expression_type,
            exp=expression, order=order, attempt_id=attempt_id)
        response = await self._rc.invoke(addr, command(RequestCode.POP_MESSAGE, header),
                                         self.timeout_s + poll_ms / 1000)
        status = POP_STATUS_BY_CODE.get(response.code)
        if status is None:
            raise BrokerError(response.code, response.remark, addr)
        if status is not PopStatus.FOUND:
            return PopResult(status, [])
        try:
            answer = PopMessageResponseHeader.from_ext(response.ext_fields)
            messages = decode_pop_answer(answer, response.body or b"", topic=topic, group=group,
                                         broker_name=broker_name, order=order)
        except (HeaderError, PopInfoError, messageerrors.MessageFormatError) as exc:
            raise ProtocolError(f"{addr} answered POP_MESSAGE with an unreadable answer: {exc}") from None
        return PopResult(status, messages, answer.pop_time, answer.invisible_time, answer.revive_qid, answer.rest_num)

    async def ack(self, addr: str, group: str, message: PoppedMessage) -> None:
        """ACK_MESSAGE: the message is consumed; it will not be delivered again."""
        await self.ack_extra_info(addr, group, message.real_topic, message.message.queue_id,
                                  message.message.queue_offset, message.extra_info.build())

    async def ack_extra_info(self, addr: str, group: str, real_topic: str, queue_id: int, offset: int,
                             extra_info: str) -> None:
        """ACK_MESSAGE from the parts a receipt handle carries (what the gRPC proxy holds)."""
        header = AckMessageRequestHeader(consumer_group=group, topic=real_topic, queue_id=queue_id,
                                         extra_info=extra_info, offset=offset)
        response = await self._rc.invoke(addr, command(RequestCode.ACK_MESSAGE, header), self.timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError(response.code, response.remark, addr)

    async def batch_ack(self, addr: str, broker_name: str, group: str, messages: Sequence[PoppedMessage]) -> None:
        """BATCH_ACK_MESSAGE: ack many messages of one broker in one request (one entry per checkpoint)."""
        entries: dict[tuple[str, int, int, int, int], list[PoppedMessage]] = {}
        for m in messages:
            e = m.extra_info
            entries.setdefault((m.real_topic, e.queue_id, e.ck_queue_offset, e.pop_time, e.revive_qid), []).append(m)
        acks = [popbodies.BatchAck(
            group, ms[0].message.topic, ms[0].extra_info.topic_type, so, qid, rq, pt, ms[0].extra_info.invisible_time,
            tuple(m.extra_info.queue_offset for m in ms)) for (_t, qid, so, pt, rq), ms in entries.items()]
        request = command(RequestCode.BATCH_ACK_MESSAGE, None, popbodies.encode_batch_ack_body(broker_name, acks))
        response = await self._rc.invoke(addr, request, self.timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError(response.code, response.remark, addr)

    async def change_invisible_time(self, addr: str, group: str, message: PoppedMessage,
                                    invisible_ms: int) -> PoppedMessage:
        """CHANGE_MESSAGE_INVISIBLETIME: visible again ``invisible_ms`` from now. The answer is
        the message with its new extraInfo; the old one no longer acks it."""
        old = message.extra_info
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=group, topic=message.real_topic, queue_id=message.message.queue_id,
            extra_info=old.build(), offset=message.message.queue_offset, invisible_time=invisible_ms)
        response = await self._rc.invoke(addr, command(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header),
                                         self.timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError(response.code, response.remark, addr)
        try:
            answer = ChangeInvisibleTimeResponseHeader.from_ext(response.ext_fields)
        except HeaderError as exc:
            raise ProtocolError(f"{addr} answered CHANGE_MESSAGE_INVISIBLETIME with a bad header: {exc}") from None
        queue_offset = message.message.queue_offset
        start = old.ck_queue_offset if old.orderly else queue_offset  # the new checkpoint starts at the message
        extra = type(old)(start, answer.pop_time, answer.invisible_time, answer.revive_qid, old.topic_type,
                          old.broker_name, old.queue_id, queue_offset)
        return PoppedMessage(message.message, extra, message.real_topic)

    async def forward_to_dlq(self, addr: str, group: str, message: PoppedMessage, max_reconsume_times: int) -> None:
        """Store the message in ``%DLQ%<group>`` (CONSUMER_SEND_MSG_BACK, delay level -1), as the
        gRPC proxy's ForwardMessageToDeadLetterQueue does; then ack it to stop redelivery."""
        msg = message.message
        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset, group=group, delay_level=DLQ_DELAY_LEVEL, origin_msg_id=msg.msg_id,
            origin_topic=msg.topic, max_reconsume_times=max_reconsume_times)
        response = await self._rc.invoke(addr, command(RequestCode.CONSUMER_SEND_MSG_BACK, header), self.timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError(response.code, response.remark, addr)
        await self.ack(addr, group, message)

    async def query_assignment(
        self, addr: str, topic: str, group: str, client_id: str, *, strategy: str = "AVG",
        message_model: str = "CLUSTERING",
    ) -> list[tuple[MessageQueue, str]]:
        """QUERY_ASSIGNMENT: the queues the broker assigns ``client_id`` of ``group`` (queue id -1
        means every queue of that broker) and how to consume each, ``"PULL"`` or ``"POP"``. The
        broker knows the group's clients from their heartbeats."""
        body = QueryAssignmentRequest(topic, group, client_id, strategy, message_model).encode()
        response = await self._rc.invoke(addr, command(RequestCode.QUERY_ASSIGNMENT, None, body), self.timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError(response.code, response.remark, addr)
        try:
            return popbodies.decode_assignments(response.body or b"")
        except BodyError as exc:
            raise ProtocolError(f"{addr} answered QUERY_ASSIGNMENT with an unreadable body: {exc}") from None

    async def set_message_request_mode(self, addr: str, topic: str, group: str, mode: str = MODE_POP,
                                       pop_share_queue_num: int = 0) -> None:
        """SET_MESSAGE_REQUEST_MODE: ``group`` consumes ``topic`` by ``"PULL"`` or ``"POP"`` from now on
        (kept by the broker); for POP, ``pop_share_queue_num`` more clients share each queue."""
        body = MessageRequestMode(topic, group, mode, pop_share_queue_num).encode()
        response = await self._rc.invoke(addr, command(RequestCode.SET_MESSAGE_REQUEST_MODE, None, body),
                                         self.timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError(response.code, response.remark, addr)

"""SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE: from a frame to a CommitLog append.

The checks run in RocketMQ's order — broker accepting sends, writable, topic name, topic exists
(or may be auto-created from TBW102), queue id, size — and each refusal carries RocketMQ's
response code so any RocketMQ client reacts as it would to Apache RocketMQ. Flow control is a
protocol answer: past ``sendThreadPoolQueueCapacity`` sends in flight, or while the store
reports its page cache busy, the broker answers SYSTEM_BUSY at once and the client retries
elsewhere, instead of queueing without limit.

A refused send (a bad header, an illegal topic, a missing topic, an illegal message) is logged at
WARNING naming the producer's address, group, topic and the answer, at most once per producer
address per interval (``rocketq.ratelimit``), so an operator can see why a producer fails.

Each message's properties are decoded once (that is their validation, and it answers the
TRAN_MSG/DELAY/TAGS/UNIQ_KEY/KEYS questions) and, when they are in canonical form, stored as
the text the producer sent with CLUSTER appended, instead of being encoded again.

The sends of one socket read arrive together (``send_group``, via ``rocketq.remoting.grouping``):
each is checked and encoded alone, then all are stored in one ``MessageStore.put_group`` (one
flush wait), and a SUCCESS is answered from a template (``sendanswers``). ``_replicated`` is the
one hook between storing and answering, for a single send and for every send of a group.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from rocketq.broker import schedule, sendanswers, transactions
from rocketq.broker.plainsend import plain_put
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfig, TopicConfigManager, TopicError, validate_topic_name
from rocketq.protocol import batchbodies, codes, message
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    HeaderError,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    send_header_from_v2,
)
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.remoting.grouping import Answer, GroupedHandler
from rocketq.store import results
from rocketq.store.messagestore import MessageStore, PutRequest, PutResult, PutStatus
from rocketq.store.results import BatchPutRequest

log = logging.getLogger(__name__)

_WRITE: Final = int(codes.Perm.WRITE)
"""The permission bit as a plain int: ``int & IntFlag`` runs enum code on every send."""
_SEND_MESSAGE: Final = int(RequestCode.SEND_MESSAGE)
"""The one send code whose header has the long names (V2 and batches have the short ones)."""
MAX_CACHED_NAMES: Final = 10_000
"""Validated topic names and parsed peer addresses kept; the caches are emptied when full."""

SYSTEM_TOPICS_NOT_FOR_SEND = frozenset(
    {codes.AUTO_CREATE_TOPIC_KEY, codes.SCHEDULE_TOPIC, codes.TRANS_HALF_TOPIC, codes.TRANS_OP_HALF_TOPIC}
)

NOT_REFUSALS: Final = frozenset({
    ResponseCode.SUCCESS, ResponseCode.SYSTEM_BUSY, ResponseCode.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE,
})
"""Answers that say nothing wrong about the request: no warning is logged for them (flow control
is the broker's load, the timeouts are its disks' and slaves')."""

PUT_STATUS_TO_RESPONSE: dict[PutStatus, tuple[int, str | None]] = {
    PutStatus.PUT_OK: (ResponseCode.SUCCESS, None),
    PutStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    PutStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    PutStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    PutStatus.MESSAGE_ILLEGAL: (
        ResponseCode.MESSAGE_ILLEGAL,
        "the message is illegal, maybe msg body or properties length not matched",
    ),
    PutStatus.PROPERTIES_SIZE_EXCEEDED: (ResponseCode.MESSAGE_ILLEGAL, "the message properties are too long"),
    PutStatus.SERVICE_NOT_AVAILABLE: (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now, maybe disk full or the broker is a slave",
    ),
    PutStatus.OS_PAGECACHE_BUSY: (
        ResponseCode.SYSTEM_BUSY,
        "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
    ),
    PutStatus.DISK_FULL: (ResponseCode.SERVICE_NOT_AVAILABLE, "disk usage above the high-water mark: writes refused"),
}


class ReplicaWait(Protocol):
    """What a SYNC_MASTER send waits for after the store (``rocketq.ha.service.HAService``)."""

    async def wait_for_slave(self, requests: list[PutRequest] | BatchPutRequest, result: PutResult) -> PutResult: ...


RetryRouter = Callable[[RemotingCommand, SendMessageRequestHeader],
                       Awaitable[SendMessageRequestHeader | RemotingCommand]]


_Admitted = tuple[int, RemotingCommand, SendMessageRequestHeader | None, int, "list[PutRequest] | BatchPutRequest"]
"""A send of a group that passed the checks: (index in the group, request, header — None for a
plain send, read without one —, queue id, records)."""


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    cluster: str
    broker_name: str
    host: str
    port: int
    writable: bool


class SendHandlers:
    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        behaviour: BrokerBehaviour,
        identity: BrokerAddress,
        on_topic_created: Callable[[], Awaitable[None]],
        replication: ReplicaWait | None = None,
        max_delay_level: int = schedule.DEFAULT_MAX_DELAY_LEVEL,
        write_gate: Callable[[], str | None] | None = None,
    ) -> None:
        self._store = store
        self._replication = replication
        """SYNC_MASTER: holds each stored send until a slave has it (rocketq.ha)."""
        self._write_gate = write_gate
        """DLedger: why this member takes no sends now (SERVICE_NOT_AVAILABLE's remark), or None."""
        self._topics = topics
        self._behaviour = behaviour
        self._identity = identity
        self._in_flight = 0
        self._on_topic_created = on_topic_created
        self._cluster_entry = f"{message.CLUSTER}{message.NAME_VALUE_SEPARATOR}{identity.cluster}" \
                              f"{message.PROPERTY_SEPARATOR}"
        self._valid_topics: set[str] = set()
        """Topic names that passed ``validate_topic_name`` (the check is a regex per send)."""
        self._born_hosts: dict[str, tuple[str, int]] = {}
        self.broker_permission = behaviour.broker_permission
        self._refusals = LogLimiter(log)
        """Refused sends, one line per producer address and interval."""
        self._max_delay_level = max_delay_level
        """Delay levels above this are clamped to it (messageDelayLevel's length)."""
        self.retry_router: RetryRouter | None = None
        """Routes sends into %RETRY%group past the group's maximum to its DLQ (broker.sendback)."""

    def handlers(self) -> dict[int, Handler]:
        grouped = GroupedHandler(self.send, self.send_group, self.send_group_now)
        return {
            RequestCode.SEND_MESSAGE: grouped,
            RequestCode.SEND_MESSAGE_V2: grouped,
            RequestCode.SEND_BATCH_MESSAGE: grouped,
        }

    async def send(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = self._header(conn, request)  # HeaderError: the dispatcher answers SYSTEM_ERROR
        answer = await self._send(conn, request, header)
        self._note_refusal(conn, header, answer)
        return answer

    async def send_group(self, conn: Connection, requests: list[RemotingCommand]) -> list[Answer]:
        """The sends of one read (``rocketq.remoting.grouping``): each checked and encoded as
        ``send`` does, then stored together (``MessageStore.put_group``), answered in order.

        A send that must wait before it can be stored (its topic is created now, or a retry
        topic's send is routed) runs through ``send`` after those before it are stored, so a
        connection's messages are stored in the order they came.
        """
        answers: list[Answer] = [None] * len(requests)
        admitted: list[_Admitted] = []
        for i, request in enumerate(requests):
            try:
                header = self._header(conn, request)
            except HeaderError as exc:
                answers[i] = request.response(ResponseCode.SYSTEM_ERROR, str(exc))
                continue
            if header.topic not in self._topics.table or (
                    self.retry_router is not None and header.topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX)):
                if admitted:
                    await self._stored(conn, admitted, answers)
                    admitted = []
                answers[i] = answer = await self._send(conn, request, header)
                self._note_refusal(conn, header, answer)
            else:
                self._admit(conn, i, request, header, answers, admitted)
        if admitted:
            if self._replication is None and not self._store.puts_wait:
                # nothing can wait (ASYNC_FLUSH, no slave to wait for): stored before any other
                # request runs, so no coroutine and no in-flight count are needed
                self._answer_group(conn, admitted, self._store.put_group_now([a[4] for a in admitted]), answers)
            else:
                await self._stored(conn, admitted, answers)
        return answers

    def send_group_now(self, conn: Connection, requests: list[RemotingCommand]) -> list[Answer] | None:
        """``send_group`` as a plain call, for the common case: nothing can wait (ASYNC_FLUSH, no
        slave to wait for) and every send's topic exists and is not routed. The headers are read
        first, so that None — some send needs ``send_group`` — means nothing was done (nor logged).

        A plain send (``plainsend``) is read into its PutRequest in one call and, when the
        broker takes it as it is (``_plain_taken``), admitted without the general checks; any
        other send, or one those checks must look at, goes through ``_admit``."""
        if self._replication is not None or self._store.puts_wait:
            return None
        table, routed = self._topics.table, self.retry_router is not None
        born_host = self._born_hosts.get(conn.remote_addr) or self._born_host(conn.remote_addr)
        if len(requests) == 1:  # a producer sending one at a time: no lists, one put, here
            request = requests[0]
            put = plain_put(request.code, request.ext_fields, request.body, self._cluster_entry, born_host)
            if (put is not None and not (routed and put.topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX))
                    and self._plain_taken((put,), table) and self._broker_accepts()):
                result = self._store.put_one_now(put)
                if result.status is PutStatus.PUT_OK and request.serialize_type is SerializeType.JSON:
                    # (a put of one message: its one id is the whole of msgId)
                    return [sendanswers.stored(request.opaque, result.offset_msg_ids[0], put.queue_id,
                                               result.queue_offsets[0])]
                return [self._answer_stored(conn, request, None, put.queue_id, result)]
            return self._lone_checked(conn, request, table, routed)
        accepted = self._broker_accepts()  # nothing runs between these sends: one answer for all
        admitted: list[_Admitted] = []
        if accepted:  # the plain sends the broker takes as they are, up to the first other one
            cluster_entry, retry_prefix = self._cluster_entry, codes.RETRY_GROUP_TOPIC_PREFIX
            puts: list[PutRequest] = []
            for request in requests:
                put = plain_put(request.code, request.ext_fields, request.body, cluster_entry, born_host)
                if put is None or (routed and put.topic.startswith(retry_prefix)):
                    break
                puts.append(put)
            for i in range(self._plain_taken(puts, table)):  # (one call for the group, not one per send)
                admitted.append((i, requests[i], None, puts[i].queue_id, [puts[i]]))
        answers: list[Answer] = [None] * len(requests)
        if len(admitted) < len(requests) and not self._admit_rest(conn, requests, admitted, answers, accepted,
                                                                  born_host):
            return None  # (nothing was done: plain_put and the checks change nothing)
        if admitted:
            self._answer_group(conn, admitted, self._store.put_group_now([a[4] for a in admitted]), answers)
        return answers

    def _admit_rest(self, conn: Connection, requests: list[RemotingCommand], admitted: list[_Admitted],
                    answers: list[Answer], accepted: bool, born_host: tuple[str, int]) -> bool:
        """``send_group_now`` for the sends after the plain ones already in ``admitted``: each
        admitted, or its refusal in ``answers``; False, having done nothing, when one of them
        needs ``send_group`` (its topic is to be created, or it is routed)."""
        table, routed = self._topics.table, self.retry_router is not None
        first = len(admitted)
        parsed: list[PutRequest | SendMessageRequestHeader | HeaderError] = []
        for request in requests[first:]:
            read: PutRequest | SendMessageRequestHeader | None = plain_put(
                request.code, request.ext_fields, request.body, self._cluster_entry, born_host)
            if read is None:
                try:
                    read = self._parse_header(request)
                except HeaderError as exc:
                    parsed.append(exc)
                    continue
            topic = read.topic
            if topic not in table or (routed and topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX)):
                return False
            parsed.append(read)
        for i, (request, put) in enumerate(zip(requests[first:], parsed, strict=True), first):
            if type(put) is PutRequest:
                if accepted and self._plain_taken((put,), table):
                    admitted.append((i, request, None, put.queue_id, [put]))
                    continue
                put = self._parse_header(request)  # (it parses: plain_put read it)
            if isinstance(put, HeaderError):
                self._refusals.warning(conn.remote_addr, "send from %s refused: %s", conn.remote_addr, put)
                answers[i] = request.response(ResponseCode.SYSTEM_ERROR, str(put))
            elif isinstance(put, SendMessageRequestHeader):
                self._admit(conn, i, request, put, answers, admitted, accepted)
        return True

    def _lone_checked(self, conn: Connection, request: RemotingCommand, table: dict[str, TopicConfig],
                      routed: bool) -> list[Answer] | None:
        """``send_group_now`` of a read holding one send that is not plain or that the
        broker's checks must look at: ``_checked_records``, then one put."""
        try:
            header = self._parse_header(request)
        except HeaderError as exc:
            self._refusals.warning(conn.remote_addr, "send from %s refused: %s", conn.remote_addr, exc)
            return [request.response(ResponseCode.SYSTEM_ERROR, str(exc))]
        topic = header.topic
        if topic not in table or (routed and topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX)):
            return None
        checked = self._checked_records(conn, request, header, False)
        if isinstance(checked, RemotingCommand):
            self._note_refusal(conn, header, checked)
            return [checked]
        queue_id, records = checked
        store = self._store
        result = store.put_one_now(records[0]) if type(records) is list else store.put_group_now([records])[0]
        return [self._answer_stored(conn, request, header, queue_id, result)]

    def _plain_taken(self, puts: Sequence[PutRequest], table: dict[str, TopicConfig]) -> int:
        """How many of the plain sends' puts, from the first, pass every check of
        ``_checked_records`` that concerns the send itself, as they are (the broker-wide ones are
        ``_broker_accepts``): its topic exists, is writable, was validated before, is no system
        topic; its queue id is one to write; its body is not too large. The first that does not
        is left to the general checks (which answer any refusal)."""
        valid, largest = self._valid_topics, self._behaviour.max_message_size
        taken = 0
        for put in puts:
            topic = put.topic
            config = table.get(topic)
            if not (config is not None and config.perm & _WRITE and 0 <= put.queue_id < config.write_queue_nums
                    and topic in valid and topic not in SYSTEM_TOPICS_NOT_FOR_SEND and len(put.body) <= largest):
                break
            taken += 1
        return taken

    def _admit(self, conn: Connection, i: int, request: RemotingCommand, header: SendMessageRequestHeader,
               answers: list[Answer], admitted: list[_Admitted], accepted: bool = False) -> None:
        """Check a send of a group whose topic exists: into ``admitted``, or its refusal into
        ``answers`` (``accepted``: as ``_checked_records``)."""
        checked = self._checked_records(conn, request, header, accepted)
        if isinstance(checked, RemotingCommand):
            answers[i] = checked
            self._note_refusal(conn, header, checked)
        else:
            admitted.append((i, request, header, checked[0], checked[1]))

    async def _stored(self, conn: Connection, admitted: list[_Admitted], answers: list[Answer]) -> None:
        """Store the admitted sends as one group and put each one's answer in ``answers``."""
        count = len(admitted)
        self._in_flight += count
        try:
            stored = await self._store.put_group([records for *_, records in admitted])
            results = await self._replicated_group(admitted, stored)
        finally:
            self._in_flight -= count
        self._answer_group(conn, admitted, results, answers)

    def _answer_group(self, conn: Connection, admitted: list[_Admitted], results: list[PutResult],
                      answers: list[Answer]) -> None:
        """Each stored send's answer into ``answers``: SUCCESS from the template (the whole group
        in one call, ``sendanswers.stored_group``), else in full."""
        for k in sendanswers.stored_group(admitted, results, answers):
            i, request, header, queue_id, _records = admitted[k]
            answers[i] = self._answer_stored(conn, request, header, queue_id, results[k])

    def _answer_stored(self, conn: Connection, request: RemotingCommand, header: SendMessageRequestHeader | None,
                       queue_id: int, result: PutResult) -> Answer:
        """A stored send's answer: SUCCESS from the template, else in full (and noted if a refusal;
        a plain send's header, None, is read for that)."""
        if result.status is PutStatus.PUT_OK and request.serialize_type is SerializeType.JSON:
            return sendanswers.stored(request.opaque, ",".join(result.offset_msg_ids), queue_id,
                                      result.queue_offsets[0])
        answer = self._answer(request, queue_id, result)
        self._note_refusal(conn, header or self._parse_header(request), answer)
        return answer

    async def _replicated_group(self, admitted: list[_Admitted], results: list[PutResult]) -> list[PutResult]:
        """``_replicated`` for every put of a group, all waiting at once: one after another, a
        slave that stopped answering would hold the group for a timeout per put."""
        if self._replication is None:  # nothing waits after the store: no coroutine per put
            return results
        return list(await asyncio.gather(*(self._replicated(records, result)
                                           for (*_, records), result in zip(admitted, results, strict=True))))

    def _header(self, conn: Connection, request: RemotingCommand) -> SendMessageRequestHeader:
        try:
            return self._parse_header(request)
        except HeaderError as exc:
            self._refusals.warning(conn.remote_addr, "send from %s refused: %s", conn.remote_addr, exc)
            raise

    @staticmethod
    def _parse_header(request: RemotingCommand) -> SendMessageRequestHeader:
        if request.code == _SEND_MESSAGE:
            return SendMessageRequestHeader.from_ext(request.ext_fields)
        return send_header_from_v2(request.ext_fields)

    def _note_refusal(self, conn: Connection, header: SendMessageRequestHeader, answer: Answer) -> None:
        if isinstance(answer, RemotingCommand) and answer.code and answer.code not in NOT_REFUSALS:
            # SUCCESS is 0 (and a template answer is bytes): one test per good send
            self._refusals.warning(conn.remote_addr, "send from %s (producer group %s) to topic %s refused, %s: %s",
                                   conn.remote_addr, header.producer_group, header.topic,
                                   _code_name(answer.code), answer.remark)

    def check(self, request: RemotingCommand, header: SendMessageRequestHeader) -> RemotingCommand | None:
        """RocketMQ's ``msgCheck`` alone: the refusal a send would get, or None (the reply
        processor checks a reply this way before pushing it to the requester)."""
        return self._refusal(request, header) or self._topic_for(request, header)[1]

    async def store(self, conn: Connection, request: RemotingCommand,
                    header: SendMessageRequestHeader) -> RemotingCommand:
        """Check and store one message exactly as SEND_MESSAGE does (for stored replies)."""
        return await self._send(conn, request, header)

    async def _send(self, conn: Connection, request: RemotingCommand,
                    header: SendMessageRequestHeader) -> RemotingCommand:
        refusal = self._refusal(request, header)
        if refusal is not None:
            return refusal
        created = header.topic not in self._topics.table
        topic_config, refusal = self._topic_for(request, header)
        if topic_config is None:
            return refusal or request.response(ResponseCode.SYSTEM_ERROR, "topic unavailable")
        if created:
            # as RocketMQ: register the new topic before answering, so the producer's next
            # route lookup (and any consumer's) finds it
            await self._on_topic_created()
        queue_id = self._queue_id(conn, request, header, topic_config)
        if isinstance(queue_id, RemotingCommand):
            return queue_id
        if self.retry_router is not None and header.topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX):
            routed = await self.retry_router(request, header)
            if isinstance(routed, RemotingCommand):
                return routed
            if routed is not header:
                header, queue_id = routed, routed.queue_id
        records = self._encoded(request, header, queue_id, conn)
        if isinstance(records, RemotingCommand):
            return records
        self._in_flight += 1
        try:
            result = await (
                self._store.put_batch(records) if isinstance(records, BatchPutRequest) else self._store.put(records[0])
            )
            result = await self._replicated(records, result)
        finally:
            self._in_flight -= 1
        return self._answer(request, queue_id, result)

    def _checked_records(self, conn: Connection, request: RemotingCommand, header: SendMessageRequestHeader,
                         accepted: bool) -> tuple[int, list[PutRequest] | BatchPutRequest] | RemotingCommand:
        """``_send`` up to the store for a send that need not wait (its topic exists and it is
        not routed): (queue id, records), or the refusal. ``accepted``: ``_broker_accepts()``
        said so for this send's group, so ``_refusal`` runs only when the send itself may be
        refused (a topic name not yet validated, a system topic, a large body)."""
        topic = header.topic
        if not (accepted and topic in self._valid_topics and topic not in SYSTEM_TOPICS_NOT_FOR_SEND
                and (len(request.body) <= self._behaviour.max_message_size or header.batch)):
            refusal = self._refusal(request, header)
            if refusal is not None:
                return refusal
        topic_config = self._topics.table.get(header.topic)
        if topic_config is None or not topic_config.perm & _WRITE:  # the rest of _topic_for's cases
            topic_config, refusal = self._topic_for(request, header)
            if topic_config is None:
                return refusal or request.response(ResponseCode.SYSTEM_ERROR, "topic unavailable")
        queue_id = header.queue_id
        if not 0 <= queue_id < topic_config.write_queue_nums:  # (a valid queue id as it is) the rest of _queue_id
            chosen = self._queue_id(conn, request, header, topic_config)
            if isinstance(chosen, RemotingCommand):
                return chosen
            queue_id = chosen
        records = self._encoded(request, header, queue_id, conn)
        if isinstance(records, RemotingCommand):
            return records
        return queue_id, records

    @staticmethod
    def _queue_id(conn: Connection, request: RemotingCommand, header: SendMessageRequestHeader,
                  topic_config: TopicConfig) -> int | RemotingCommand:
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = random.randrange(max(1, topic_config.write_queue_nums))
        if queue_id >= topic_config.queue_count:
            return request.response(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{queue_id}] is illegal, {topic_config.topic_name} has "
                f"{topic_config.queue_count} queues, producer: {conn.remote_addr}",
            )
        return queue_id

    def _encoded(self, request: RemotingCommand, header: SendMessageRequestHeader, queue_id: int,
                 conn: Connection) -> list[PutRequest] | BatchPutRequest | RemotingCommand:
        """The records to store (a transactional message as its half), or the refusal."""
        try:
            records = self._records(request, header, queue_id, conn)
        except (message.MessageFormatError, message.MessageIllegalError) as exc:
            # e.g. \x01 inside a property value: stored as it is, it would corrupt the record's properties
            return request.response(ResponseCode.MESSAGE_ILLEGAL, str(exc))
        if (isinstance(records, list) and message.TRAN_MSG in records[0].properties
                and transactions.is_transactional(records[0])):  # the substring test spares most sends a parse
            records = [transactions.to_half(records[0], self._topics)]  # hidden until END_TRANSACTION
        return records

    async def _replicated(self, records: list[PutRequest] | BatchPutRequest, result: PutResult) -> PutResult:
        """What a stored send waits for after the store: a slave under SYNC_MASTER (the one
        hook between storing and answering)."""
        if self._replication is None:
            return result
        return await self._replication.wait_for_slave(records, result)

    def _broker_accepts(self) -> bool:
        """None of ``_refusal``'s broker-wide refusals applies now (accepting sends, DLedger's
        gate, permission, sends in flight, page cache): what a group of sends answered in one
        plain call (``send_group_now``) asks once instead of once per send."""
        accept_from = self._behaviour.start_accept_send_request_time_stamp
        return not ((accept_from and time.time() * 1000 < accept_from)
                    or (self._write_gate is not None and self._write_gate() is not None)
                    or not self.broker_permission & _WRITE or not self._identity.writable
                    or self._in_flight >= self._behaviour.max_sends_in_flight
                    or (self._store.busy_until > 0.0 and self._store.is_os_page_cache_busy()))

    def _refusal(self, request: RemotingCommand, header: SendMessageRequestHeader) -> RemotingCommand | None:
        accept_from = self._behaviour.start_accept_send_request_time_stamp
        if accept_from and time.time() * 1000 < accept_from:
            return request.response(
                ResponseCode.SYSTEM_ERROR,
                f"broker unable to service, until {self._behaviour.start_accept_send_request_time_stamp}",
            )
        if self._write_gate is not None:
            why = self._write_gate()
            if why is not None:  # as RocketMQ's slave store: retriable, the SDK moves to another group
                return request.response(ResponseCode.SERVICE_NOT_AVAILABLE, why)
        if not self.broker_permission & _WRITE or not self._identity.writable:
            return request.response(
                ResponseCode.NO_PERMISSION, f"the broker[{self._identity.broker_name}] sending message is forbidden"
            )
        if self._in_flight >= self._behaviour.max_sends_in_flight:
            return request.response(
                ResponseCode.SYSTEM_BUSY, f"[TOO_MANY_REQUESTS]broker busy, {self._in_flight} sends in flight"
            )
        if self._store.is_os_page_cache_busy():
            return request.response(
                ResponseCode.SYSTEM_BUSY, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while"
            )
        if header.topic not in self._valid_topics:
            try:
                validate_topic_name(header.topic)
            except TopicError as exc:
                return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
            if len(self._valid_topics) >= MAX_CACHED_NAMES:
                self._valid_topics.clear()
            self._valid_topics.add(header.topic)
        if header.topic in SYSTEM_TOPICS_NOT_FOR_SEND:
            return request.response(
                ResponseCode.SYSTEM_ERROR, f"the topic[{header.topic}] is conflict with system topic."
            )
        if len(request.body) > self._behaviour.max_message_size and not header.batch:
            return request.response(
                ResponseCode.MESSAGE_ILLEGAL,
                f"message body size {len(request.body)} exceeds maxMessageSize {self._behaviour.max_message_size}",
            )
        return None

    def _topic_for(
        self, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> tuple[TopicConfig | None, RemotingCommand | None]:
        config = self._topics.table.get(header.topic)  # TopicConfigManager.get, without the call
        if config is None and header.topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX):
            config = self._topics.ensure(header.topic, 1)
        if config is None and self._behaviour.auto_create_topic_enable:
            config = self._topics.create_from_default(
                header.topic,
                header.default_topic,
                header.default_topic_queue_nums,
                self._behaviour.default_topic_queue_nums,
            )
        if config is None:
            return None, request.response(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist, apply first please!"
            )
        if not config.perm & _WRITE:
            return None, request.response(
                ResponseCode.NO_PERMISSION, f"the topic[{header.topic}] sending message is forbidden"
            )
        return config, None

    def _records(
        self, request: RemotingCommand, header: SendMessageRequestHeader, queue_id: int, conn: Connection
    ) -> list[PutRequest] | BatchPutRequest | RemotingCommand:
        born_host = self._born_hosts.get(conn.remote_addr) or self._born_host(conn.remote_addr)
        reconsume_times = header.reconsume_times or 0
        if header.batch or request.code == RequestCode.SEND_BATCH_MESSAGE:
            return self._batch(request, header, queue_id, born_host, reconsume_times)
        text = header.properties or ""
        props = message.decode_properties(text)
        if message.TRAN_MSG in props:  # the only property a send can be refused for
            refusal = self._property_refusal(request, props)
            if refusal is not None:
                return refusal
        topic = header.topic
        if message.DELAY in props:  # a delayed message waits in SCHEDULE_TOPIC_XXXX (broker.schedule)
            scheduled = schedule.to_schedule(topic, queue_id, props, header.sys_flag, self._max_delay_level)
            if scheduled is not None:
                topic, queue_id, props = scheduled
                text = message.encode_properties(props)
        get = props.get
        stored = (text + self._cluster_entry if message.CLUSTER not in props and message.is_canonical(text, props)
                  else self._stored_properties(props, text))  # (the common case of it inline)
        return [results.new_put_request(
            topic, queue_id, request.body, header.flag, stored, header.sys_flag,
            header.born_timestamp, born_host, reconsume_times, 0, message.tag_hash(get(message.TAGS)),
            (get(message.UNIQ_KEY), get(message.KEYS)),
        )]

    def _batch(self, request: RemotingCommand, header: SendMessageRequestHeader, queue_id: int,
               born_host: tuple[str, int], reconsume_times: int) -> BatchPutRequest | RemotingCommand:
        # the common batch (every message plain: canonical properties, no TRAN_MSG, DELAY or
        # CLUSTER) in one native walk; any other through the checks below, message by message
        plain = batchbodies.plain_batch_messages(request.body, self._cluster_entry)
        if plain:
            return BatchPutRequest(header.topic, queue_id, header.sys_flag, header.born_timestamp, born_host,
                                   reconsume_times, plain)
        entries = message.batch_entries(request.body)
        if not entries:
            return request.response(ResponseCode.MESSAGE_ILLEGAL, "batch body holds no message")
        # once per message: the common case (no TRAN_MSG, no DELAY, canonical properties without
        # CLUSTER) inline, anything else through the same checks and helpers as a single send
        messages: list[results.BatchMessage] = []
        append = messages.append
        cluster_entry, is_canonical, tag_hash = self._cluster_entry, message.is_canonical, message.tag_hash
        tran_msg, delay, cluster = message.TRAN_MSG, message.DELAY, message.CLUSTER
        tags, uniq_key, keys = message.TAGS, message.UNIQ_KEY, message.KEYS
        for body, flag, props, text in entries:
            if tran_msg in props or delay in props:
                refusal = self._batch_refusal(request, props)
                if refusal is not None:
                    return refusal
            get = props.get
            stored = (text + cluster_entry if cluster not in props and is_canonical(text, props)
                      else self._stored_properties(props, text))
            append((body, flag, stored, tag_hash(get(tags)), get(uniq_key), get(keys)))
        return BatchPutRequest(header.topic, queue_id, header.sys_flag, header.born_timestamp, born_host,
                               reconsume_times, messages)

    def _batch_refusal(self, request: RemotingCommand, props: dict[str, str]) -> RemotingCommand | None:
        """What refuses one message of a batch: a transactional one (always; first as a single
        send's would be refused), or one with a delay level."""
        refusal = self._property_refusal(request, props) or self._batch_delay_refusal(request, props)
        if refusal is None and props.get(message.TRAN_MSG) == "true":
            return request.response(ResponseCode.MESSAGE_ILLEGAL, "transactional messages cannot be batched")
        return refusal

    def _stored_properties(self, props: dict[str, str], text: str) -> str:
        """The properties to store: the producer's, plus CLUSTER unless it named one."""
        has_cluster = message.CLUSTER in props
        if message.is_canonical(text, props):
            return text if has_cluster else text + self._cluster_entry
        if not has_cluster:
            props = {**props, message.CLUSTER: self._identity.cluster}
        return message.encode_properties(props)

    def _born_host(self, addr: str) -> tuple[str, int]:
        host = self._born_hosts.get(addr)
        if host is None:
            if len(self._born_hosts) >= MAX_CACHED_NAMES:
                self._born_hosts.clear()
            host = self._born_hosts[addr] = _host_port(addr)
        return host

    def _property_refusal(self, request: RemotingCommand, props: dict[str, str]) -> RemotingCommand | None:
        if props.get(message.TRAN_MSG) == "true" and self._behaviour.reject_transaction_message:
            return request.response(ResponseCode.NO_PERMISSION,
                                    f"the broker[{self._identity.host}] sending transaction message is forbidden")
        return None

    @staticmethod
    def _batch_delay_refusal(request: RemotingCommand, props: dict[str, str]) -> RemotingCommand | None:
        """RocketMQ refuses a batch whose messages carry DELAY > 0."""
        if schedule.delay_level(props) > 0:
            return request.response(ResponseCode.MESSAGE_ILLEGAL, "delayed messages cannot be sent in a batch")
        return None

    def _answer(self, request: RemotingCommand, queue_id: int, result: PutResult) -> RemotingCommand:
        code: int
        remark: str | None
        if result.status is PutStatus.PUT_OK:  # skips hashing an Enum (Python code) per send
            code, remark = ResponseCode.SUCCESS, None
        else:
            code, remark = PUT_STATUS_TO_RESPONSE.get(result.status, (ResponseCode.SYSTEM_ERROR, None))
        if (
            remark is None
            and code != ResponseCode.SUCCESS
            and result.status
            not in (PutStatus.FLUSH_DISK_TIMEOUT, PutStatus.FLUSH_SLAVE_TIMEOUT, PutStatus.SLAVE_NOT_AVAILABLE)
        ):
            remark = f"store answered {result.status.name}"
        if not result.appended:
            return request.response(code, remark or result.error or result.status.name)
        header = SendMessageResponseHeader(
            msg_id=",".join(result.offset_msg_ids),
            queue_id=queue_id,
            queue_offset=result.queue_offsets[0],
        )
        ext = header.to_ext()
        ext["MSG_REGION"] = "DefaultRegion"
        ext["TRACE_ON"] = "true"
        return request.response(code, remark, ext)


def _code_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)


def _host_port(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        return "127.0.0.1", 0

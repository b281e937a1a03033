"""PULL_MESSAGE and long polling.

A pull names a queue and an offset. The store answers with a status, which maps onto RocketMQ's
response codes (the table in reference/wire-protocol-and-replication.md). When nothing is there
yet and the consumer set the SUSPEND bit, the request is *held*: no reply is written, and the
pull runs again either the moment the store dispatches a message into that queue or when the
consumer's ``suspendTimeoutMillis`` runs out — so a consumer sees a new message within
milliseconds without busy polling. The answer body is the raw stored records, never re-encoded.

The held pulls one round of arrivals wakes (a read of single sends spreads its messages over
as many queues, each usually with a consumer's pull held) are answered in two writes per
connection: the round's first answer at once, so the consumer starts on it, and the rest
together when the store has notified the round's last queue
(``MessageStore.add_arrival_round_listener``), before the sends' own answers. Written two by
two, a round of eight cost four writes, and each woke the consumer, which on a busy machine
took the core from the broker in the middle of the round (docs/benchmarks.md, "Round 10 (end
to end)").

A held pull with a tag subscription keeps its store read's arguments (``HeldPull.reads``): its
wake-up reads with them, not through ``_get`` again (tests/broker/test_woken_pull_reads.py: the
same bytes as the general read).

A FOUND answer of the lean path and of a woken pull goes to the connection as the bytes it
writes (``_found_frame``): with the native extension one C call (native/foundframe.c) writes the
frame from the read's numbers and records, without a ``RemotingCommand``, its extFields dict or
orjson; the ``RemotingCommand``'s own encoding is its reference (tests/broker/test_found_frame.py)."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from rocketq.broker.clienttable import ClientManager
from rocketq.broker.filters import ConsumerFilters
from rocketq.broker.groups import GroupError, SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import codes, nativecodecs, pullsysflag, subscription
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import HeaderError, PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig
from rocketq.protocol.subscription import SubscriptionData, SubscriptionError
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.remoting.grouping import Answer, FrameParts, GroupedHandler
from rocketq.store.messagestore import GetResult, GetStatus, MessageStore

log = logging.getLogger(__name__)

MAX_PULL_BATCH: Final = 1024
"""Messages one pull may return whatever the client asks (RocketMQ's maxTransferCountOnMessageInMemory)."""
MAX_PULL_BYTES: Final = 256 * 1024
"""Bytes one pull may return (RocketMQ's maxTransferBytesOnMessageInMemory)."""
MAX_GROUP_SHOWN: Final = 300
"""Characters of a refused group name quoted in a log line."""
MAX_HELD_PULLS: Final = 100_000
MAX_WOKEN_PER_WRITE: Final = 64
"""Answers of one arrival round gathered for one connection before they are written without
waiting for the round's end (a round that wakes many pulls of one consumer still lets it start)."""
MAX_JOINED_ANSWER: Final = 4096
"""Record bytes up to which a lean FOUND answer is handed to the connection as one encoded frame
(its records copied once, cheaper than the buffers' way for a message or two); larger answers go
out as the store's views."""
MAX_BUILT_SUBSCRIPTIONS: Final = 4096
"""Subscriptions parsed from pull headers kept for the next pull (the table is emptied when full:
a peer sending ever new expressions costs a parse each, as before, and bounded memory)."""
_READ: Final = int(codes.Perm.READ)
"""The permission bit as a plain int: ``int & IntFlag`` runs enum code on every pull."""
_FOUND: Final = GetStatus.FOUND
_JSON: Final = int(SerializeType.JSON)
_native_found_frame = nativecodecs.native.found_frame if nativecodecs.native is not None else None
_NOT_YET: Final = (GetStatus.OFFSET_OVERFLOW_ONE, GetStatus.NO_MESSAGE_IN_QUEUE)
"""A read's outcomes that may hold a SUSPEND pull (nothing at or past its offset yet)."""
"""Held long-poll requests before new ones are answered at once instead of held."""


@dataclass(slots=True)
class HeldPull:
    connection: Connection
    request: RemotingCommand
    header: PullMessageRequestHeader
    sub: SubscriptionData
    offset: int
    timer: asyncio.TimerHandle | None = None
    reads: _ReadArgs | None = None
    """The store read's batch, bytes and tag filter, for a tag subscription (fixed while held:
    the woken pull reads with them, not through ``_get`` again); None: ``_get`` each time (a
    SQL92 filter is looked up at each read, as its data may change)."""


_ReadArgs = tuple[int, int, "Callable[[int], bool] | None"]


class _Declined:
    """``_lean``'s answer for a pull it does not handle (its None means "held")."""

    __slots__ = ()


_DECLINED: Final = _Declined()


def answer_ext(suggest: int, next_begin: int, min_offset: int, max_offset: int) -> dict[str, str]:
    """A pull answer's extFields: ``PullMessageResponseHeader(...).to_ext()``, written out for
    the usual plain ints (one per pull: the frozen header's construction was most of its cost)."""
    if suggest.__class__ is int and next_begin.__class__ is int and min_offset.__class__ is int \
            and max_offset.__class__ is int:
        return {"suggestWhichBrokerId": str(suggest), "nextBeginOffset": str(next_begin),
                "minOffset": str(min_offset), "maxOffset": str(max_offset)}
    return PullMessageResponseHeader(suggest_which_broker_id=suggest, next_begin_offset=next_begin,
                                     min_offset=min_offset, max_offset=max_offset).to_ext()


class PullHandlers:
    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetManager,
        clients: ClientManager,
        behaviour: BrokerBehaviour,
        *,
        is_master: bool,
        suggest_broker: Callable[[GetResult, SubscriptionGroupConfig | None], int] | None = None,
        filters: ConsumerFilters | None = None,
    ) -> None:
        self._store = store
        self._filters = filters or ConsumerFilters(enabled=False)
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._clients = clients
        self._behaviour = behaviour
        self._is_master = is_master
        self._suggest_broker = suggest_broker
        """suggestWhichBrokerId for an answer (rocketq.ha.reads); the master's id without it."""
        self._held: dict[tuple[str, int], list[HeldPull]] = defaultdict(list)
        self._built: dict[tuple[str, str | None, str | None, int], SubscriptionData] = {}
        """``subscription.build``'s results by its arguments: a consumer sends the same ones on
        every pull, and the result is a frozen value."""
        self._everything: dict[tuple[str, str | None, str | None, int], SubscriptionData] = {}
        """The built subscriptions that take every message (``matches_all``: tag type, ``*``),
        the only ones ``_lean`` handles."""
        self._held_count = 0
        self._woken: dict[Connection, tuple[list[int], list[bytes | memoryview]]] = {}
        """Answers to held pulls the current round of arrivals woke and not yet written, per
        connection: their requests' opaques and their frames' buffers (a connection is here, its
        lists maybe empty, once the round's first answer to it went out)."""
        self.broker_permission = behaviour.broker_permission
        self._refusals = LogLimiter(log)
        store.add_arrival_listener(self.on_message_arrived, queues=self._held)  # (called for a queue a pull waits on)
        store.add_arrival_round_listener(self.send_woken)

    def handlers(self) -> dict[int, Handler]:
        # A pull never waits (it is answered or held), so every pull of a read is answered by
        # plain calls (``pull_now``): no coroutine, eager step or task per pull.
        return {RequestCode.PULL_MESSAGE: GroupedHandler(self.pull, self.pull_group, self.pull_now)}

    async def pull(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        """One pull through the general path (what ``pull_now`` falls back to)."""
        return self._pull(conn, request, PullMessageRequestHeader.from_ext(request.ext_fields))

    async def pull_group(self, conn: Connection, requests: list[RemotingCommand]) -> list[Answer]:
        return self.pull_now(conn, requests)

    def pull_now(self, conn: Connection, requests: list[RemotingCommand]) -> list[Answer]:
        """The answers to a read's pulls, in order (None: held). Each fails on its own, as a
        single handler's failure (``Connection._run``) does."""
        answers: list[Answer] = []
        for request in requests:
            try:
                header = PullMessageRequestHeader.from_ext(request.ext_fields)
                answer = self._lean(conn, request, header)
                answers.append(self._pull(conn, request, header) if isinstance(answer, _Declined) else answer)
            except HeaderError as exc:
                answers.append(request.response(ResponseCode.SYSTEM_ERROR, str(exc)))
            except Exception as exc:
                log.exception("pull from %s failed", conn.remote_addr)
                answers.append(request.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}"))
        return answers

    def _lean(self, conn: Connection, request: RemotingCommand,
              header: PullMessageRequestHeader) -> Answer | _Declined:
        """The common pull (a master that is readable, an existing group and topic that allow
        it, a valid queue, a subscription in the request that takes every message) in one
        function: ``_pull``'s steps for that case, or ``_DECLINED`` (nothing done) for
        anything else. tests/broker/test_lean_pull.py: the same answers, commits and held
        pulls as ``_pull``."""
        flag = header.sys_flag
        topic_name = header.topic
        sub = self._everything.get((topic_name, header.subscription, header.expression_type, header.sub_version))
        if sub is None or not flag & pullsysflag.SUBSCRIPTION or not self._is_master \
                or not self.broker_permission & _READ:
            return _DECLINED
        group_name = header.consumer_group
        group = self._groups.get(group_name)
        topic = self._topics.get(topic_name)
        queue_id = header.queue_id
        if group is None or not group.consume_enable or topic is None or not topic.perm & _READ \
                or not 0 <= queue_id < topic.queue_count:
            return _DECLINED
        offset = header.queue_offset
        if flag & pullsysflag.COMMIT_OFFSET and header.commit_offset >= 0:
            self._offsets.commit(group_name, topic_name, queue_id, header.commit_offset)
        max_nums, max_bytes = _limits(header)
        result = self._store.get_messages(topic_name, queue_id, offset, max_nums, max_bytes)
        status = result.status
        if status is _FOUND:
            return self._found_frame(request, group_name, result)
        if status in _NOT_YET and flag & pullsysflag.SUSPEND and self._held_count < MAX_HELD_PULLS \
                and (status is GetStatus.OFFSET_OVERFLOW_ONE or offset == 0):
            self._hold(conn, request, header, sub, (max_nums, max_bytes, None))  # (every tag matches)
            return None
        return self._answer(request, header, result)

    def _pull(self, conn: Connection, request: RemotingCommand,
              header: PullMessageRequestHeader) -> RemotingCommand | None:
        """A pull, any kind: its answer, or None when it is held."""
        checked = self._check(conn, request, header)
        if isinstance(checked, RemotingCommand):
            return checked
        sub = checked
        if header.sys_flag & pullsysflag.COMMIT_OFFSET and self._is_master and header.commit_offset >= 0:
            self._offsets.commit(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        result = self._get(header, header.queue_offset, sub)
        if (
            result.status in _NOT_YET
            and header.sys_flag & pullsysflag.SUSPEND
            and self._held_count < MAX_HELD_PULLS
            and (result.status == GetStatus.OFFSET_OVERFLOW_ONE or header.queue_offset == 0)
        ):
            self._hold(conn, request, header, sub)
            return None
        return self._answer(request, header, result)

    def _check(self, conn: Connection, request: RemotingCommand,
               header: PullMessageRequestHeader) -> SubscriptionData | RemotingCommand:
        if not self.broker_permission & _READ:
            return request.response(ResponseCode.NO_PERMISSION, "the broker pulling message is forbidden")
        try:
            group = self._groups.find_or_create(
                header.consumer_group, auto_create=self._behaviour.auto_create_subscription_group
            )
        except GroupError as exc:
            # a name no group may have: as RocketMQ 5's findSubscriptionGroupConfig, no such group
            self._refusals.warning(conn.remote_addr, "pull from %s refused, group %s: %s",
                                   conn.remote_addr, header.consumer_group[:MAX_GROUP_SHOWN], exc)
            return request.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group: {exc}")
        if group is None:
            return request.response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{header.consumer_group}] does not exist",
            )
        if not group.consume_enable:
            return request.response(
                ResponseCode.NO_PERMISSION, f"subscription group [{header.consumer_group}] consume is disabled"
            )
        topic = self._topics.get(header.topic)
        if topic is None:
            return request.response(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist, apply first please!"
            )
        if not topic.perm & _READ:
            return request.response(
                ResponseCode.NO_PERMISSION, f"the topic[{header.topic}] pulling message is forbidden"
            )
        if not 0 <= header.queue_id < topic.queue_count:
            return request.response(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                f"topicConfig.readQueueNums:[{topic.read_queue_nums}]",
            )
        if header.sys_flag & pullsysflag.SUBSCRIPTION:
            try:
                sub = self._built_subscription(header)
            except SubscriptionError as exc:
                return request.response(
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"parse the consumer's subscription failed: {exc}"
                )
        else:
            found = self._clients.subscription(header.consumer_group, header.topic)
            if found is None:
                return request.response(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST,
                    f"the consumer's subscription not exist, group: {header.consumer_group}",
                )
            if found.sub_version < header.sub_version:
                return request.response(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
            sub = found
        if not sub.is_tag_type:
            refusal = self._filters.check_pull(header.consumer_group, sub,
                                               in_request=bool(header.sys_flag & pullsysflag.SUBSCRIPTION))
            if refusal is not None:
                return request.response(*refusal)
        return sub

    def _built_subscription(self, header: PullMessageRequestHeader) -> SubscriptionData:
        """The subscription a pull carries, parsed once per distinct header value; SubscriptionError
        (never kept) for one that does not parse."""
        key = (header.topic, header.subscription, header.expression_type, header.sub_version)
        sub = self._built.get(key)
        if sub is None:
            sub = subscription.build(*key)
            if len(self._built) >= MAX_BUILT_SUBSCRIPTIONS:
                self._built.clear()
                self._everything.clear()
            self._built[key] = sub
            if sub.matches_all:
                self._everything[key] = sub
        return sub

    def _get(self, header: PullMessageRequestHeader, offset: int, sub: SubscriptionData) -> GetResult:
        max_nums, max_bytes = _limits(header)
        tag_filter = _tag_filter(sub)
        record_filter = None if sub.is_tag_type else self._filters.pull_filter(
            header.consumer_group, sub, in_request=bool(header.sys_flag & pullsysflag.SUBSCRIPTION))
        return self._store.get_messages(
            header.topic, header.queue_id, offset, max_nums, max_bytes=max_bytes, tag_filter=tag_filter,
            record_filter=record_filter,
        )

    def _answer(self, request: RemotingCommand, header: PullMessageRequestHeader, result: GetResult) -> RemotingCommand:
        """A read's answer: SUCCESS with its records when FOUND, else the status's code."""
        if result.status is _FOUND:
            return self._found(request, header.consumer_group, result)
        return request.response(_response_code(result.status, header.queue_offset), result.status.name,
                                self._answer_ext(header.consumer_group, result))

    def _found(self, request: RemotingCommand, group: str, result: GetResult) -> RemotingCommand:
        response = request.response(ResponseCode.SUCCESS, None, self._answer_ext(group, result))
        # The records go out as the store's own views (frames.encode_buffers): no copy here.
        response.body_parts = result.buffers
        return response

    def _found_frame(self, request: RemotingCommand, group: str, result: GetResult) -> FrameParts:
        """``_found``'s answer as the connection writes it: one bytes when its records are at most
        ``MAX_JOINED_ANSWER`` bytes (copied once, cheaper than the buffers' way for a message or
        two: a lone frame is one ``transport.write``), else the frame's head and the store's views."""
        suggest = self._suggest(group, result)
        if _native_found_frame is not None and request.serialize_type == _JSON:
            frame: FrameParts | None = _native_found_frame(
                request.opaque, suggest, result.next_begin_offset, result.min_offset, result.max_offset,
                result.buffers, MAX_JOINED_ANSWER)
            if frame is not None:
                return frame
        response = request.response(ResponseCode.SUCCESS, None, answer_ext(
            suggest, result.next_begin_offset, result.min_offset, result.max_offset))
        response.body_parts = result.buffers
        return response.encode() if result.buffer_total_size <= MAX_JOINED_ANSWER else response.encode_buffers()

    def _answer_ext(self, group: str, result: GetResult) -> dict[str, str]:
        return answer_ext(self._suggest(group, result), result.next_begin_offset, result.min_offset,
                          result.max_offset)

    def _suggest(self, group: str, result: GetResult) -> int:
        """suggestWhichBrokerId of a read's answer."""
        if self._suggest_broker is None:
            return codes.MASTER_ID
        return self._suggest_broker(result, self._groups.get(group))

    # --- long polling -------------------------------------------------------------------

    def _hold(self, conn: Connection, request: RemotingCommand, header: PullMessageRequestHeader,
              sub: SubscriptionData, reads: _ReadArgs | None = None) -> None:
        """Hold a pull; ``reads``: its store read's arguments when the caller has them."""
        held = HeldPull(conn, request, header, sub, header.queue_offset)
        if reads is not None:
            held.reads = reads
        elif sub.is_tag_type:
            held.reads = (*_limits(header), _tag_filter(sub))
        key = (header.topic, header.queue_id)
        self._held[key].append(held)
        self._held_count += 1
        timeout_ms = (
            header.suspend_timeout_millis
            if self._behaviour.long_polling_enable
            else self._behaviour.short_polling_time_mills
        )
        loop = asyncio.get_running_loop()
        held.timer = loop.call_later(max(0, timeout_ms) / 1000, self._expire, key, held)

    def on_message_arrived(self, topic: str, queue_id: int, next_offset: int) -> None:
        """Store dispatch callback: re-run every held pull of that queue that can now make progress."""
        waiting = self._held.get((topic, queue_id))
        if not waiting:
            return
        still: list[HeldPull] = []
        for held in waiting:
            if held.connection.closed:
                self._release(held)
                continue
            if next_offset <= held.offset:
                still.append(held)
                continue
            reads = held.reads
            if reads is None:
                result = self._get(held.header, held.offset, held.sub)
            else:
                result = self._store.get_messages(topic, queue_id, held.offset, reads[0], reads[1], reads[2])
            if result.status is _FOUND:
                self._release(held)
                self._woken_answer(held.connection, held.request.opaque,
                                   self._found_frame(held.request, held.header.consumer_group, result))
            else:
                # nothing matched this consumer's tags: skip past it and keep holding
                held.offset = result.next_begin_offset
                still.append(held)
        if still:
            self._held[(topic, queue_id)] = still
        else:
            self._held.pop((topic, queue_id), None)

    def _woken_answer(self, conn: Connection, opaque: int, frame: FrameParts) -> None:
        """A woken pull's answer: the round's first for its connection is written at once (the
        consumer starts on it while the round goes on), the rest gathered for ``send_woken``."""
        gathered = self._woken.get(conn)
        if gathered is None:
            self._woken[conn] = ([], [])
            conn.send_later_frames((opaque,), [frame] if isinstance(frame, bytes) else frame)
            return
        opaques, buffers = gathered
        opaques.append(opaque)
        if isinstance(frame, bytes):
            buffers.append(frame)
        else:
            buffers += frame
        if len(opaques) >= MAX_WOKEN_PER_WRITE:
            self._woken[conn] = ([], [])
            conn.send_later_frames(opaques, buffers)

    def send_woken(self) -> None:
        """The end of a round of arrivals: each connection's gathered answers in one write."""
        if self._woken:
            woken, self._woken = self._woken, {}
            for conn, (opaques, buffers) in woken.items():
                if opaques:
                    conn.send_later_frames(opaques, buffers)

    def _expire(self, key: tuple[str, int], held: HeldPull) -> None:
        waiting = self._held.get(key)
        if waiting is None or held not in waiting:
            return
        waiting.remove(held)
        if not waiting:
            del self._held[key]
        self._release(held)
        if not held.connection.closed:
            result = self._get(held.header, held.offset, held.sub)
            held.connection.send_response(self._answer(held.request, held.header, result))

    def _release(self, held: HeldPull) -> None:
        self._held_count -= 1
        if held.timer is not None:
            held.timer.cancel()

    def close(self) -> None:
        """Cancel every held pull's timer; clients see the connection close and retry elsewhere."""
        for waiting in self._held.values():
            for held in waiting:
                if held.timer is not None:
                    held.timer.cancel()
        self._held.clear()
        self._held_count = 0

    @property
    def held_count(self) -> int:
        return self._held_count


def _limits(header: PullMessageRequestHeader) -> tuple[int, int]:
    """The messages and bytes a pull may read: what it asks for, within the broker's limits."""
    return max(1, min(header.max_msg_nums, MAX_PULL_BATCH)), min(header.max_msg_bytes or MAX_PULL_BYTES,
                                                                 MAX_PULL_BYTES)


def _tag_filter(sub: SubscriptionData) -> Callable[[int], bool] | None:
    """The store read's filter on tag hash codes: None when nothing is filtered that way (every
    tag matches, or a SQL92 subscription, whose filter reads the records)."""
    return None if sub.matches_all or not sub.is_tag_type else sub.matches_tag_code


def _response_code(status: GetStatus, requested_offset: int) -> int:
    """The response code of a read that found nothing to answer with (any status but FOUND)."""
    if status in (GetStatus.NO_MATCHED_MESSAGE, GetStatus.OFFSET_FOUND_NULL, GetStatus.MESSAGE_WAS_REMOVING):
        return ResponseCode.PULL_RETRY_IMMEDIATELY
    if status == GetStatus.NO_MESSAGE_IN_QUEUE:
        return ResponseCode.PULL_NOT_FOUND if requested_offset == 0 else ResponseCode.PULL_OFFSET_MOVED
    if status == GetStatus.OFFSET_OVERFLOW_ONE:
        return ResponseCode.PULL_NOT_FOUND
    if status in (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_OVERFLOW_BADLY):
        return ResponseCode.PULL_OFFSET_MOVED
    return ResponseCode.PULL_NOT_FOUND

"""POP_MESSAGE (200050): RocketMQ 5's consumption without queue assignment.

A pop asks for up to ``maxMsgNums`` (<= 32) messages of a topic, from one queue or any
(``queueId`` -1). For each queue it reads, the broker (RocketMQ's ``PopMessageProcessor``):

1. skips the queue if another pop of the same group holds it right now (a per
   ``topic@group@queueId`` lock, so two pops never hand out the same offsets);
2. reads from the group's offset (a new group starts as ``initMode`` says), through the same
   tag / SQL92 filters as pulls (``rocketq.broker.filters``);
3. non-orderly: writes a checkpoint of what it hands out to the revive log
   (``rocketq.broker.revivelog``) and, once it is stored, moves the group's offset past the
   batch. Popped is not acked: a message not acked within ``invisibleTime`` is copied to the
   POP retry topic ``%RETRY%<group>_<topic>`` by ``rocketq.broker.revive``, and pops read that
   topic too (first, one pop in five; otherwise when the batch is not full), renaming its
   messages back to the topic asked for and stamping them with their ``POP_CK``;
4. orderly (``order=true``): no checkpoint; the queue stays locked to the batch until it is
   acked or invisible time passes (``rocketq.broker.orderinfo``), and its messages come back in
   order with ``orderCountInfo`` counting their pops. Retry topics are not read.

The answer header says where the messages came from (``rocketq.protocol.popinfo``); the body is
the stored records, as a pull's. Nothing found and ``pollTime`` > 0: the request is held, like a
pull, and re-run when a message arrives in the topic (or its retry topic) or an orderly batch
is acked, else answered POLLING_TIMEOUT after ``pollTime``; POLLING_FULL when too many are held.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import defaultdict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Final

from rocketq.broker.filters import PARSE_FAILED, ConsumerFilters, RecordFilter, record_filter
from rocketq.broker.groups import GroupError, SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.orderinfo import OrderInfo, OrderInfoTable
from rocketq.broker.revivelog import CheckPoint, ReviveWriter
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.filter import sql92
from rocketq.protocol import codes, messageerrors, messageproperties, popinfo, storedrecords, subscription
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.popheaders import ALL_QUEUES, INIT_MODE_MIN, PopMessageRequestHeader, PopMessageResponseHeader
from rocketq.protocol.subscription import SubscriptionData, SubscriptionError
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import GetStatus, MessageStore

log = logging.getLogger(__name__)

MAX_POP_BATCH: Final = 32
"""Messages one pop may ask for (RocketMQ refuses more)."""
POLL_LATENESS_MS: Final = 500
"""A request older than its poll time by more than this is answered POLLING_TIMEOUT at once."""
RETRY_FIRST_PERCENT: Final = 20
"""popFromRetryProbability: how often a pop reads the retry topic before the topic itself."""
POP_CK: Final = "POP_CK"
"""Property carrying a message's extraInfo in a pop answer (set on renamed retry messages)."""
MAX_GROUP_SHOWN: Final = 300


@dataclass(slots=True)
class PopContext:
    """One pop request, parsed and checked, as it is re-run while held."""

    header: PopMessageRequestHeader
    sub: SubscriptionData
    record_filter: RecordFilter | None
    tag_filter: Callable[[int], bool] | None


@dataclass(slots=True)
class PopBatch:
    """What one pop collected, queue by queue, and the texts of its answer header."""

    pop_time: int
    invisible_time: int
    revive_qid: int
    wanted: int
    buffers: list[memoryview | bytes] = field(default_factory=list)
    start_infos: list[tuple[str, int, int]] = field(default_factory=list)
    msg_infos: list[tuple[str, int, list[int]]] = field(default_factory=list)
    order_counts: list[tuple[str, int, int, int]] = field(default_factory=list)
    rest: int = 0

    @property
    def remaining(self) -> int:
        return self.wanted - len(self.buffers)


@dataclass(slots=True)
class HeldPop:
    connection: Connection
    request: RemotingCommand
    context: PopContext
    keys: tuple[str, ...]
    timer: asyncio.TimerHandle | None = None
    running: bool = False


class PopHandlers:
    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetManager,
        filters: ConsumerFilters,
        behaviour: BrokerBehaviour,
        revive: ReviveWriter,
        order_infos: OrderInfoTable,
        *,
        broker_name: str,
        broker_permission: Callable[[], int],
    ) -> None:
        self._store = store
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._filters = filters
        self._behaviour = behaviour
        self._revive = revive
        self._order = order_infos
        self._broker_name = broker_name
        self._broker_permission = broker_permission
        self._locked: set[tuple[str, str, int]] = set()
        self._held: dict[str, list[HeldPop]] = defaultdict(list)
        self._held_count = 0
        self.popped = 0
        """Messages handed out by pops since start (a metric)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._refusals = LogLimiter(log)
        store.add_arrival_listener(self.on_message_arrived, self._held)  # (no call while no pop is held)

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.POP_MESSAGE: self.pop}

    async def pop(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        header = PopMessageRequestHeader.from_ext(request.ext_fields)
        checked = self._check(conn, request, header)
        if isinstance(checked, RemotingCommand):
            return checked
        batch = await self._pop_once(checked)
        if batch.buffers:
            return self._answer(request, header, batch)
        if header.poll_time <= 0:
            return self._answer(request, header, batch)
        return self._hold(conn, request, checked)

    # --- checks -----------------------------------------------------------------------------

    def _check(self, conn: Connection, request: RemotingCommand,
               header: PopMessageRequestHeader) -> PopContext | RemotingCommand:
        if not self._broker_permission() & codes.Perm.READ:
            return request.response(ResponseCode.NO_PERMISSION, "the broker pop message is forbidden")
        if header.max_msg_nums > MAX_POP_BATCH or header.max_msg_nums <= 0:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    f"the broker pop message size {header.max_msg_nums} is not in 1..{MAX_POP_BATCH}")
        if header.poll_time > 0 and header.born_time > 0 and (
                _now_ms() - header.born_time - header.poll_time > POLL_LATENESS_MS):
            return request.response(ResponseCode.POLLING_TIMEOUT, "the broker pop message is timeout too much")
        try:
            group = self._groups.find_or_create(header.consumer_group,
                                                auto_create=self._behaviour.auto_create_subscription_group)
        except GroupError as exc:
            self._refusals.warning(conn.remote_addr, "pop from %s refused, group %s: %s",
                                   conn.remote_addr, header.consumer_group[:MAX_GROUP_SHOWN], exc)
            return request.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group: {exc}")
        if group is None:
            return request.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                    f"subscription group [{header.consumer_group}] does not exist")
        if not group.consume_enable:
            return request.response(ResponseCode.NO_PERMISSION,
                                    f"subscription group [{header.consumer_group}] consume is disabled")
        topic = self._topics.get(header.topic)
        if topic is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST,
                                    f"topic[{header.topic}] not exist, apply first please!")
        if not topic.perm & codes.Perm.READ:
            return request.response(ResponseCode.NO_PERMISSION,
                                    f"the topic[{header.topic}] peeking message is forbidden")
        if header.queue_id != ALL_QUEUES and not 0 <= header.queue_id < topic.read_queue_nums:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                                    f"topicConfig.readQueueNums:[{topic.read_queue_nums}]")
        try:
            sub = subscription.build(header.topic, header.exp or subscription.SUB_ALL, header.exp_type, 0)
        except SubscriptionError as exc:
            return request.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                                    f"parse the consumer's subscription failed: {exc}")
        if sub.is_tag_type:
            tag_filter = None if sub.matches_all else sub.matches_tag_code
            return PopContext(header, sub, None, tag_filter)
        refusal = self._filters.check_pull(header.consumer_group, sub, in_request=True)
        if refusal is not None:
            return request.response(*refusal)
        try:  # unlike a pull, which then matches everything, a pop refuses a bad expression
            selector = sql92.compile_selector(sub.sub_string)
        except sql92.FilterSyntaxError as exc:
            return request.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"{PARSE_FAILED}: {exc}")
        return PopContext(header, sub, record_filter(selector), None)

    # --- popping ----------------------------------------------------------------------------

    async def _pop_once(self, ctx: PopContext) -> PopBatch:
        header = ctx.header
        revive_qid = popinfo.ORDER_REVIVE_QID if header.order else self._revive.next_queue()
        batch = PopBatch(_now_ms(), header.invisible_time, revive_qid, header.max_msg_nums)
        retry = None if header.order else self._topics.get(self._retry_topic(header))
        retry_first = retry is not None and random.randrange(100) < RETRY_FIRST_PERCENT
        if retry is not None and retry_first:
            await self._pop_topic(batch, ctx, retry.topic_name, retry.read_queue_nums, is_retry=True)
        topic = self._topics.get(header.topic)
        if topic is not None:
            await self._pop_topic(batch, ctx, header.topic, topic.read_queue_nums, is_retry=False)
        if retry is not None and not retry_first:
            await self._pop_topic(batch, ctx, retry.topic_name, retry.read_queue_nums, is_retry=True)
        return batch

    def _retry_topic(self, header: PopMessageRequestHeader) -> str:
        return popinfo.pop_retry_topic(header.topic, header.consumer_group, v2=self._behaviour.enable_retry_topic_v2)

    async def _pop_topic(self, batch: PopBatch, ctx: PopContext, topic: str, queue_nums: int, *,
                         is_retry: bool) -> None:
        if is_retry or ctx.header.queue_id == ALL_QUEUES:
            start = random.randrange(max(1, queue_nums))
            queue_ids = [(start + i) % queue_nums for i in range(queue_nums)]
        else:
            queue_ids = [ctx.header.queue_id]
        for qid in queue_ids:
            if batch.remaining <= 0:
                batch.rest += max(0, self._store.get_max_offset(topic, qid) - self._pop_offset(ctx, topic, qid))
                continue
            key = (topic, ctx.header.consumer_group, qid)
            if key in self._locked:
                continue
            self._locked.add(key)
            try:
                await self._pop_queue(batch, ctx, topic, qid, is_retry)
            finally:
                self._locked.discard(key)

    def _pop_offset(self, ctx: PopContext, topic: str, qid: int) -> int:
        """The group's offset in a queue; a new group starts as ``initMode`` says (retry topics at their start)."""
        committed = self._offsets.query(ctx.header.consumer_group, topic, qid)
        low, high = self._store.get_min_offset(topic, qid), self._store.get_max_offset(topic, qid)
        if committed < 0:
            # MAX: the end, unless nothing was ever deleted (RocketMQ: the first message is in memory)
            if ctx.header.init_mode == INIT_MODE_MIN or low == 0 or topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX):
                return low
            return high
        return min(max(committed, low), high)

    async def _pop_queue(self, batch: PopBatch, ctx: PopContext, topic: str, qid: int, is_retry: bool) -> None:
        header = ctx.header
        group = header.consumer_group
        info = self._order.get((topic, group, qid)) if header.order else None
        now = _now_ms()
        if info is not None and info.blocks(now, header.attempt_id):
            return
        offset = self._pop_offset(ctx, topic, qid)
        result = self._store.get_messages(
            topic, qid, offset, batch.remaining,
            tag_filter=None if is_retry else ctx.tag_filter,
            record_filter=None if is_retry else ctx.record_filter)
        batch.rest += max(0, result.max_offset - result.next_begin_offset)
        if result.status is not GetStatus.FOUND:
            if result.next_begin_offset != offset and info is None:
                self._offsets.commit(group, topic, qid, result.next_begin_offset)  # skipped unmatched or moved
            return
        offsets, views = list(result.queue_offsets), list(result.buffers)
        if header.order:
            offsets, views = self._take_orderly(batch, ctx, topic, qid, offset, result.next_begin_offset,
                                                info, offsets, views)
        else:
            ck = CheckPoint(offset, batch.pop_time, header.invisible_time, qid, topic, group, self._broker_name,
                            [o - offset for o in offsets])
            stored = await self._revive.checkpoint(ck, batch.revive_qid)
            if not stored.ok:
                self._refusals.warning("checkpoint", "pop checkpoint of %s queue %d not stored (%s); "
                                       "messages not handed out", topic, qid, stored.status.name)
                return
            self._offsets.commit(group, topic, qid, result.next_begin_offset)
        if not offsets:
            return
        if is_retry:
            batch.buffers.extend(self._renamed(view, header.topic, batch, offset) for view in views)
        else:
            batch.buffers.extend(views)
        batch.start_infos.append((topic, qid, offset))
        batch.msg_infos.append((topic, qid, offsets))

    def _take_orderly(self, batch: PopBatch, ctx: PopContext, topic: str, qid: int, offset: int, next_offset: int,
                      old: OrderInfo | None, offsets: list[int], buffers: list[memoryview]
                      ) -> tuple[list[int], list[memoryview]]:
        """Record the orderly batch; drop messages an earlier batch already had acked."""
        kept = [(o, b) for o, b in zip(offsets, buffers, strict=True) if old is None or o not in old.acked]
        # a re-pop counts one more consumption, unless it is the same attempt asking again
        again = 0 if old is not None and ctx.header.attempt_id and ctx.header.attempt_id == old.attempt_id else 1
        counts = {o: (old.counts.get(o, 0) + again if old is not None and o in old.offsets else 0) for o, _ in kept}
        info = OrderInfo(batch.pop_time, ctx.header.invisible_time, [o for o, _ in kept], next_offset, counts,
                         attempt_id=ctx.header.attempt_id)
        key = (topic, ctx.header.consumer_group, qid)
        if info.offsets:
            self._order.put(key, info)
        self._offsets.commit(ctx.header.consumer_group, topic, qid, info.commit_offset())
        batch.order_counts.extend((topic, qid, o, counts[o]) for o, _ in kept)
        return [o for o, _ in kept], [b for _, b in kept]

    def _renamed(self, buf: memoryview, topic: str, batch: PopBatch, start: int) -> bytes | memoryview:
        """A retry-topic message as the consumer sees it: under its topic, with its POP_CK."""
        try:
            msg = storedrecords.decode_stored_record(buf, decompress=False)
        except messageerrors.MessageFormatError:
            return buf
        props = dict(msg.properties)
        props.setdefault(POP_CK, popinfo.ExtraInfo(
            start, batch.pop_time, batch.invisible_time, batch.revive_qid, popinfo.topic_type(msg.topic),
            self._broker_name, msg.queue_id, msg.queue_offset).build())
        props.setdefault(messageproperties.RETRY_TOPIC, msg.topic)
        try:
            return storedrecords.encode_stored_record(
                topic=topic, queue_id=msg.queue_id, body=msg.body, flag=msg.flag, properties=props,
                sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp, born_host=msg.born_host,
                store_timestamp=msg.store_timestamp, store_host=msg.store_host, reconsume_times=msg.reconsume_times,
                prepared_transaction_offset=msg.prepared_transaction_offset, queue_offset=msg.queue_offset,
                physical_offset=msg.commit_log_offset, max_message_size=1 << 30)
        except messageerrors.MessageIllegalError:
            return buf

    def _answer(self, request: RemotingCommand, header: PopMessageRequestHeader, batch: PopBatch) -> RemotingCommand:
        ext = PopMessageResponseHeader(
            pop_time=batch.pop_time, invisible_time=header.invisible_time, revive_qid=batch.revive_qid,
            rest_num=batch.rest,
            start_offset_info=popinfo.build_start_offset_info(batch.start_infos) or None,
            msg_offset_info=popinfo.build_msg_offset_info(batch.msg_infos) or None,
            order_count_info=popinfo.build_order_count_info(batch.order_counts) or None,
        ).to_ext()
        if not batch.buffers:
            return request.response(ResponseCode.POLLING_TIMEOUT, "no new message", ext)
        response = request.response(ResponseCode.SUCCESS, None, ext)
        response.body_parts = batch.buffers
        self.popped += len(batch.buffers)
        return response

    # --- long polling -----------------------------------------------------------------------

    def _hold(self, conn: Connection, request: RemotingCommand, ctx: PopContext) -> RemotingCommand | None:
        header = ctx.header
        keys = (header.topic,) if header.order else (header.topic, self._retry_topic(header))
        per_key = len(self._held.get(header.topic, ()))
        if self._held_count >= self._behaviour.max_pop_polling_size or per_key >= self._behaviour.pop_polling_size:
            return request.response(ResponseCode.POLLING_FULL, "the broker pop polling queue is full")
        held = HeldPop(conn, request, ctx, keys)
        for key in keys:
            self._held[key].append(held)
        self._held_count += 1
        held.timer = asyncio.get_running_loop().call_later(header.poll_time / 1000, self._expire, held)
        return None

    def on_message_arrived(self, topic: str, queue_id: int, next_offset: int) -> None:
        """Store dispatch callback: re-run the pops held on this topic (or on its retry topic)."""
        self.wake(topic)

    def wake(self, topic: str) -> None:
        for held in list(self._held.get(topic, ())):
            if not held.running:
                self._spawn(self._retry_held(held, final=False))

    def _expire(self, held: HeldPop) -> None:
        held.timer = None
        self._spawn(self._retry_held(held, final=True))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _retry_held(self, held: HeldPop, *, final: bool) -> None:
        if held.running or not self._is_held(held):
            return
        if held.connection.closed:
            self._release(held)
            return
        held.running = True
        try:
            batch = await self._pop_once(held.context)
        finally:
            held.running = False
        if not self._is_held(held):
            return  # released while popping (shutdown)
        if batch.buffers or final or held.timer is None:
            self._release(held)
            if not held.connection.closed:
                held.connection.send_response(self._answer(held.request, held.context.header, batch))

    def _is_held(self, held: HeldPop) -> bool:
        return held in self._held.get(held.keys[0], ())

    def _release(self, held: HeldPop) -> None:
        for key in held.keys:
            waiting = self._held.get(key)
            if waiting is not None and held in waiting:
                waiting.remove(held)
                if not waiting:
                    del self._held[key]
        self._held_count -= 1
        if held.timer is not None:
            held.timer.cancel()
            held.timer = None

    @property
    def held_count(self) -> int:
        return self._held_count

    async def close(self) -> None:
        """Drop every held pop (clients see the connection close) and await the re-runs in flight."""
        for waiting in list(self._held.values()):
            for held in list(waiting):
                if self._is_held(held):
                    self._release(held)
        self._held.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _now_ms() -> int:
    return int(time.time() * 1000)

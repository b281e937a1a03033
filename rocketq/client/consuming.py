"""Concurrent consumption: calling the listener, and what its answer does to offsets and retries.

Pulled messages are cut into batches of ``consumeMessageBatchMaxSize`` and each batch is one
listener call; at most ``consumeThreadMax`` calls run at once (``_Slots`` stands in for Java's
thread pool), in no particular order. A plain listener's call ends where it starts, so most
batches need no task of their own (``ConcurrentConsumeService``).

The listener answers CONSUME_SUCCESS or RECONSUME_LATER (an exception, ``None`` or anything
else counts as RECONSUME_LATER). Setting ``context.ack_index`` acknowledges only the first
``ack_index + 1`` messages of a successful batch. What is not acknowledged:

- CLUSTERING: is handed back to the broker (CONSUMER_SEND_MSG_BACK, ``delayLevel`` from the
  context, 0 = broker's choice ``3 + reconsumeTimes``) and redelivered through the group's
  retry topic, up to ``maxReconsumeTimes`` and then to the DLQ. When the broker cannot take it
  back, the message stays in its process queue and is given to the listener again 5 s later.
- BROADCASTING: is dropped with a warning, as RocketMQ does.

With ``consume_tps_limit`` N > 0 each batch first waits its turn in a
``consumelimits.ConsumeRateLimiter``, so the listener never gets more than N messages/s.

Either way the consumed messages leave their process queue and the queue's offset moves to the
new commit point. Messages redelivered from ``%RETRY%group`` carry the original topic in
RETRY_TOPIC; the listener sees that topic, as in RocketMQ.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import enum
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from rocketq.client import consumelimits, wire
from rocketq.client.errors import ClientError
from rocketq.client.instance import ClientInstance
from rocketq.client.offsetstores import OffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import MessageModel, PushConsumerSettings
from rocketq.protocol import messageproperties
from rocketq.protocol.codes import retry_topic
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader
from rocketq.protocol.messagetypes import MessageExt
from rocketq.remoting.errors import RemotingError

log = logging.getLogger(__name__)

RECONSUME_LOCALLY_DELAY: Final = 5.0
"""Seconds before a message the broker would not take back is given to the listener again."""
SEND_BACK_TIMEOUT: Final = 5.0
ACK_ALL: Final = 2**31 - 1


class ConsumeStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


_CONSUME_SUCCESS: Final = ConsumeStatus.CONSUME_SUCCESS
"""An enum member read from the class costs ~50 ns (``EnumType`` lookup); once per batch here."""


@dataclass(slots=True)
class ConsumeContext:
    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    """Delay level for messages handed back; 0 lets the broker pick 3 + reconsumeTimes."""
    ack_index: int = ACK_ALL
    """Index of the last message acknowledged by CONSUME_SUCCESS (default: all)."""


Listener = Callable[[list[MessageExt], ConsumeContext], Awaitable[ConsumeStatus] | ConsumeStatus]


def restore_retry_topic(msg: MessageExt, group: str) -> MessageExt:
    """A message redelivered via ``%RETRY%group`` shown under its original topic."""
    original = msg.properties.get(messageproperties.RETRY_TOPIC)
    if original and msg.topic == retry_topic(group):
        return dataclasses.replace(msg, topic=original)
    return msg


S = TypeVar("S", bound=enum.Enum)


async def verdict(listener: Callable[[list[MessageExt], Any], object], msgs: list[MessageExt], ctx: Any,
                  failure: S) -> S:
    """Call a listener (plain or async) for its answer, a member of ``failure``'s enum; an
    exception, or an answer of another kind, is logged and means ``failure``."""
    try:
        status = listener(msgs, ctx)
    except Exception:
        return listener_failed(msgs, ctx, failure)
    if type(status) is type(failure):  # a plain listener's answer: no awaitable to look for
        return status
    return await settle(status, msgs, ctx, failure)


def listener_failed(msgs: list[MessageExt], ctx: Any, failure: S) -> S:
    """Log the exception being handled, a listener's; its answer is ``failure``."""
    queue = getattr(ctx, "message_queue", None)
    log.exception("listener failed on %d message(s) of %s; answering %s", len(msgs), queue, failure.name)
    return failure


async def settle(status: object, msgs: list[MessageExt], ctx: Any, failure: S) -> S:
    """The verdict from what a listener returned when that was not already a member of
    ``failure``'s enum: an awaitable's result, or ``failure`` for anything else."""
    try:
        if inspect.isawaitable(status):
            status = await status
    except asyncio.CancelledError:
        raise
    except Exception:
        return listener_failed(msgs, ctx, failure)
    if not isinstance(status, type(failure)):
        log.warning("listener returned %r for %s; treating it as %s", status, getattr(ctx, "message_queue", None),
                    failure.name)
        return failure
    return status


class _Slots:
    """``consumeThreadMax`` listener calls at once (Java's consume thread pool): a slot is taken
    at once when one is free and nobody waits (``try_take``), else waited for in turn (``take``).

    asyncio's Semaphore only hands slots out through a coroutine; the consume service takes one
    inline for a batch it runs without a task, and gives it back as soon as a plain listener
    has answered."""

    def __init__(self, size: int) -> None:
        self.free = size
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        """Who waits for a slot (``take``), in turn: a freed slot is theirs, not ``try_take``'s."""

    def try_take(self) -> bool:
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return True
        return False

    async def take(self) -> None:
        if self.try_take():
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed a slot as it was cancelled: pass it on
            raise

    def give(self) -> None:
        """Hand the slot to the longest waiter, or free it."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


class ConcurrentConsumeService:
    """Listener calls for pulled batches (see the module).

    A batch with no delay and no rate limit runs in the loop turn after ``submit`` as a plain
    callback (``_consume_now``), where a task would have taken its first step: with a free
    slot and a plain listener it is called, settled and committed there, with no task,
    coroutine or semaphore per batch. Only what waits gets a task: an awaitable answer
    (holding its slot until it settles), a send-back, a batch with no free slot, a delay or a
    rate limit (``_consume``, which waits for each in turn)."""

    def __init__(self, group: str, settings: PushConsumerSettings, listener: Listener,
                 instance: ClientInstance, offsets: OffsetStore) -> None:
        self._group = group
        self._settings = settings
        self._listener = listener
        self._instance = instance
        self._offsets = offsets
        self._slots = _Slots(settings.consume_thread_max)
        self._limiter = consumelimits.limiter_for(settings.consume_tps_limit)
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = 0
        """Batches handed to the loop (``_consume_now``) that have not run yet."""
        self._closed = False
        self._stopped = False
        """Set by ``close`` when it cancels what is left: batches not run yet are dropped."""
        self._retry_topic = retry_topic(group)

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, delay: float = 0.0) -> None:
        if self._closed:
            return
        size = self._settings.consume_message_batch_max_size
        direct = not delay and self._limiter is None
        # the loop, once: ``get_running_loop`` costs a getpid() system call each time
        loop = self._loop or self._bind_loop()
        if direct and len(msgs) <= size:  # one batch: the list itself (the caller keeps no other use of it)
            self._scheduled += 1
            loop.call_soon(self._consume_now, msgs, pq, mq)
            return
        for start in range(0, len(msgs), size):
            batch = msgs[start:start + size]
            if direct:
                self._scheduled += 1
                loop.call_soon(self._consume_now, batch, pq, mq)
            else:
                self._spawn(self._consume(batch, pq, mq, delay))

    def _bind_loop(self) -> asyncio.AbstractEventLoop:
        self._loop = asyncio.get_running_loop()
        return self._loop

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = (self._loop or self._bind_loop()).create_task(coro)  # a coroutine: no ensure_future checks
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def in_flight(self) -> int:
        return len(self._tasks) + self._scheduled

    def _consume_now(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """A batch's turn, without a task while nothing has to wait (see the class). The usual
        batch (a plain listener's CONSUME_SUCCESS for all of it) is committed here, without
        ``_conclude``: this runs once per pull answer."""
        self._scheduled -= 1
        if self._stopped or pq.dropped:
            return
        slots = self._slots
        if not slots.try_take():  # wait for a slot in turn
            self._spawn(self._consume(msgs, pq, mq, 0.0))
            return
        answer, ctx, shown = self._call_listener(msgs, mq)
        if type(answer) is not ConsumeStatus:
            self._spawn(self._settle(answer, ctx, shown, msgs, pq, mq))
            return
        slots.give()
        if answer is not _CONSUME_SUCCESS or ctx.ack_index < len(msgs) - 1 or pq.dropped:
            finishing = self._conclude(answer, ctx, msgs, pq, mq)
            if finishing is not None:
                self._spawn(finishing)
            return
        self._commit(msgs, pq, mq)

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        if self._limiter is not None:
            await self._limiter.acquire(len(msgs))  # waiting here holds no slot
        await self._slots.take()
        try:
            if pq.dropped:
                return
            answer, ctx, shown = self._call_listener(msgs, mq)
            status = answer if type(answer) is ConsumeStatus else await settle(
                answer, shown, ctx, ConsumeStatus.RECONSUME_LATER)
        finally:
            self._slots.give()
        finishing = self._conclude(status, ctx, msgs, pq, mq)
        if finishing is not None:
            await finishing

    async def _settle(self, answer: object, ctx: ConsumeContext, shown: list[MessageExt], msgs: list[MessageExt],
                      pq: ProcessQueue, mq: MessageQueue) -> None:
        """An answer that is not a ``ConsumeStatus`` yet (an awaitable): settled holding the slot."""
        try:
            status = await settle(answer, shown, ctx, ConsumeStatus.RECONSUME_LATER)
        finally:
            self._slots.give()
        finishing = self._conclude(status, ctx, msgs, pq, mq)
        if finishing is not None:
            await finishing

    def _call_listener(self, msgs: list[MessageExt],
                       mq: MessageQueue) -> tuple[object, ConsumeContext, list[MessageExt]]:
        """The listener's answer for a batch (``verdict`` inline: a plain listener's answer needs
        no coroutine), its context and the messages it was shown."""
        # only a message pulled from the group's retry topic can carry another topic to show
        shown = ([restore_retry_topic(m, self._group) for m in msgs] if mq.topic == self._retry_topic
                 else msgs.copy())
        started = str(time.time_ns() // 1_000_000)
        for m in shown:
            m.properties[messageproperties.CONSUME_START_TIME] = started
        ctx = ConsumeContext(mq)
        try:
            answer = self._listener(shown, ctx)
        except Exception:
            answer = listener_failed(shown, ctx, ConsumeStatus.RECONSUME_LATER)
        return answer, ctx, shown

    def _conclude(self, status: ConsumeStatus, ctx: ConsumeContext, msgs: list[MessageExt], pq: ProcessQueue,
                  mq: MessageQueue) -> Coroutine[Any, Any, None] | None:
        """Commit a fully acknowledged batch here; anything else is ``_finish``'s (returned, to
        be awaited). Nothing for a queue dropped meanwhile."""
        if pq.dropped:
            return None
        if status is ConsumeStatus.CONSUME_SUCCESS and ctx.ack_index >= len(msgs) - 1:
            self._commit(msgs, pq, mq)  # all acknowledged: ``_finish`` would only do this
            return None
        return self._finish(status, ctx, msgs, pq, mq)

    def _commit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """Done with ``msgs``: out of the process queue, the queue's offset to the commit point."""
        offset = pq.remove(msgs)
        if offset >= 0 and not pq.dropped:
            self._offsets.update(mq, offset, increase_only=True)

    async def _finish(self, status: ConsumeStatus, ctx: ConsumeContext, msgs: list[MessageExt],
                      pq: ProcessQueue, mq: MessageQueue) -> None:
        ack_index = min(ctx.ack_index, len(msgs) - 1) if status is ConsumeStatus.CONSUME_SUCCESS else -1
        unacked = msgs[ack_index + 1:]
        kept: list[MessageExt] = []
        if self._settings.message_model is MessageModel.BROADCASTING:
            for m in unacked:
                log.warning("BROADCASTING: consume of %s failed, dropping it (no retry in broadcasting)", m.msg_id)
        else:
            for m in unacked:
                if not await self._send_back(m, ctx):
                    kept.append(dataclasses.replace(m, reconsume_times=m.reconsume_times + 1))
        if kept:
            kept_offsets = {m.queue_offset for m in kept}
            msgs = [m for m in msgs if m.queue_offset not in kept_offsets]
        self._commit(msgs, pq, mq)
        if kept:
            self.submit(kept, pq, mq, delay=RECONSUME_LOCALLY_DELAY)

    async def _send_back(self, msg: MessageExt, ctx: ConsumeContext) -> bool:
        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset,
            group=self._group,
            delay_level=ctx.delay_level_when_next_consume,
            origin_msg_id=msg.msg_id,
            origin_topic=restore_retry_topic(msg, self._group).topic,
            max_reconsume_times=self._settings.effective_max_reconsume_times,
        )
        try:
            instance, mq = self._instance, ctx.message_queue
            await instance.call_current(mq.topic, lambda: instance.find_master(mq),
                                        lambda addr: wire.consumer_send_back(instance.remoting, addr, header,
                                                                             SEND_BACK_TIMEOUT))
        except (ClientError, RemotingError) as exc:
            log.warning("send back of %s failed (%s); reconsuming locally in %.0f s",
                        msg.msg_id, exc, RECONSUME_LOCALLY_DELAY)
            return False
        return True

    async def close(self, grace: float = 0.0) -> None:
        """Let listener calls finish for up to ``grace`` s, cancel the rest, wait. Idempotent.

        A cancelled call's messages were not committed, so they are delivered again (to this
        group's next owner of the queue): at-least-once, never lost.
        """
        self._closed = True
        if self._scheduled and grace > 0:
            await asyncio.sleep(0)  # batches handed to the loop take their turn, as tasks would
        tasks = list(self._tasks)
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        self._stopped = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

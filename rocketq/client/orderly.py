"""Orderly consumption: each queue's messages to the listener one batch at a time, in order.

    async def handle(msgs, ctx):          # ctx: ConsumeOrderlyContext
        for m in msgs: apply(m)
        return ConsumeOrderlyStatus.SUCCESS

    consumer.register_orderly_listener(handle)

Messages sent with the same sharding key to the same queue (``hash_by_key``) are then handled
in send order. RocketMQ's ``ConsumeMessageOrderlyService``, rebuilt on asyncio:

- **One worker per queue.** A queue gets a worker task when messages arrive and none is
  running; it takes the ``consumeMessageBatchMaxSize`` lowest-offset messages, calls the
  listener, and only then takes the next ones. Different queues run in parallel (at most
  ``consumeThreadMax`` listener calls at once).
- **The broker lock.** In CLUSTERING a worker consumes only while this client holds the queue's
  lock on its master broker (LOCK_BATCH_MQ, see ``queuelocks``) and the lock is fresh (renewed
  in the last 30 s). Otherwise it tries to lock the queue and comes back after 10 ms (granted)
  or 3 s (not). A worker yields for 10 ms after 60 s of continuous work.
- **Answers.** SUCCESS (and the deprecated COMMIT/ROLLBACK) commits the batch: the queue's offset
  moves past it (``increase_only=False``). SUSPEND_CURRENT_QUEUE_A_MOMENT (also an exception or
  ``None``) retries the *same* batch locally after ``suspendCurrentQueueTimeMillis`` (context
  value, or the consumer's, 1000 ms; clamped to 10..30000 ms), counting each message's
  ``reconsume_times`` up: the queue does not move past a failing message, which is the price
  of order.
- **Past maxReconsumeTimes** (-1: unbounded for orderly consumers) a message is sent to the
  group's retry topic with RECONSUME_TIME = its count, MAX_RECONSUME_TIMES and DELAY 3 + count,
  as RocketMQ's client does; the broker's retry routing turns that send into one to the
  group's DLQ (``%DLQ%group``). If the send fails, the message is retried locally again. A
  batch whose every message went to the DLQ is committed; otherwise the whole batch is
  retried (RocketMQ's rule).

With ``consume_tps_limit`` N > 0 every listener call (a retried batch included) first waits
its turn in a ``consumelimits.ConsumeRateLimiter``: at most N messages/s over all queues.

A queue taken away (``dropped``) stops its worker after the current call, whose result is then
not committed: the next owner gets those messages again (at-least-once, order kept).
BROADCASTING needs no lock. Not provided: ``auto_commit=False`` (RocketMQ deprecated it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from rocketq.client import consumelimits, wire
from rocketq.client.consuming import restore_retry_topic, verdict
from rocketq.client.errors import ClientError
from rocketq.client.instance import ClientInstance
from rocketq.client.offsetstores import OffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import MessageModel, PushConsumerSettings
from rocketq.protocol import message
from rocketq.protocol.codes import retry_topic
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.protocol.message import MessageExt
from rocketq.remoting.errors import RemotingError

log = logging.getLogger(__name__)

LOCKED_AGAIN_DELAY: Final = 0.01
"""Seconds before consuming after the queue's lock was (re)taken."""
NOT_LOCKED_DELAY: Final = 3.0
"""Seconds before trying again when the broker did not grant the queue's lock."""
MAX_TIME_CONSUME_CONTINUOUSLY: Final = 60.0
"""``rocketmq.client.maxTimeConsumeContinuously``: a worker yields after this many seconds."""
SUSPEND_MIN_MS: Final = 10
SUSPEND_MAX_MS: Final = 30_000
UNBOUNDED_RECONSUME_TIMES: Final = 2**31 - 1
"""maxReconsumeTimes -1 for an orderly consumer: Java's Integer.MAX_VALUE."""
DLQ_DELAY_BASE: Final = 3
"""The retry send's delay level is 3 + reconsumeTimes (RocketMQ's client)."""
INNER_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"
SEND_BACK_TIMEOUT: Final = 3.0


class ConsumeOrderlyStatus(enum.Enum):
    SUCCESS = "SUCCESS"
    ROLLBACK = "ROLLBACK"
    """Deprecated in RocketMQ; treated as SUCCESS with a warning, as RocketMQ does with auto-commit."""
    COMMIT = "COMMIT"
    """Deprecated in RocketMQ; the same as SUCCESS."""
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass(slots=True)
class ConsumeOrderlyContext:
    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1
    """How long to wait before retrying after SUSPEND; -1 uses the consumer's setting."""


OrderlyListener = Callable[[list[MessageExt], ConsumeOrderlyContext],
                           Awaitable[ConsumeOrderlyStatus] | ConsumeOrderlyStatus]
LockOne = Callable[[MessageQueue], Awaitable[bool]]
SendBack = Callable[[MessageExt, MessageQueue], Awaitable[bool]]


async def call_orderly_listener(listener: OrderlyListener, msgs: list[MessageExt],
                                ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
    """The listener's answer; an exception or anything but a status means SUSPEND."""
    return await verdict(listener, msgs, ctx, ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT)


def suspend_seconds(ctx: ConsumeOrderlyContext, default_ms: int) -> float:
    ms = ctx.suspend_current_queue_time_millis
    if ms == -1:
        ms = default_ms
    return min(max(ms, SUSPEND_MIN_MS), SUSPEND_MAX_MS) / 1000


def retry_send(msg: MessageExt, group: str, max_times: int,
               queue_id: int = 0) -> tuple[SendMessageRequestHeader, bytes]:
    """The send that takes a message past ``max_times`` out of an orderly queue (to the DLQ).

    RocketMQ's ``ConsumeMessageOrderlyService.sendMessageBack`` followed by the producer's
    retry-topic handling: RECONSUME_TIME and MAX_RECONSUME_TIMES travel in the header fields.
    """
    props = dict(msg.properties)
    props.setdefault(message.ORIGIN_MESSAGE_ID, msg.msg_id)
    props[message.RETRY_TOPIC] = msg.topic
    props.pop(message.TRAN_MSG, None)
    props[message.DELAY] = str(DLQ_DELAY_BASE + msg.reconsume_times)
    props.pop(message.RECONSUME_TIME, None)
    props.pop(message.MAX_RECONSUME_TIMES, None)
    header = SendMessageRequestHeader(
        producer_group=INNER_PRODUCER_GROUP, topic=retry_topic(group), queue_id=queue_id,
        sys_flag=0, born_timestamp=time.time_ns() // 1_000_000,
        flag=msg.flag, properties=message.encode_properties(props), reconsume_times=msg.reconsume_times,
        max_reconsume_times=max_times,
    )
    return header, msg.body  # the pulled body is already inflated: sent uncompressed (sysFlag 0)


def max_reconsume_times(settings: PushConsumerSettings) -> int:
    """An orderly consumer's limit: the setting, with -1 meaning unbounded (not 16)."""
    configured = settings.max_reconsume_times
    return UNBOUNDED_RECONSUME_TIMES if configured == -1 else configured


class OrderlyConsumeService:
    def __init__(self, group: str, settings: PushConsumerSettings, listener: OrderlyListener,
                 offsets: OffsetStore, *, lock: LockOne, send_back: SendBack) -> None:
        self._group = group
        self._settings = settings
        self._listener = listener
        self._offsets = offsets
        self._lock = lock
        self._send_back = send_back
        self._clustering = settings.message_model is MessageModel.CLUSTERING
        self._slots = asyncio.Semaphore(settings.consume_thread_max)
        self._limiter = consumelimits.limiter_for(settings.consume_tps_limit)
        self._workers: dict[ProcessQueue, asyncio.Task[None]] = {}
        self._calling: set[ProcessQueue] = set()
        """Queues whose worker is inside a listener call (not to be cancelled)."""
        self._closed = False

    @property
    def in_flight(self) -> int:
        return len(self._workers)

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, delay: float = 0.0) -> None:
        """New messages are in ``pq``: make sure a worker is consuming it."""
        if self._closed or pq.dropped:
            return
        worker = self._workers.get(pq)
        if worker is not None and not worker.done():
            return
        task = asyncio.get_running_loop().create_task(self._work(pq, mq, delay), name=f"orderly {mq}")
        self._workers[pq] = task
        task.add_done_callback(lambda t: self._forget(pq, t))

    def _forget(self, pq: ProcessQueue, task: asyncio.Task[None]) -> None:
        if self._workers.get(pq) is task:
            del self._workers[pq]
        if not task.cancelled() and task.exception() is not None:
            log.error("orderly worker of a queue of %s died", self._group, exc_info=task.exception())

    async def wait_idle(self, pq: ProcessQueue, timeout: float) -> bool:
        """Stop ``pq``'s worker (dropped): at once if it is only waiting (to retry, or for a
        lock), else once its listener call ends; False if that call outlasts ``timeout``."""
        worker = self._workers.get(pq)
        if worker is None:
            return True
        if pq not in self._calling:
            worker.cancel()
        done, _ = await asyncio.wait([worker], timeout=timeout)
        return bool(done)

    async def _work(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        started = time.monotonic()
        while not pq.dropped and not self._closed:
            if self._clustering and (not pq.locked or pq.lock_expired()):
                granted = await self._lock(mq)
                await asyncio.sleep(LOCKED_AGAIN_DELAY if granted else NOT_LOCKED_DELAY)
                continue
            if time.monotonic() - started > MAX_TIME_CONSUME_CONTINUOUSLY:
                await asyncio.sleep(LOCKED_AGAIN_DELAY)
                started = time.monotonic()
                continue
            msgs = pq.first(self._settings.consume_message_batch_max_size)
            if not msgs:
                return
            ctx = ConsumeOrderlyContext(mq)
            if self._limiter is not None:
                await self._limiter.acquire(len(msgs))
            async with self._slots:
                if pq.dropped:
                    return
                shown = [restore_retry_topic(m, self._group) for m in msgs]
                self._calling.add(pq)
                try:
                    status = await call_orderly_listener(self._listener, shown, ctx)
                finally:
                    self._calling.discard(pq)
            if pq.dropped:
                return  # not committed: the queue's next owner consumes these again
            if not await self._finish(status, ctx, msgs, pq, mq):
                await asyncio.sleep(suspend_seconds(ctx, self._settings.suspend_current_queue_time_millis))

    async def _finish(self, status: ConsumeOrderlyStatus, ctx: ConsumeOrderlyContext, msgs: list[MessageExt],
                      pq: ProcessQueue, mq: MessageQueue) -> bool:
        """Apply the listener's answer; False when the batch must be consumed again."""
        if status is ConsumeOrderlyStatus.ROLLBACK:
            log.warning("%s: ROLLBACK is not supported with auto-commit; committing %s", self._group, mq)
        if status is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT and await self._count_failure(msgs, pq, mq):
            return False
        offset = pq.remove(msgs)
        if offset >= 0 and not pq.dropped:
            self._offsets.update(mq, offset, increase_only=False)
        return True

    async def _count_failure(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> bool:
        """RocketMQ's ``checkReconsumeTimes``: True if the batch must be consumed again."""
        again = False
        limit = max_reconsume_times(self._settings)
        for msg in msgs:
            if msg.reconsume_times >= limit and await self._send_back(msg, mq):
                continue  # gone to the DLQ
            again = True
            pq.replace(dataclasses.replace(msg, reconsume_times=msg.reconsume_times + 1))
        return again

    async def close(self, grace: float = 0.0) -> None:
        """Let running listener calls finish for up to ``grace`` s, then cancel. Idempotent."""
        self._closed = True
        workers = list(self._workers.values())
        if workers and grace > 0:
            await asyncio.wait(workers, timeout=grace)
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def send_to_retry(instance: ClientInstance, group: str, max_times: int, msg: MessageExt,
                        mq: MessageQueue) -> bool:
    """Send ``msg`` (past its reconsume limit) to the group's retry topic on the queue's broker."""
    header, body = retry_send(msg, group, max_times)
    try:
        await instance.call_current(mq.topic, lambda: instance.find_master(mq),
                                    lambda addr: wire.send(instance.remoting, addr, header, body, SEND_BACK_TIMEOUT))
    except (ClientError, RemotingError) as exc:
        log.warning("%s: sending %s to the DLQ failed (%s); it is consumed again", group, msg.msg_id, exc)
        return False
    return True

"""Pull tasks: one asyncio task per owned queue, pulling ahead of the listener.

A push consumer is a pull consumer with a loop: for each queue it owns, a ``PullTask`` sends a
long-polling PULL_MESSAGE (the broker holds it up to ``brokerSuspendMaxTimeMillis`` when there
is nothing new), puts what comes back in the queue's ``ProcessQueue``, hands it to the consume
service, and pulls again from ``next_begin_offset``.

Before each pull it applies flow control: when the process queue holds more than
``pullThresholdForQueue`` messages, ``pullThresholdSizeForQueue`` MiB, or spans more than
``consumeConcurrentlyMaxSpan`` offsets, the pull waits 50 ms and checks again. The pull also
carries the queue's current offset (COMMIT_OFFSET) so the master stores progress between the
timer's offset commits. Outcomes:

- FOUND: cache and consume; NO_NEW_MSG / NO_MATCHED_MSG: pull again at the new offset (and
  record it as consumed when nothing is cached, so a filtered-out range is not pulled again);
- OFFSET_ILLEGAL: the offset is outside the queue (messages expired, or the queue was reset):
  move to ``next_begin_offset``, store and persist it, restart the cache and continue from
  there (RocketMQ drops the queue and waits for the next rebalance; the effect is the same);
- an error (broker, transport, undecodable answer): log, wait 3 s, retry the same offset. When
  the error says the broker is gone or no longer the master (``staleroutes``), the topic's route
  is refreshed first, and if it now names another address for the queue the pull is retried
  at once there (a failover, found without waiting for the 30 s route timer).

The broker may suggest pulling from a slave (``suggestWhichBrokerId``); the next pull follows
it, and a pull from a slave never carries COMMIT_OFFSET (only a master stores offsets).

An orderly queue (``orderly=True``) has no span limit (its cache is consumed in order anyway)
and, in CLUSTERING, is pulled only while this client holds its broker lock: otherwise the
pull waits 3 s and looks again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final, Protocol

from rocketq.client import pulling, staleroutes, wire
from rocketq.client.errors import ClientError
from rocketq.client.instance import ClientInstance
from rocketq.client.offsetstores import OffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.pulling import PullStatus
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import MessageModel, PushConsumerSettings
from rocketq.protocol.codes import MASTER_ID, RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.message import MessageExt
from rocketq.protocol.requests import command
from rocketq.protocol.subscription import SubscriptionData
from rocketq.remoting.connection import Connection
from rocketq.remoting.errors import RemotingError
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

FLOW_CONTROL_DELAY: Final = 0.05
"""Seconds a paused queue waits before checking its cache again."""
ERROR_DELAY: Final = 3.0
"""Seconds before retrying a pull that failed (``PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION``)."""
NO_SUBSCRIPTION_DELAY: Final = 3.0
UNLOCKED_DELAY: Final = 3.0
"""Seconds an orderly queue whose lock this client does not hold waits before pulling."""
_WITH_COMMIT: Final = pulling.sys_flag(commit_offset=True, suspend=True, subscription=True)
_WITHOUT_COMMIT: Final = pulling.sys_flag(commit_offset=False, suspend=True, subscription=True)


_PULL_MESSAGE: Final = int(RequestCode.PULL_MESSAGE)


def _request_frame(loop: asyncio.AbstractEventLoop, conn: Connection, requests: pulling.PullRequests,
                   offset: int, flag: int, commit: int, timeout: float) -> asyncio.Future[RemotingCommand]:
    """``conn.request(command(PULL_MESSAGE, requests.ext_fields(...)), timeout)`` with the frame
    made from the queue's template: the same bytes, future and outcomes; a cancelled future
    (the pull task stopped) withdraws the request, as ``request``'s does."""
    opaque = conn.next_opaque()
    fut: asyncio.Future[RemotingCommand] = loop.create_future()
    conn.send_frame(requests.frame(opaque, offset, flag, commit), opaque, _PULL_MESSAGE, timeout, fut)
    fut.add_done_callback(lambda done: conn.forget(opaque) if done.cancelled() else None)
    return fut


class ConsumeService(Protocol):
    """Where pulled messages go: the concurrent or the orderly consume service."""

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None: ...


class PullTask:
    def __init__(
        self, mq: MessageQueue, offset: int, *, group: str, settings: PushConsumerSettings,
        instance: ClientInstance, offsets: OffsetStore, consume: ConsumeService,
        subscription: Callable[[str], SubscriptionData | None], orderly: bool = False,
    ) -> None:
        self.mq = mq
        self.pq = ProcessQueue()
        self.next_offset = offset
        self._group = group
        self._settings = settings
        self._instance = instance
        self._offsets = offsets
        self._consume = consume
        self._subscription = subscription
        self._suggested_broker = MASTER_ID
        self._pulled_from: str | None = None
        """The address of the last pull sent."""
        self._flow_controlled = 0
        self._orderly = orderly
        self._needs_lock = orderly and settings.message_model is MessageModel.CLUSTERING
        self._requests: pulling.PullRequests | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The running loop, once the task runs (a test may call ``pull_once`` directly)."""
        self._task = OwnedTask(f"pull {self.mq}", self._run)

    def start(self) -> None:
        self._task.start()

    async def stop(self, *, drop: bool = True) -> None:
        """Stop pulling; with ``drop``, also stop committing results of this queue. Idempotent."""
        if drop:
            self.pq.dropped = True
        await self._task.stop()

    async def _run(self) -> None:
        while not self.pq.dropped:
            delay = await self.pull_once()
            if delay > 0:
                await asyncio.sleep(delay)

    def _flow_control(self) -> str | None:
        """Why pulling should pause now, or None."""
        s, pq = self._settings, self.pq
        if pq.msg_count > s.pull_threshold_for_queue:
            return f"cached {pq.msg_count} messages > pullThresholdForQueue {s.pull_threshold_for_queue}"
        if pq.msg_size_mib > s.pull_threshold_size_for_queue:
            return f"cached {pq.msg_size_mib} MiB > pullThresholdSizeForQueue {s.pull_threshold_size_for_queue}"
        if not self._orderly and pq.max_span() > s.consume_concurrently_max_span:
            return f"offset span {pq.max_span()} > consumeConcurrentlyMaxSpan {s.consume_concurrently_max_span}"
        return None

    async def pull_once(self) -> float:
        """One flow-control check or pull; returns the seconds to wait before the next one."""
        reason = self._flow_control()
        if reason is not None:
            self._flow_controlled += 1
            if self._flow_controlled % 1000 == 1:
                log.warning("%s: flow control on %s: %s", self._group, self.mq, reason)
            return FLOW_CONTROL_DELAY
        if self._needs_lock and not self.pq.locked:
            return UNLOCKED_DELAY
        sub = self._subscription(self.mq.topic)
        if sub is None:
            return NO_SUBSCRIPTION_DELAY
        try:
            result = await self._pull(sub)
        except (ClientError, RemotingError) as exc:
            log.warning("%s: pull of %s at %d failed: %s", self._group, self.mq, self.next_offset, exc)
            return await self._after_failure(exc)
        if self.pq.dropped:
            return 0.0
        if result.status is PullStatus.OFFSET_ILLEGAL:
            return await self._restart_at(result)
        return self._handle(result)

    async def _after_failure(self, error: Exception) -> float:
        """The delay before the next pull: none when a route refresh moved the queue to another
        address (a promoted master), else ``ERROR_DELAY``."""
        failed = self._pulled_from
        if failed is None or not staleroutes.means_stale_route(error):
            return ERROR_DELAY
        self._suggested_broker = MASTER_ID  # a suggested slave may be the broker that is gone
        await self._instance.refresh_stale_route(self.mq.topic, self._instance.api_timeout)
        now = self._instance.subscribe_addr(self.mq.broker_name)
        return 0.0 if now is not None and now[0] != failed else ERROR_DELAY

    async def _pull(self, sub: SubscriptionData) -> pulling.PullResult:
        self._pulled_from = None
        found = self._instance.subscribe_addr(self.mq.broker_name, self._suggested_broker)
        if found is None:  # no route known yet: ``find_subscribe_addr`` fetches it, or raises
            found = await self._instance.find_subscribe_addr(self.mq, self._suggested_broker)
        addr, is_slave = found
        self._pulled_from = addr
        commit = None
        if self._settings.message_model is MessageModel.CLUSTERING and not is_slave:
            commit = self._offsets.read_memory(self.mq)
        flag = _WITH_COMMIT if commit and commit > 0 else _WITHOUT_COMMIT
        requests, offset, commit = self._requests_for(sub), self.next_offset, commit or 0
        timeout = self._settings.consumer_timeout_millis_when_suspend / 1000
        remoting = self._instance.remoting
        conn = remoting.ready_connection(addr)
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        if conn is not None and offset.__class__ is int and commit.__class__ is int:
            # the open connection: the request from the queue's template, its answer's future,
            # without three coroutines in between
            reply = wire.pull_reply(await _request_frame(loop, conn, requests, offset, flag, commit, timeout), addr)
        else:
            header = requests.ext_fields(offset, flag, commit)
            if conn is not None:
                reply = wire.pull_reply(await conn.request(command(RequestCode.PULL_MESSAGE, header), timeout), addr)
            else:
                reply = await wire.pull(remoting, addr, header, timeout)
        result = pulling.to_result(reply, sub)
        self._suggested_broker = result.suggest_which_broker_id
        return result

    def _requests_for(self, sub: SubscriptionData) -> pulling.PullRequests:
        s, requests = self._settings, self._requests
        if requests is None or requests.key != (sub, s.pull_batch_size, s.broker_suspend_max_time_millis):
            requests = self._requests = pulling.PullRequests(self._group, self.mq, s.pull_batch_size, sub,
                                                             s.broker_suspend_max_time_millis)
        return requests

    def _handle(self, result: pulling.PullResult) -> float:
        """A FOUND, NO_NEW_MSG or NO_MATCHED_MSG answer (nothing here waits: no coroutine per pull)."""
        self.next_offset = result.next_begin_offset
        if result.status is PullStatus.FOUND and result.messages:
            self.pq.put(result.messages)
            self._consume.submit(result.messages, self.pq, self.mq)
            return self._settings.pull_interval / 1000
        self._mark_consumed_if_idle()
        return 0.0

    async def _restart_at(self, result: pulling.PullResult) -> float:
        """OFFSET_ILLEGAL: move to the offset the broker named, with a fresh cache."""
        previous, self.next_offset = self.next_offset, result.next_begin_offset
        log.warning("%s: offset %d of %s is illegal (queue holds %d..%d); moving to %d", self._group, previous,
                    self.mq, result.min_offset, result.max_offset, result.next_begin_offset)
        # Start over with a fresh cache: results of listener calls still running on the old one
        # are not committed (they may be redelivered, never skipped).
        self.pq.dropped = True
        locked, self.pq = self.pq.locked, ProcessQueue()
        self.pq.mark_locked(locked)  # same queue, same broker lock
        self._offsets.update(self.mq, result.next_begin_offset, increase_only=False)
        try:
            await self._offsets.persist(self.mq)
        except (ClientError, RemotingError) as exc:
            log.warning("%s: persisting the corrected offset of %s failed: %s", self._group, self.mq, exc)
        # An answer that does not move us would loop at full speed; slow down instead.
        return ERROR_DELAY if result.next_begin_offset == previous else 0.0

    def _mark_consumed_if_idle(self) -> None:
        if self.pq.msg_count == 0:
            self._offsets.update(self.mq, self.next_offset, increase_only=True)

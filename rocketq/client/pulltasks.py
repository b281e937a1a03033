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

On an open connection the pulls are chained by their answers: the read that brings an answer
hands it to the task's callback, which caches and submits its messages and sends the next pull
right there, with no future and no task step per pull; the task waits for the chain to end
(a delay to wait, an error, OFFSET_ILLEGAL) and goes on from there as after one pull. What a
pull does is the same either way (``PullTask._answered`` and the section above it). A plain
FOUND answer is not even decoded into a command: the connection offers its frame to
``PullTask.found`` first, which reads it in place (``pulling.found_at``).

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
from rocketq.protocol.codes import MASTER_ID, RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.message import MessageExt
from rocketq.protocol.requests import command
from rocketq.protocol.subscription import SubscriptionData
from rocketq.remoting.connection import ClientConnection
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
_CLUSTERING: Final = MessageModel.CLUSTERING
"""An enum member read from the class costs ~50 ns (``EnumType`` lookup); once per pull here."""
_SUCCESS: Final = int(ResponseCode.SUCCESS)
"""A FOUND answer's code."""


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
        self._chain: asyncio.Future[pulling.PullResult | float] | None = None
        """What the task awaits while pulls are chained by their answers (``_chained``)."""
        self._out: tuple[ClientConnection, int, str, SubscriptionData] | None = None
        """The chained pull out: its connection, opaque, address and subscription."""
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
        """One flow-control check or pull; returns the seconds to wait before the next one. A pull
        on an open connection is answered to ``_answered``, which sends the next pull itself while
        nothing has to wait: then this returns when that chain of pulls ends (see ``_chained``)."""
        ready = self._ready()
        if ready.__class__ is float:
            return ready
        try:
            outcome = await self._pull(ready)  # type: ignore[arg-type]
        except (ClientError, RemotingError) as exc:
            log.warning("%s: pull of %s at %d failed: %s", self._group, self.mq, self.next_offset, exc)
            return await self._after_failure(exc)
        if outcome.__class__ is float:  # a chain of pulls ended
            return outcome
        result: pulling.PullResult = outcome  # type: ignore[assignment]
        if self.pq.dropped:
            return 0.0
        if result.status is PullStatus.OFFSET_ILLEGAL:
            return await self._restart_at(result)
        return self._handle(result)

    def _ready(self) -> SubscriptionData | float:
        """The subscription to pull with now, or the seconds to wait first (flow control, an
        orderly queue's lock, no subscription)."""
        s = self._settings
        if not self.pq.within(s.pull_threshold_for_queue, s.pull_threshold_size_for_queue,
                              None if self._orderly else s.consume_concurrently_max_span):
            reason = self._flow_control()  # the same checks, with the words to log
            self._flow_controlled += 1
            if self._flow_controlled % 1000 == 1:
                log.warning("%s: flow control on %s: %s", self._group, self.mq, reason)
            return FLOW_CONTROL_DELAY
        if self._needs_lock and not self.pq.locked:
            return UNLOCKED_DELAY
        sub = self._subscription(self.mq.topic)
        if sub is None:
            return NO_SUBSCRIPTION_DELAY
        return sub

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

    async def _pull(self, sub: SubscriptionData) -> pulling.PullResult | float:
        """One pull's result; or, when it went out chained (``_send_chained``), the delay its chain
        of pulls ended with."""
        self._pulled_from = None
        found = self._instance.subscribe_addr(self.mq.broker_name, self._suggested_broker)
        if found is None:  # no route known yet: ``find_subscribe_addr`` fetches it, or raises
            found = await self._instance.find_subscribe_addr(self.mq, self._suggested_broker)
        addr, is_slave = found
        self._pulled_from = addr
        if self._send_chained(addr, is_slave, sub):
            return await self._chained()
        offset, flag, commit = self._request_values(is_slave)
        header = self._requests_for(sub).ext_fields(offset, flag, commit)
        timeout = self._settings.consumer_timeout_millis_when_suspend / 1000
        remoting = self._instance.remoting
        conn = remoting.ready_connection(addr)
        if conn is not None:
            reply = wire.pull_reply(await conn.request(command(RequestCode.PULL_MESSAGE, header), timeout), addr)
        else:
            reply = await wire.pull(remoting, addr, header, timeout)
        result = pulling.to_result(reply, sub)
        self._suggested_broker = result.suggest_which_broker_id
        return result

    def _request_values(self, is_slave: bool) -> tuple[int, int, int]:
        """The pull's offset, sysFlag and commit offset (only a master is told the commit offset)."""
        commit = None
        if self._settings.message_model is _CLUSTERING and not is_slave:
            commit = self._offsets.read_memory(self.mq)
        flag = _WITH_COMMIT if commit and commit > 0 else _WITHOUT_COMMIT
        return self.next_offset, flag, commit or 0

    # --- pulls chained by their answers -----------------------------------------------------------
    #
    # On an open connection a pull's answer is handed to ``_answered`` from inside the read that
    # brings it: no future, no task step. A FOUND answer's messages go to the process queue and
    # the consume service there, and the next pull is sent there too when nothing has to wait
    # (no pull interval, no flow control, the lock held, the route and connection at hand). The
    # task meanwhile awaits ``_chain``, which ends with the delay the last answer asked for, an
    # OFFSET_ILLEGAL result or an error: what ``pull_once`` does next with them is what it
    # does after a single pull. Stopping the task cancels ``_chain`` and withdraws the pull out.

    def _send_chained(self, addr: str, is_slave: bool, sub: SubscriptionData) -> bool:
        """Send the pull to ``addr`` from the queue's template on its open connection, answered to
        ``_answered``; False, having sent nothing, when that connection is not ready."""
        conn = self._instance.remoting.ready_connection(addr)
        if conn is None:
            return False
        offset, flag, commit = self._request_values(is_slave)
        if offset.__class__ is not int or commit.__class__ is not int:  # the template writes exact ints
            return False
        requests = self._requests_for(sub)
        timeout = self._settings.consumer_timeout_millis_when_suspend / 1000
        opaque = conn.next_opaque()
        conn.send_frame(requests.frame(opaque, offset, flag, commit), opaque, _PULL_MESSAGE, timeout, self)
        self._out = (conn, opaque, addr, sub)
        return True

    async def _chained(self) -> pulling.PullResult | float:
        """Wait for the chain of pulls begun by ``_send_chained`` to end (see above)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        chain = self._chain = loop.create_future()
        try:
            return await chain
        finally:
            self._chain = None
            out, self._out = self._out, None
            if out is not None:  # stopped with a pull out: its answer, if one comes, is dropped
                out[0].forget(out[1])

    def _answered(self, response: RemotingCommand | None, error: BaseException | None) -> None:
        """A chained pull's outcome (``Connection.request_callback``'s form): handled here, and the
        next pull sent, or the chain ended for the task (see above)."""
        out, self._out = self._out, None
        chain = self._chain
        if out is None or chain is None or chain.done():
            return  # the task was stopped
        try:
            if response is None:
                raise error if error is not None else RemotingError("pull ended without an answer")
            end = self._take(response, out[2], out[3])
            if end is None:
                end = self._pull_next()
        except Exception as exc:
            chain.set_exception(exc)
            return
        if end is not None:  # else the next pull is out
            chain.set_result(end)

    __call__ = _answered
    """The task is the waiter of its chained pulls (``send_frame``): called as ``_answered``, and
    offered its FOUND answers' frames first (``found``)."""

    def found(self, data: bytes, pos: int, end: int) -> bool:
        """``_answered`` of the answer whose frame is ``data[pos:end]`` (the client connection
        offers a chained pull's plain FOUND answer so, from the read): True when read in place
        and handled; False, having done nothing, when the general path must read it (an answer
        ``pulling.found_at`` does not take, or the task was stopped: ``_answered`` drops it)."""
        out, chain = self._out, self._chain
        if out is None or chain is None or chain.done():
            return False
        try:
            found = pulling.found_at(data, pos, end, out[3])
            if found is None:
                return False
            self._out = None
            self._suggested_broker = found[1]
            if self.pq.dropped:
                after: float | None = 0.0
            else:
                after = self._found(found[0], found[2])
                if after == 0:
                    after = self._pull_next()
        except Exception as exc:
            self._out = None
            chain.set_exception(exc)
            return True
        if after is not None:  # else the next pull is out
            chain.set_result(after)
        return True

    def _take(self, response: RemotingCommand, addr: str, sub: SubscriptionData) -> pulling.PullResult | float | None:
        """An answer of the chain: its messages to the process queue and the consume service.
        None when the next pull may go at once; else how the chain ends (the delay before the
        next pull, or the OFFSET_ILLEGAL result for the task)."""
        if response.code == _SUCCESS:  # FOUND: no PullReply, no PullResult
            header = wire.pull_header(response, addr)  # the only FOUND code: no lookup
            self._suggested_broker = header.suggest_which_broker_id
            messages = pulling.found_messages(response.body, header, sub)
            return 0.0 if self.pq.dropped else self._after_found(header.next_begin_offset, messages)
        result = pulling.to_result(wire.pull_reply(response, addr), sub)
        self._suggested_broker = result.suggest_which_broker_id
        if self.pq.dropped:
            return 0.0
        if result.status is PullStatus.OFFSET_ILLEGAL:
            return result
        delay = self._handle(result)
        return None if delay == 0 else delay

    def _after_found(self, next_begin_offset: int, messages: list[MessageExt]) -> float | None:
        """A FOUND answer of the chain taken (``_found``): None when the next pull may go at once,
        else the delay the chain ends with."""
        delay = self._found(next_begin_offset, messages)
        return None if delay == 0 else delay

    def _pull_next(self) -> float | None:
        """From an answer: the next pull sent now (None), or the delay the chain ends with (0.0
        when only the task can go on: no route at hand, the connection not ready)."""
        ready = self._ready()
        if ready.__class__ is float:
            return ready
        self._pulled_from = None
        found = self._instance.subscribe_addr(self.mq.broker_name, self._suggested_broker)
        if found is None:
            return 0.0
        addr, is_slave = found
        self._pulled_from = addr
        return None if self._send_chained(addr, is_slave, ready) else 0.0  # type: ignore[arg-type]

    def _requests_for(self, sub: SubscriptionData) -> pulling.PullRequests:
        s, requests = self._settings, self._requests
        if requests is None or requests.key != (sub, s.pull_batch_size, s.broker_suspend_max_time_millis):
            requests = self._requests = pulling.PullRequests(self._group, self.mq, s.pull_batch_size, sub,
                                                             s.broker_suspend_max_time_millis)
        return requests

    def _handle(self, result: pulling.PullResult) -> float:
        """A FOUND, NO_NEW_MSG or NO_MATCHED_MSG answer (nothing here waits: no coroutine per pull)."""
        if result.status is PullStatus.FOUND:
            return self._found(result.next_begin_offset, result.messages)
        self.next_offset = result.next_begin_offset
        self._mark_consumed_if_idle()
        return 0.0

    def _found(self, next_begin_offset: int, messages: list[MessageExt]) -> float:
        """A FOUND answer's messages (none left when the tag filter took them all)."""
        self.next_offset = next_begin_offset
        if messages:
            self.pq.put(messages)
            self._consume.submit(messages, self.pq, self.mq)
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

"""PushConsumer: subscribe to topics and have a listener called with their messages.

    consumer = PushConsumer("cg", namesrv_addr="127.0.0.1:9876")
    consumer.subscribe("TopicTest", "TagA || TagB")
    consumer.register_listener(handle)        # async def handle(msgs, ctx) -> ConsumeStatus
    await consumer.start()
    ...
    await consumer.close()

How the parts fit (each its own module): a ``ClientInstance`` keeps routes and heartbeats; a
``Rebalancer`` decides which queues this member owns; each owned queue gets a ``PullTask``
(long-polling pulls, flow control) feeding the ``ConcurrentConsumeService`` (listener calls,
send-back of failures); an ``OffsetStore`` keeps progress (on the brokers for CLUSTERING, in a
local file for BROADCASTING) and is persisted every ``persistConsumerOffsetInterval``.

In CLUSTERING the consumer also subscribes to its group's retry topic ``%RETRY%group``, where
messages the listener asked to RECONSUME_LATER come back. Delivery is at-least-once: a message
can be delivered again after a rebalance, a crash or a close, never skipped.

``enable_msg_trace=True`` records SubBefore/SubAfter traces around every listener call to
``RMQ_SYS_TRACE_TOPIC`` or ``custom_trace_topic`` (``rocketq.client.tracing``).
SQL92 subscriptions (``MessageSelector.by_sql``) are filtered by the broker; see messageselectors.

``register_orderly_listener`` instead consumes each queue in order (``rocketq.client.orderly``):
in CLUSTERING a queue is taken only with its broker lock (``rocketq.client.queuelocks``),
renewed every 20 s, released when the queue is given away and on close. Traces are recorded
for concurrent listeners only.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Collection
from typing import Any, Final

from rocketq.client import messageselectors, namechecks, orderly, periodic, runninginfo, tracing, wire
from rocketq.client.allocation import AllocateStrategy, allocate_averagely
from rocketq.client.consuming import ConcurrentConsumeService, Listener
from rocketq.client.errors import ClientError, ClientStateError, RouteError
from rocketq.client.heartbeats import ConsumerData, ConsumeType
from rocketq.client.instance import ClientInstance, ServiceState
from rocketq.client.offsetstores import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.pulltasks import PullTask
from rocketq.client.queuelocks import QueueLocker
from rocketq.client.queues import MessageQueue
from rocketq.client.rebalance import Rebalancer
from rocketq.client.settings import MessageModel, PushConsumerSettings, configure
from rocketq.protocol import subscription
from rocketq.protocol.codes import (
    DEFAULT_CONSUMER_GROUP,
    RETRY_GROUP_TOPIC_PREFIX,
    RequestCode,
    ResponseCode,
    retry_topic,
)
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.message import MessageExt
from rocketq.protocol.subscription import SubscriptionData
from rocketq.protocol.traces import DEFAULT_TRACE_TOPIC
from rocketq.remoting.connection import Connection
from rocketq.remoting.errors import RemotingError

log = logging.getLogger(__name__)

RELEASE_WAIT: Final = 1.0
"""Seconds a queue given away waits for its orderly listener call before unlocking."""
DEFAULT_TIMESTAMP_LOOKBACK: Final = datetime.timedelta(minutes=30)
TIMESTAMP_FORMAT: Final = "%Y%m%d%H%M%S"


async def _always(_mq: MessageQueue) -> bool:
    return True


def parse_consume_timestamp(text: str, now: datetime.datetime | None = None) -> int:
    """``consumeTimestamp`` (yyyyMMddHHmmss, local time) in epoch ms; empty means 30 min ago."""
    if not text:
        return int(((now or datetime.datetime.now()) - DEFAULT_TIMESTAMP_LOOKBACK).timestamp() * 1000)
    try:
        return int(datetime.datetime.strptime(text, TIMESTAMP_FORMAT).timestamp() * 1000)
    except ValueError:
        raise ClientStateError(f"consumeTimestamp {text!r} is not yyyyMMddHHmmss") from None


class PushConsumer:
    def __init__(self, group: str = DEFAULT_CONSUMER_GROUP, namesrv_addr: str | None = None, *,
                 allocate: AllocateStrategy = allocate_averagely, enable_msg_trace: bool = False,
                 custom_trace_topic: str | None = None, **options: Any) -> None:
        self.group = namechecks.check_group(group)
        self.settings = configure(PushConsumerSettings, {"namesrv_addr": namesrv_addr, **options})
        self.tracer = (tracing.TraceDispatcher(self.settings.namesrv_addr, custom_trace_topic or DEFAULT_TRACE_TOPIC,
                                               credentials=self.settings.credentials())
                       if enable_msg_trace else None)
        self._timestamp_ms = parse_consume_timestamp(self.settings.consume_timestamp)
        self._allocate = allocate
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._listener: Listener | None = None
        self._orderly_listener: orderly.OrderlyListener | None = None
        self._locker: QueueLocker | None = None
        self._state = ServiceState.CREATE_JUST
        self._instance: ClientInstance | None = None
        self._offsets: OffsetStore | None = None
        self._consume: ConcurrentConsumeService | orderly.OrderlyConsumeService | None = None
        self._rebalancer: Rebalancer | None = None
        self._pull_tasks: dict[MessageQueue, PullTask] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._started_ms = 0
        """Wall-clock start time (epoch ms), for GET_CONSUMER_RUNNING_INFO."""

    async def __aenter__(self) -> PushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @property
    def client_id(self) -> str | None:
        return self._instance.client_id if self._instance else None

    # --- configuration ----------------------------------------------------------------------

    def subscribe(self, topic: str, expression: messageselectors.Expression = subscription.SUB_ALL) -> None:
        """Consume ``topic`` messages whose tag matches ``expression`` (``*``, ``A || B``), or
        that a ``MessageSelector.by_sql(...)`` selects."""
        if self._state is ServiceState.SHUTDOWN_ALREADY:
            raise ClientStateError(f"consumer {self.group} is closed")
        namechecks.check_topic(topic)
        sub = messageselectors.build(topic, expression, sub_version=time.time_ns() // 1_000_000)
        self._subscriptions[topic] = sub
        if self._state is ServiceState.RUNNING:
            self._spawn(self._subscriptions_changed([topic]))

    def unsubscribe(self, topic: str) -> None:
        if self._subscriptions.pop(topic, None) is not None and self._state is ServiceState.RUNNING:
            self._spawn(self._subscriptions_changed([]))

    def register_listener(self, listener: Listener) -> None:
        if not callable(listener):
            raise ClientStateError("the listener must be callable: (msgs, context) -> ConsumeStatus")
        self._listener = listener
        self._orderly_listener = None

    def register_orderly_listener(self, listener: orderly.OrderlyListener) -> None:
        """Consume each queue in order: ``listener(msgs, ConsumeOrderlyContext) -> ConsumeOrderlyStatus``."""
        if not callable(listener):
            raise ClientStateError("the listener must be callable: (msgs, context) -> ConsumeOrderlyStatus")
        self._orderly_listener = listener
        self._listener = None

    @property
    def is_orderly(self) -> bool:
        return self._orderly_listener is not None

    def subscriptions(self) -> dict[str, SubscriptionData]:
        return dict(self._subscriptions)

    # --- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if self._state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"consumer {self.group} is {self._state.value}, cannot start")
        if self._listener is None and self._orderly_listener is None:
            raise ClientStateError("register a listener before start()")
        if self.settings.message_model is MessageModel.CLUSTERING:
            retry = retry_topic(self.group)
            self._subscriptions.setdefault(retry, subscription.build(retry, subscription.SUB_ALL))
        self._state = ServiceState.RUNNING
        self._started_ms = time.time_ns() // 1_000_000
        try:
            await self._start_parts(self._listener)  # None for an orderly consumer
        except BaseException:
            await self.close()
            raise

    async def _start_parts(self, listener: Listener | None) -> None:
        instance = ClientInstance(self.settings, handlers={RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._ids_changed,
                                                          RequestCode.GET_CONSUMER_RUNNING_INFO: self._running_info},
                                  consumer_data=self._consumer_data)
        self._instance = instance
        if self.settings.message_model is MessageModel.CLUSTERING:
            self._offsets = RemoteBrokerOffsetStore(instance, self.group)
        else:
            self._offsets = LocalFileOffsetStore(self.settings.offset_store_dir, instance.client_id, self.group)
        await self._offsets.load()
        instance.start()
        for topic in list(self._subscriptions):
            await self._update_route(topic)
        await self._check_filters_in_broker()
        await instance.heartbeat()
        if self.tracer is not None:
            await self.tracer.start()
            if listener is not None:
                listener = tracing.traced_listener(listener, self.tracer, self.group)
        if listener is not None:
            self._consume = ConcurrentConsumeService(self.group, self.settings, listener, instance, self._offsets)
        else:
            self._consume = self._orderly_service(instance)
        self._rebalancer = Rebalancer(
            instance, self.group, model=self.settings.message_model, strategy=self._allocate,
            subscriptions=self.subscriptions, assignment=self, offsets=self._offsets,
            policy=self.settings.consume_from_where, timestamp_ms=self._timestamp_ms,
            interval_ms=self.settings.rebalance_interval,
            claim=self._locker.lock if self._locker is not None else None)
        self._rebalancer.start()
        self._spawn(periodic.every(self.settings.persist_consumer_offset_interval, self.persist_offsets,
                                   what="offset persist", owner=instance.client_id))

    def _orderly_service(self, instance: ClientInstance) -> orderly.OrderlyConsumeService:
        assert self._orderly_listener is not None and self._offsets is not None
        if self.settings.message_model is MessageModel.CLUSTERING:
            self._locker = QueueLocker(instance, self.group, lambda: {mq: t.pq for mq, t in self._pull_tasks.items()})
            self._locker.start()
        max_times = orderly.max_reconsume_times(self.settings)

        async def send_back(msg: MessageExt, mq: MessageQueue) -> bool:
            return await orderly.send_to_retry(instance, self.group, max_times, msg, mq)

        listener = self._orderly_listener
        if self.tracer is not None:
            listener = tracing.traced_orderly_listener(listener, self.tracer, self.group)
        return orderly.OrderlyConsumeService(self.group, self.settings, listener, self._offsets,
                                             lock=self._locker.lock if self._locker is not None else _always,
                                             send_back=send_back)

    async def close(self) -> None:
        """Stop pulling, let listeners finish (up to awaitTerminationMillisWhenShutdown), commit
        offsets, unregister from the brokers, close connections. Idempotent."""
        if self._state is ServiceState.SHUTDOWN_ALREADY:
            return
        was_running = self._state is ServiceState.RUNNING
        self._state = ServiceState.SHUTDOWN_ALREADY
        if self._rebalancer is not None:
            await self._rebalancer.close()
        if self._locker is not None:
            await self._locker.close()
        tasks, self._tasks = list(self._tasks), set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # Stop pulling first but keep the process queues, so listener calls that finish during the
        # grace period still move the offsets that are committed below.
        pulls = list(self._pull_tasks.values())
        await asyncio.gather(*(p.stop(drop=False) for p in pulls))
        if self._consume is not None:
            await self._consume.close(self.settings.await_termination_millis_when_shutdown / 1000)
        if was_running and self._instance is not None:
            await self._persist_on_close()
            if self._locker is not None:  # after the offsets: the next owner starts where we stopped
                await self._locker.unlock(self.assigned(), oneway=False)
            await self._instance.unregister(consumer_group=self.group)
        await asyncio.gather(*(p.stop() for p in pulls))
        self._pull_tasks.clear()
        if self.tracer is not None:
            await self.tracer.close()
        if self._instance is not None:
            await self._instance.close()

    async def _persist_on_close(self) -> None:
        if self._offsets is None:
            return
        try:
            await self._offsets.persist_all(self.assigned(), acknowledged=True)
        except (ClientError, RemotingError, OSError) as exc:
            log.warning("%s: committing offsets on close failed: %s", self.group, exc)

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- what the rebalancer and the broker call --------------------------------------------

    def assigned(self) -> Collection[MessageQueue]:
        return list(self._pull_tasks)

    async def add_queue(self, mq: MessageQueue, offset: int) -> None:
        if self._state is not ServiceState.RUNNING or mq in self._pull_tasks:
            return
        assert self._instance and self._offsets and self._consume
        task = PullTask(mq, offset, group=self.group, settings=self.settings, instance=self._instance,
                        offsets=self._offsets, consume=self._consume, subscription=self._subscriptions.get,
                        orderly=self.is_orderly)
        task.pq.mark_locked(self._locker is not None)  # the rebalancer added it only once locked
        self._pull_tasks[mq] = task
        task.start()

    async def remove_queue(self, mq: MessageQueue) -> None:
        task = self._pull_tasks.pop(mq, None)
        if task is None or self._offsets is None:
            return
        await task.stop()
        try:
            await self._offsets.persist(mq, acknowledged=True)
        except (ClientError, RemotingError, OSError) as exc:
            log.warning("%s: committing the offset of released %s failed: %s", self.group, mq, exc)
        self._offsets.remove(mq)
        if self._locker is not None:
            await self._release_lock(mq, task.pq)

    async def _release_lock(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """Unlock a queue given away, once its listener call in flight (whose result is not
        committed) has ended, so the next owner never runs beside it."""
        assert isinstance(self._consume, orderly.OrderlyConsumeService) and self._locker is not None
        if not await self._consume.wait_idle(pq, RELEASE_WAIT):
            log.warning("%s: a listener call on %s is still running; its lock expires instead", self.group, mq)
            return
        await self._locker.unlock([mq], oneway=True)

    async def persist_offsets(self) -> None:
        if self._offsets is not None:
            await self._offsets.persist_all(self.assigned())

    async def _ids_changed(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        """NOTIFY_CONSUMER_IDS_CHANGED: the group's membership changed; rebalance now."""
        log.info("%s: broker %s says the consumer list of %s changed", self.client_id, conn.remote_addr,
                 request.ext_fields.get("consumerGroup"))
        if self._rebalancer is not None:
            self._rebalancer.trigger()
        return None

    async def _running_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_CONSUMER_RUNNING_INFO, forwarded by a broker for ``mqadmin consumerStatus``."""
        body = runninginfo.running_info_body(
            self.settings, orderly=self._orderly_listener is not None, start_ms=self._started_ms,
            subscriptions=self._subscriptions.values(), queues={mq: t.pq for mq, t in self._pull_tasks.items()},
            offsets=self._offsets)
        return request.response(ResponseCode.SUCCESS, body=body)

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(self.group, ConsumeType.CONSUME_PASSIVELY, self.settings.message_model,
                            self.settings.consume_from_where, tuple(self._subscriptions.values()))

    async def _update_route(self, topic: str) -> None:
        assert self._instance is not None
        try:
            if await self._instance.update_route(topic) is None:
                # the group's own retry topic appears with the first heartbeat: expected, not a warning
                level = logging.INFO if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else logging.WARNING
                log.log(level, "%s: topic %s does not exist (yet); it is consumed once it has a route", self.group,
                        topic)
        except RouteError as exc:
            log.warning("%s: route of %s unavailable: %s", self.group, topic, exc)

    async def _check_filters_in_broker(self) -> None:
        """Ask a broker of each SQL92-filtered topic whether it accepts the selector, as Java's
        consumer does at start: a broker with enablePropertyFilter=false, or a selector it cannot
        compile, fails start() with the broker's answer instead of a consumer that never
        receives. A broker that cannot be reached only gets a warning (the heartbeat retries)."""
        assert self._instance is not None
        instance = self._instance
        for sub in self._subscriptions.values():
            if sub.is_tag_type:
                continue
            addr = await instance.any_broker_addr(sub.topic)
            if addr is None:
                continue
            try:
                await wire.check_client_config(instance.remoting, addr, instance.client_id, self.group, sub,
                                               instance.api_timeout)
            except RemotingError as exc:
                log.warning("%s: could not check the %s filter of %s with %s: %s", self.group, sub.expression_type,
                            sub.topic, addr, exc)

    async def _subscriptions_changed(self, topics: list[str]) -> None:
        assert self._instance is not None and self._rebalancer is not None
        for topic in topics:
            await self._update_route(topic)
        await self._instance.heartbeat()
        self._rebalancer.trigger()

"""Producer: sends messages to a topic's queues, choosing brokers and retrying like RocketMQ.

    producer = Producer("pg", namesrv_addr="127.0.0.1:9876")
    await producer.start()
    result = await producer.send(Message("TopicTest", b"hello", tags="TagA"))
    await producer.close()

Four ways to send:

- ``send``: wait for the broker's answer. Up to ``1 + retryTimesWhenSendFailed`` attempts, each
  on the next queue round robin, avoiding the broker that just failed and brokers latency fault
  tolerance marks unavailable; all attempts together stay within ``sendMsgTimeout``. A broker
  error is retried only for the codes RocketMQ retries (``sending.RETRY_CODES``). A failure
  that suggests a failover (``staleroutes.means_stale_route``) refreshes the topic's route
  before the retry picks its queue, so the retry can reach a newly promoted master.
- ``send(msg, selector=...)``: the application picks the queue (ordered messages); one attempt,
  never moved elsewhere.
- ``send_async``: the same as ``send`` without waiting; returns a future and optionally calls
  ``callback(result, error)``. ``close`` waits for these to finish. When the topic's route, its
  broker's address and an open connection are known (every send after the first), the request
  is written at once and its answer handled by callbacks from the connection's read loop: no
  task per send (``_InFlight``). Retries, route fetches and traced sends continue in a task
  owned by the producer.
- ``send_oneway``: write and forget, one attempt, no answer.

``send_batch`` sends several messages of one topic in one SEND_BATCH_MESSAGE frame.
A topic the name servers do not know is sent on the auto-create topic's (TBW102) route, and
the broker creates it. ``enable_msg_trace=True`` records a Pub trace of every answered send
attempt to ``RMQ_SYS_TRACE_TOPIC`` or ``custom_trace_topic`` (``rocketq.client.tracing``).
``request`` sends a message and waits for its reply (request-reply, see
``rocketq.client.replies``). Transactions (half messages, check-back) are
``rocketq.client.transactionproducer``'s.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from rocketq.client import namechecks as names  # the SDK's topic/group checks
from rocketq.client import replies, sending, staleroutes, tracing, wire
from rocketq.client.errors import BrokerError, ClientError, ClientStateError, MessageError, ProtocolError
from rocketq.client.faults import FIRST_PENALIZED_LATENCY, LatencyFaultTolerance
from rocketq.client.instance import ClientInstance, ServiceState
from rocketq.client.queues import MessageQueue
from rocketq.client.routes import TopicRoute
from rocketq.client.selectors import QueueSelector, RoundRobin
from rocketq.client.sending import Outgoing, SendResult, SendStatus
from rocketq.client.settings import ProducerSettings, configure
from rocketq.protocol.codes import DEFAULT_PRODUCER_GROUP, RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import HeaderError
from rocketq.protocol.message import Message
from rocketq.protocol.traces import DEFAULT_TRACE_TOPIC
from rocketq.remoting.connection import OPAQUE_MASK, Connection, Handler
from rocketq.remoting.errors import RemotingError, RemotingTimeoutError

log = logging.getLogger(__name__)

MAX_CACHED_TOPICS = 10_000
"""Topics whose publish queues a producer remembers (emptied when full)."""

_SEND_V2 = int(RequestCode.SEND_MESSAGE_V2)
_SEND_OK = SendStatus.SEND_OK
_send_result_at = sending.send_result_at
_send_frame_of = wire.send_frame_of
_time_ns = time.time_ns
_new_flight = object.__new__
"""Module globals: one look-up each per send, not two."""

SendCallback = Callable[[SendResult | None, BaseException | None], object]
"""Called once per async send: ``(result, None)`` or ``(None, error)``."""


class Producer:
    def __init__(self, group: str = DEFAULT_PRODUCER_GROUP, namesrv_addr: str | None = None, *,
                 enable_msg_trace: bool = False, custom_trace_topic: str | None = None, **options: Any) -> None:
        self.group = names.check_group(group)
        self.settings = configure(ProducerSettings, {"namesrv_addr": namesrv_addr, **options})
        self.tracer = (tracing.TraceDispatcher(self.settings.namesrv_addr, custom_trace_topic or DEFAULT_TRACE_TOPIC,
                                               credentials=self.settings.credentials())
                       if enable_msg_trace else None)
        self._send_timeout = self._timeout(None)
        """``sendMsgTimeout`` in seconds: a send's default timeout."""
        self._latency_enabled = self.settings.send_latency_fault_enable
        self._faults = LatencyFaultTolerance()
        self._round_robin = RoundRobin(self._faults)
        self._instance: ClientInstance | None = None
        self._state = ServiceState.CREATE_JUST
        self._async_sends: set[asyncio.Future[SendResult]] = set()
        self._publish_cache: dict[str, tuple[TopicRoute, tuple[MessageQueue, ...]]] = {}
        self._pieces: dict[str, tuple[bytes, ...]] = {}
        """Per topic, the template its single-message sends are encoded from (``_InFlight.begin``): the
        ``pieces`` of its ``wire.SendFrames``."""
        self._handlers: dict[int, Handler] = {}
        """Requests brokers send this producer (CHECK_TRANSACTION_STATE for transactions)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the producer started in; asking asyncio for it costs a getpid() syscall
        per call on Python 3.11, and a send asked three times."""

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @property
    def client_id(self) -> str | None:
        return self._instance.client_id if self._instance else None

    async def start(self) -> None:
        if self._state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"producer {self.group} is {self._state.value}, cannot start")
        self._instance = ClientInstance(self.settings, handlers=self._handlers, producer_groups=[self.group])
        self._instance.start()
        self._loop = asyncio.get_running_loop()
        self._state = ServiceState.RUNNING
        if self.tracer is not None:
            await self.tracer.start()

    async def close(self) -> None:
        """Finish async sends in flight, unregister from the brokers, close. Idempotent."""
        if self._state is not ServiceState.RUNNING:
            self._state = ServiceState.SHUTDOWN_ALREADY
            return
        self._state = ServiceState.SHUTDOWN_ALREADY
        if self._async_sends:
            # Each send has its own deadline (sendMsgTimeout), so this wait is bounded.
            await asyncio.gather(*self._async_sends, return_exceptions=True)
        if self.tracer is not None:
            await self.tracer.close()
        assert self._instance is not None
        await self._instance.unregister(producer_group=self.group)
        await self._instance.close()

    def _running(self) -> ClientInstance:
        if self._state is not ServiceState.RUNNING or self._instance is None:
            raise ClientStateError(f"producer {self.group} is not running ({self._state.value})")
        return self._instance

    # --- public sends -----------------------------------------------------------------------

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        instance = self._running()
        names.check_topic(topic)
        route = await instance.publish_route(topic, self.settings.create_topic_key,
                                             self.settings.default_topic_queue_nums)
        return list(route.publish_queues(topic))

    async def send(self, msg: Message, *, selector: QueueSelector | None = None,
                   timeout_ms: int | None = None) -> SendResult:
        instance = self._instance
        if self._state is not ServiceState.RUNNING or instance is None:  # _running's check, inline
            instance = self._running()
        out = sending.prepare(msg, self.settings)
        timeout = self._send_timeout if timeout_ms is None else self._timeout(timeout_ms)
        if selector is not None:
            return await self._send_selected(instance, out, selector, timeout)
        attempts = 1 + self.settings.retry_times_when_send_failed
        # the first attempt written at once and awaited as one future, as send_async's; the
        # general path when that is not possible (no route or connection yet, a trace)
        flight = _InFlight.begin(self, instance, out, attempts, timeout, None, False)
        if flight is None:
            return await self._send_default(instance, out, attempts, timeout)
        try:
            return await flight.result
        except asyncio.CancelledError:
            # only this coroutine awaits the future, so a cancel always arrives here: no done
            # callback per send (``watched``) to learn of it
            flight.withdraw()
            raise

    async def send_batch(self, msgs: Sequence[Message], *, timeout_ms: int | None = None) -> SendResult:
        instance = self._running()
        out = sending.prepare_batch(msgs, self.settings)
        return await self._send_default(instance, out, 1 + self.settings.retry_times_when_send_failed,
                                        self._timeout(timeout_ms))

    def send_async(self, msg: Message, callback: SendCallback | None = None, *,
                   selector: QueueSelector | None = None, timeout_ms: int | None = None) -> asyncio.Future[SendResult]:
        """Start a send and return its future at once; invalid messages fail here, synchronously."""
        instance = self._instance
        if self._state is not ServiceState.RUNNING or instance is None:  # _running's check, inline
            instance = self._running()
        out = sending.prepare(msg, self.settings)
        timeout = self._send_timeout if timeout_ms is None else self._timeout(timeout_ms)
        attempts = 1 + self.settings.retry_times_when_send_async_failed
        flight = None if selector is not None else _InFlight.begin(self, instance, out, attempts, timeout, callback,
                                                                   True)
        if flight is not None:
            self._async_sends.add(flight.result)  # its callback, if any, is the flight's (_InFlight._settled)
            return flight.result
        if selector is not None:
            coro = self._send_selected(instance, out, selector, timeout)
        else:
            coro = self._send_default(instance, out, attempts, timeout)
        future = asyncio.get_running_loop().create_task(coro, name=f"send {out.msg_id}")
        future.add_done_callback(self._async_sends.discard)
        self._async_sends.add(future)
        if callback is not None:
            future.add_done_callback(functools.partial(_run_callback, callback))
        return future

    def _template(self, topic: str) -> tuple[bytes, ...]:
        """The pieces of the topic's ``wire.SendFrames``, made once (``_pieces``)."""
        pieces = self._pieces.get(topic)
        if pieces is None:
            if len(self._pieces) >= MAX_CACHED_TOPICS:
                self._pieces.clear()
            settings = self.settings
            pieces = self._pieces[topic] = wire.SendFrames(self.group, topic, settings.create_topic_key,
                                                           settings.default_topic_queue_nums).pieces
        return pieces

    async def send_oneway(self, msg: Message, *, selector: QueueSelector | None = None) -> None:
        instance = self._running()
        out = sending.prepare(msg, self.settings)
        queues = await self._publish_queues(instance, out.topic)
        mq = self._select(selector, queues) if selector is not None else self._round_robin.choose(queues)
        addr = await instance.find_master(mq)
        try:
            await wire.send_oneway(instance.remoting, addr, sending.header(out, self.group, mq, self.settings),
                                   out.body)
        except RemotingError as exc:
            await self._refresh_if_stale(instance, out.topic, mq.broker_name, exc, 0.0)
            raise

    async def request(self, msg: Message, timeout_ms: int) -> Message:
        """Send ``msg`` and wait up to ``timeout_ms`` for the reply a consumer sends to it
        (``replies.create_reply_message``); RequestTimeoutError if none comes in time."""
        instance = self._running()
        if timeout_ms <= 0:
            raise ClientStateError(f"request timeout must be positive, got {timeout_ms} ms")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        if instance.cached_route(msg.topic) is None:
            # as RocketMQ: a first request fetches the route and heartbeats at once, so the
            # brokers know this client's connection before a reply has to be pushed to it
            await self._publish_queues(instance, msg.topic)
            await instance.heartbeat()
        correlation_id = replies.prepare_request(msg, instance.client_id, timeout_ms)
        waiter = instance.replies.expect(correlation_id)
        try:
            await self.send(msg, timeout_ms=max(1, int((deadline - loop.time()) * 1000)))
            try:
                return await asyncio.wait_for(waiter, max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise replies.RequestTimeoutError(
                    f"send request message to <{msg.topic}> OK, but wait reply message timeout, {timeout_ms} ms."
                ) from None
        finally:
            instance.replies.forget(correlation_id)

    # --- internals --------------------------------------------------------------------------

    def _timeout(self, timeout_ms: int | None) -> float:
        ms = self.settings.send_msg_timeout if timeout_ms is None else timeout_ms
        if ms <= 0:
            raise ClientStateError(f"send timeout must be positive, got {ms} ms")
        return ms / 1000

    async def _publish_queues(self, instance: ClientInstance, topic: str) -> tuple[MessageQueue, ...]:
        # Routes are immutable and replaced when they change: the queues of the same route
        # object are the same queues, so they are worked out once per route, not per send
        # (publish_route would check the cached route's queues again).
        known = self._publish_cache.get(topic)
        if known is not None and instance.cached_route(topic) is known[0]:
            return known[1]
        route = await instance.publish_route(topic, self.settings.create_topic_key,
                                             self.settings.default_topic_queue_nums)
        if known is not None and known[0] is route:
            return known[1]
        queues = route.publish_queues(topic)
        if len(self._publish_cache) >= MAX_CACHED_TOPICS:
            self._publish_cache.clear()
        self._publish_cache[topic] = (route, queues)
        return queues

    @staticmethod
    def _select(selector: QueueSelector, queues: Sequence[MessageQueue]) -> MessageQueue:
        mq = selector(queues)
        if mq not in queues:
            raise MessageError(f"the selector chose {mq}, which is not a publish queue of the topic")
        return mq

    def _record(self, broker_name: str, started: float, *, isolation: bool) -> None:
        if self._latency_enabled:
            elapsed_ms = int(((self._loop or asyncio.get_running_loop()).time() - started) * 1000)
            self._faults.update(broker_name, elapsed_ms, isolation=isolation)

    def _record_failure(self, instance: ClientInstance, mq: MessageQueue, addr: str | None, started: float) -> None:
        """A transport failure isolates the broker group, unless ``addr`` is no longer its master
        (the route moved on while the request was out: the failure was the old master's)."""
        if addr is None or instance.master_addr(mq.broker_name) == addr:
            self._record(mq.broker_name, started, isolation=True)

    async def _refresh_if_stale(self, instance: ClientInstance, topic: str, broker_name: str,
                                error: Exception | None, wait: float) -> None:
        """After a failed attempt on ``broker_name``: when ``error`` suggests a failover, refresh
        the topic's route, waiting at most ``wait`` seconds (0: start it for the next send)."""
        if not staleroutes.means_stale_route(error):
            return
        failed_master = instance.master_addr(broker_name)
        if await instance.refresh_stale_route(topic, wait):
            master = instance.master_addr(broker_name)
            if master is not None and master != failed_master:
                # a new master: the fault mark was earned by the old one
                self._faults.remove(broker_name)

    async def _attempt(self, instance: ClientInstance, out: Outgoing, mq: MessageQueue, timeout: float) -> SendResult:
        """One send to one queue; records the broker's latency or failure."""
        started = (self._loop or asyncio.get_running_loop()).time()
        # a trace's send time is wall-clock ms, taken before the send as RocketMQ does
        started_ms = time.time_ns() // 1_000_000 if self.tracer is not None else 0
        addr: str | None = None
        try:
            addr = await instance.find_master(mq)
            reply = await wire.send(instance.remoting, addr, sending.header(out, self.group, mq, self.settings),
                                    out.body, timeout, batch=out.batch)
        except BrokerError:
            self._record(mq.broker_name, started, isolation=False)
            raise
        except (RemotingError, ClientError):
            self._record_failure(instance, mq, addr, started)
            raise
        self._record(mq.broker_name, started, isolation=False)
        result = sending.to_result(reply, out, mq)
        if self.tracer is not None and not out.batch:
            self.tracer.submit([tracing.pub_record(out, result, group=self.group, store_host=addr,
                                                   started_ms=started_ms,
                                                   client_host=instance.client_id.split("@")[0])])
        return result

    async def _send_selected(
        self, instance: ClientInstance, out: Outgoing, selector: QueueSelector, timeout: float
    ) -> SendResult:
        queues = await self._publish_queues(instance, out.topic)
        mq = self._select(selector, queues)
        try:
            return await self._attempt(instance, out, mq, timeout)
        except (RemotingError, ClientError) as exc:
            # never moved to another queue (the order), but the next send finds the new master
            await self._refresh_if_stale(instance, out.topic, mq.broker_name, exc, 0.0)
            raise

    async def _send_default(self, instance: ClientInstance, out: Outgoing, attempts: int, timeout: float,
                            tried: list[str] | None = None, last_error: Exception | None = None) -> SendResult:
        """``tried``, ``last_error``: the attempts already made (an ``_InFlight`` send's first)."""
        loop = self._loop or asyncio.get_running_loop()
        deadline = loop.time() + timeout
        tried = tried or []
        last_broker = tried[-1] if tried else None
        if last_broker is not None:
            await self._refresh_if_stale(instance, out.topic, last_broker, last_error,
                                         timeout if len(tried) < attempts else 0.0)
        queues = await self._publish_queues(instance, out.topic)
        for attempt in range(len(tried), attempts):
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            mq = self._round_robin.choose(queues, last_broker)
            tried.append(mq.broker_name)
            try:
                result = await self._attempt(instance, out, mq, remaining)
            except BrokerError as exc:
                if exc.code not in sending.RETRY_CODES:
                    raise
                last_error = exc
            except (RemotingError, ClientError) as exc:
                last_error = exc
            else:
                not_stored = result.status is not SendStatus.SEND_OK
                if not_stored and self.settings.retry_another_broker_when_not_store_ok and attempt + 1 < attempts:
                    last_error = None
                    last_broker = mq.broker_name
                    continue
                return result
            log.info("send of %s to %s failed (attempt %d/%d): %s", out.msg_id, mq, attempt + 1, attempts, last_error)
            last_broker = mq.broker_name
            wait = deadline - loop.time() if attempt + 1 < attempts else 0.0
            await self._refresh_if_stale(instance, out.topic, last_broker, last_error, wait)
            queues = self._retry_queues(out.topic, instance.cached_route(out.topic), queues)
        summary = f"send of {out.topic} failed after {len(tried)} attempt(s) on {tried}"
        if last_error is None or deadline - loop.time() <= 0:
            raise RemotingTimeoutError(f"{summary}: sendMsgTimeout {timeout * 1000:.0f} ms exceeded") from last_error
        last_error.add_note(summary)
        raise last_error

    def _retry_queues(self, topic: str, route: TopicRoute | None,
                      queues: tuple[MessageQueue, ...]) -> tuple[MessageQueue, ...]:
        """The publish queues of ``route``, the topic's cached route (a refresh may have replaced
        it); the old ones while it has none (no master right now: the retry then fails fast)."""
        known = self._publish_cache.get(topic)
        if route is None or (known is not None and known[0] is route):
            return queues
        fresh = route.publish_queues(topic)
        if not fresh:
            return queues
        self._publish_cache[topic] = (route, fresh)
        return fresh


class _InFlight:
    """One ``send`` or ``send_async`` whose first attempt was written at once (``begin``).

    The connection calls ``answered`` from the read that brings the broker's answer (or on
    timeout or loss; no future in between, ``Connection.send_frame``), which does what
    ``Producer._attempt`` does after its await (latency fault tolerance, the result) and
    either settles ``result`` or hands the remaining attempts to ``Producer._send_default``
    in a task, whose outcome becomes ``result``'s. A caller that cancels ``result`` cancels
    whatever is under way (``withdraw``): the request (the connection forgets it) or that task.

    A ``send_async`` future is the caller's, who may cancel it at any time: it is ``watched``
    by one done callback (``_settled``), removed again when an answer settles it. A ``send``'s
    future is awaited by ``send`` alone, which withdraws on the CancelledError its cancel
    brings: not watched, no callback added and removed per send.
    """

    __slots__ = ("_addr", "_attempts", "_callback", "_conn", "_current", "_instance", "_mq", "_opaque", "_out",
                 "_producer", "_started", "_timeout", "_watched", "result")
    _producer: Producer
    _instance: ClientInstance
    _out: Outgoing
    _mq: MessageQueue
    _addr: str
    _attempts: int
    _timeout: float
    _started: float
    """Loop time of the first attempt: its latency's start, and the retries' deadline's."""
    _conn: Connection | None
    """Where the first attempt waits for its answer (``_opaque``), until it comes."""
    _opaque: int
    _current: asyncio.Task[SendResult] | None
    """The remaining attempts, once the first one failed."""
    _callback: SendCallback | None
    """The caller's ``SendCallback``, run once: by ``answered`` for a result, else by
    ``_settled`` (the future's one done callback)."""
    result: asyncio.Future[SendResult]
    _watched: bool

    @staticmethod
    def begin(producer: Producer, instance: ClientInstance, out: Outgoing, attempts: int, timeout: float,
              callback: SendCallback | None, watched: bool) -> _InFlight | None:
        """The flight of a ``send`` or ``send_async`` whose first attempt is written here at once
        (its future is ``result``), or None when that needs a wait or a trace (the caller then
        takes the general path, ``Producer._send_default``). Made here rather than by an
        ``__init__``: a Python call less per send."""
        topic = out.topic
        known = producer._publish_cache.get(topic)
        # the route and master read from the instance's public tables (no call each):
        # ``cached_route`` and ``master_addr`` inline
        if producer.tracer is not None or known is None or instance.routes.get(topic) is not known[0]:
            return None
        mq = producer._round_robin.choose(known[1])
        addr = instance.masters.get(mq.broker_name)
        if addr is None:
            return None
        loop = producer._loop
        assert loop is not None
        flight = _new_flight(_InFlight)
        flight._producer, flight._instance, flight._out, flight._mq, flight._addr = producer, instance, out, mq, addr
        flight._attempts, flight._timeout, flight._started = attempts, timeout, loop.time()
        flight._current = None
        flight._callback = callback
        flight.result = loop.create_future()
        flight._watched = watched
        if watched:
            flight.result.add_done_callback(flight._settled)
        remoting = instance.remoting
        conn = remoting.ready_connection(addr)
        try:
            if conn is not None and not out.reply and out.flag.__class__ is int:
                opaque = next(conn.opaques) & OPAQUE_MASK
                frame = _send_frame_of(producer._pieces.get(topic) or producer._template(topic), opaque,
                                       mq.queue_id, out.sys_flag, _time_ns() // 1_000_000, out.flag, out.properties,
                                       out.body)
                conn.send_frame(frame, opaque, _SEND_V2, timeout, flight)
            else:  # a reply, a flag that is not a plain int, an rpc hook (or no connection: None)
                request = wire.send_v2_request(sending.send_ext(out, producer.group, mq, producer.settings),
                                               out.body, reply=out.reply)
                conn = remoting.request_now(addr, request, timeout, flight)
                if conn is None:
                    return None
                opaque = request.opaque
        except RemotingError:
            return None  # too many requests pending: the task's attempt meets it and retries
        flight._conn, flight._opaque = conn, opaque  # the first attempt is on its way
        return flight

    def answered(self, response: RemotingCommand | None, error: BaseException | None) -> None:
        self._conn = None
        if self.result.done():
            return  # cancelled by its caller
        producer, mq = self._producer, self._mq
        if error is not None:
            if not isinstance(error, RemotingError):
                self.result.set_exception(error)
                return
            producer._record(mq.broker_name, self._started, isolation=True)
            self._retry(error)
            return
        assert response is not None
        try:
            result = sending.send_answer(response, self._addr, self._out, mq)
        except BrokerError as exc:
            producer._record(mq.broker_name, self._started, isolation=False)
            if exc.code not in sending.RETRY_CODES:
                self.result.set_exception(exc)
            else:
                self._retry(exc)
            return
        except (RemotingError, ClientError) as exc:
            producer._record_failure(self._instance, mq, self._addr, self._started)
            self._retry(exc)
            return
        self.stored(b"", 0, 0, result)

    __call__ = answered
    """The connection is given the flight itself as its answer callback: a bound method would
    be one more object per send."""

    def stored(self, data: bytes, pos: int, end: int, result: SendResult | None = None) -> None:
        """``answered`` of a SUCCESS answer without a body, given its frame ``data[pos:end]``: a
        client connection hands it over without making the answer's ``RemotingCommand``. Also
        every answered send's one success tail: ``answered`` passes the ``result`` it read (then
        ``data`` is not read)."""
        if result is None:
            self._conn = None
            if self.result.done():
                return  # cancelled by its caller
            try:  # ``sending.stored_result`` of the frame, inline: one call less per send
                try:
                    result = _send_result_at(data, pos, end, _SEND_OK, self._out.msg_id, self._mq)
                except HeaderError as exc:
                    raise ProtocolError(f"{self._addr} answered code 0 with a bad header: {exc}") from None
            except (RemotingError, ClientError) as exc:
                self._producer._record_failure(self._instance, self._mq, self._addr, self._started)
                self._retry(exc)
                return
        producer = self._producer
        if producer._latency_enabled:  # ``_record`` of a success, inline
            assert producer._loop is not None
            elapsed = (producer._loop.time() - self._started) * 1000  # int() of it only when recorded
            faults = producer._faults
            if faults.marks or elapsed >= FIRST_PENALIZED_LATENCY:  # else ``update`` would change nothing
                faults.update(self._mq.broker_name, int(elapsed), isolation=False)
        if (result.status is not _SEND_OK and producer.settings.retry_another_broker_when_not_store_ok
                and self._attempts > 1):
            self._retry(None)
            return
        # settled here rather than by the done callback a loop turn later (one handle less per send)
        future = self.result
        if self._watched:
            future.remove_done_callback(self._settled)
            producer._async_sends.discard(future)
        future.set_result(result)
        if self._callback is not None:
            try:
                self._callback(result, None)
            except Exception:
                log.exception("send callback failed")

    def _retry(self, error: Exception | None) -> None:
        """The remaining attempts (or the final error, if none remain) in a task."""
        if error is not None:
            log.info("send of %s to %s failed (attempt 1/%d): %s", self._out.msg_id, self._mq, self._attempts, error)
        producer = self._producer
        assert producer._loop is not None
        remaining = self._started + self._timeout - producer._loop.time()
        task = producer._loop.create_task(producer._send_default(
            self._instance, self._out, self._attempts, remaining, [self._mq.broker_name], error))
        task.add_done_callback(self._continued)
        self._current = task

    def _continued(self, task: asyncio.Task[SendResult]) -> None:
        if self.result.done():
            return
        if task.cancelled():
            self.result.cancel()
        elif task.exception() is not None:
            self.result.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            self.result.set_result(task.result())

    def withdraw(self) -> None:
        """The caller cancelled ``result``: stop what is under way, the remaining attempts'
        task or the request (a late answer is then dropped)."""
        if self._current is not None:
            self._current.cancel()
        elif self._conn is not None:
            self._conn.forget(self._opaque)

    def _settled(self, result: asyncio.Future[SendResult]) -> None:
        self._producer._async_sends.discard(result)
        if result.cancelled():
            self.withdraw()
        if self._callback is not None:
            _run_callback(self._callback, result)


def _run_callback(callback: SendCallback, task: asyncio.Future[SendResult]) -> None:
    try:
        if task.cancelled():
            callback(None, asyncio.CancelledError())
        elif task.exception() is not None:
            callback(None, task.exception())
        else:
            callback(task.result(), None)
    except Exception:
        log.exception("send callback failed")

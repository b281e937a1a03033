"""The apache.rocketmq.v2 MessagingService: each v2 call as the remoting requests it stands for.

Every unary call first reads the caller from its metadata (``clients.caller``), then answers
with an in-band status (``status``): the gRPC status is OK even for a refused request, as
RocketMQ's proxy does. What each call does is in docs/proxy.md; in short:

- QueryRoute / QueryAssignment: the name server's route, with the proxy as every broker's
  endpoint (``routing``).
- Heartbeat / NotifyClientTermination: need the client's Settings (Telemetry) first.
- SendMessage: each message converted (``convert.to_remoting``), its type checked against the
  topic's ``message.type`` (``typecheck``, ``metadata``) and sent by the SDK producer.
- ReceiveMessage: one POP_MESSAGE on the broker the queue names (every queue of it: the v2
  queue id is not used; orderly for a ``consumeMessageOrderly`` group), answered as status,
  then the messages, then a delivery timestamp.
- AckMessage / ChangeInvisibleDuration / ForwardMessageToDeadLetterQueue: the receipt handle
  names broker, queue and checkpoint (``receipts``).
- Telemetry: the Settings exchange, and the stream the proxy writes server commands to
  (transaction checks, and broker requests ``relays`` passes on).

A client known by its Settings is registered with the brokers on its behalf (``registrations``)
until it terminates, its stream ends or its heartbeats stop; the messages a push consumer
receives (``auto_renew``) stay invisible while it holds them (``renewals``).

Every call is counted and timed by method and answer code (``metrics``).

Not implemented (gRPC status UNIMPLEMENTED, as RocketMQ's proxy answers the calls it does not
override): PullMessage, UpdateOffset, GetOffset, QueryOffset, SyncLiteSubscription, RecallMessage
(rocketq has no timer wheel to recall from).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

import grpc
from google.protobuf import timestamp_pb2

from rocketq.acl import permissions, validator
from rocketq.acl.plainacl import AclConfig
from rocketq.client.errors import BrokerError, ClientError, MessageError
from rocketq.client.sending import SendResult
from rocketq.protocol import topicattributes
from rocketq.protocol.messagetypes import Message
from rocketq.protocol.poprequests import PoppedMessage, PopStatus
from rocketq.protocol.topicattributes import MessageType
from rocketq.proxy import auth, batching, clients, convert, routing, status, typecheck
from rocketq.proxy.backend import Backend
from rocketq.proxy.metrics import ProxyMetrics
from rocketq.proxy.receipts import ReceiptHandle
from rocketq.proxy.registrations import Registrar
from rocketq.proxy.relays import Relays
from rocketq.proxy.renewals import Held, Renewer, RenewSettings
from rocketq.proxy.settings import ProxySettings
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.errors import RemotingError
from rocketq.store.settings import parse_delay_levels

log = logging.getLogger(__name__)

R = TypeVar("R")
MIN_POLL_MS: Final = 5_000
MAX_POLL_MS: Final = 20_000
MAX_POP_BATCH: Final = 32
EXPECTED_ERRORS: Final = (ProxyError, BrokerError, ClientError, RemotingError)
"""Failures that are answers (a status), not proxy bugs worth a traceback."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MessagingService(grpc_v2.MessagingServiceServicer):
    def __init__(self, settings: ProxySettings, backend: Backend, table: clients.ClientTable,
                 advertised: Callable[[pb.Endpoints], pb.Endpoints], acl: Callable[[], AclConfig] | None = None,
                 metrics: ProxyMetrics | None = None):
        self.settings = settings
        self.metrics = metrics or ProxyMetrics(settings.rocketmq_cluster_name, settings.proxy_mode.value,
                                               table.count_by_type)
        self.acl = acl
        """The current accounts when ACL is on (``auth``; a reloading table's); None: no call is checked."""
        self.backend = backend
        self.clients = table
        self._advertised = advertised
        """The endpoints put in routes, given the ones the client dialled (mode-dependent)."""
        self._delay_levels = parse_delay_levels(settings.message_delay_level)
        self._warnings = LogLimiter(log)
        self.relays = Relays(table, settings.grpc_proxy_relay_request_timeout_in_seconds)
        self.registrar = Registrar(backend.broker_addrs, self.relays.handlers(),
                                   expire_ms=settings.channel_expired_timeout, on_gone=self._client_gone,
                                   rpc_hook=backend.rpc_hook)
        self.renewer = Renewer(
            RenewSettings(settings.renew_ahead_time_millis, settings.renew_max_time_millis,
                          settings.renew_schedule_period_millis, settings.max_renew_retry_times,
                          settings.invisible_time_millis_when_clear),
            self._change_held, clients.retry_delay_ms, alive=self.registrar.is_registered)

    def start(self) -> None:
        self.registrar.start()
        self.renewer.start()

    async def close(self) -> None:
        """Unregister every client from the brokers and give back the messages held for them."""
        await self.registrar.close()
        await self.renewer.close()

    def _client_gone(self, client_id: str) -> None:
        self.renewer.clear(client_id)

    def _identify(self, context: Any) -> clients.Caller:
        """The caller, authenticated when ACL is on; ProxyError when refused."""
        caller = clients.caller(context.invocation_metadata())
        if self.acl is None:
            return caller
        account = auth.authenticate(self.acl(), caller.headers, auth.peer_ip(context.peer()))
        return dataclasses.replace(caller, account=account)

    async def _answer(self, context: grpc.aio.ServicerContext, make: Callable[..., R],
                      body: Callable[[clients.Caller], Awaitable[R]]) -> R:
        """Run ``body`` for the caller; any failure becomes the response's status. Counted and timed."""
        started = time.perf_counter()
        try:
            answer = await body(self._identify(context))
        except EXPECTED_ERRORS as exc:
            answer = make(status=status.from_exception(exc))
        except Exception as exc:
            self._warnings.warning(type(exc).__name__, "v2 call failed unexpectedly: %r", exc)
            answer = make(status=status.from_exception(exc))
        self.metrics.rpc(make.__name__.removesuffix("Response"), answer.status.code,  # type: ignore[attr-defined]
                         time.perf_counter() - started)
        return answer

    # --- routes and clients -------------------------------------------------------------------

    async def QueryRoute(self, request: spb.QueryRouteRequest, context: Any) -> spb.QueryRouteResponse:
        async def body(caller: clients.Caller) -> spb.QueryRouteResponse:
            topic = convert.check_topic(request.topic)
            auth.authorize(caller.account, {topic: permissions.ANY})
            route = await self.backend.route(topic)
            accept = typecheck.accepted(await self.backend.metadata.topic_type(topic))
            queues = routing.message_queues(route, topic, self._advertised(request.endpoints),
                                            request.topic.resource_namespace, accept)
            return spb.QueryRouteResponse(status=status.ok(), message_queues=queues)
        return await self._answer(context, spb.QueryRouteResponse, body)

    async def QueryAssignment(self, request: spb.QueryAssignmentRequest,
                              context: Any) -> spb.QueryAssignmentResponse:
        async def body(caller: clients.Caller) -> spb.QueryAssignmentResponse:
            topic = convert.check_topic(request.topic)
            group = convert.check_group(request.group)
            auth.authorize(caller.account, {topic: permissions.SUB, validator.retry(group): permissions.SUB})
            route = await self.backend.route(topic)
            found = routing.assignments(
                route, topic, self._advertised(request.endpoints),
                fifo=await self.backend.metadata.group_orderly(group, topic),
                accept=typecheck.accepted(await self.backend.metadata.topic_type(topic)))
            if not found:
                raise ProxyError(Code.FORBIDDEN, "no readable queue")
            return spb.QueryAssignmentResponse(status=status.ok(), assignments=found)
        return await self._answer(context, spb.QueryAssignmentResponse, body)

    async def Heartbeat(self, request: spb.HeartbeatRequest, context: Any) -> spb.HeartbeatResponse:
        async def body(caller: clients.Caller) -> spb.HeartbeatResponse:
            auth.authorize(caller.account, auth.heartbeat_needs(request.client_type, request.group))
            self.registrar.seen(caller, self.clients.require(caller.client_id))
            return spb.HeartbeatResponse(status=status.ok())
        return await self._answer(context, spb.HeartbeatResponse, body)

    async def NotifyClientTermination(self, request: spb.NotifyClientTerminationRequest,
                                      context: Any) -> spb.NotifyClientTerminationResponse:
        async def body(caller: clients.Caller) -> spb.NotifyClientTerminationResponse:
            auth.authorize(caller.account, auth.group_needs(request.group))
            self.clients.require(caller.client_id)
            self.clients.forget(caller.client_id)
            self.registrar.gone(caller.client_id)
            return spb.NotifyClientTerminationResponse(status=status.ok())
        return await self._answer(context, spb.NotifyClientTerminationResponse, body)

    # --- sending ------------------------------------------------------------------------------

    def _to_remoting(self, message: pb.Message, topic_type: MessageType | None) -> Message:
        """The remoting message for ``message``, type-checked against ``topic_type`` (None: not checked)."""
        msg = convert.to_remoting(message, max_body_size=self.settings.max_message_size,
                                  max_delay_ms=self.settings.max_delay_time_mills,
                                  delay_levels_ms=self._delay_levels, now_ms=_now_ms())
        if topic_type is not None:
            typecheck.check(msg.topic, topic_type, topicattributes.of_properties(msg.properties))
        return msg

    async def _send_one(self, msg: Message) -> spb.SendResultEntry:
        try:
            result = await self.backend.send(msg)
        except EXPECTED_ERRORS as exc:
            return spb.SendResultEntry(status=status.from_exception(exc))
        return _sent_entry(result, result.msg_id, result.queue_offset)

    async def _send_batch(self, msgs: list[Message]) -> list[spb.SendResultEntry] | None:
        """One SEND_BATCH_MESSAGE for ``msgs`` (``batching``); None when they do not make one."""
        try:
            result = await self.backend.send_batch(msgs)
        except MessageError:
            return None  # nothing was sent: one by one, each with its own answer
        except EXPECTED_ERRORS as exc:
            failed = status.from_exception(exc)
            return [spb.SendResultEntry(status=failed) for _ in msgs]
        return [_sent_entry(result, msg_id, offset) for msg_id, offset in batching.entries(result, msgs)]

    async def _send_all(self, messages: Sequence[pb.Message]) -> list[spb.SendResultEntry]:
        """An entry per message, in order: converted and checked each (a bad one answers alone), the
        NORMAL ones sent as one batch when there are several, the others one at a time."""
        topic_type = None
        if self.settings.enable_topic_message_type_check:  # one topic per request: looked up once
            topic_type = await self.backend.metadata.topic_type(messages[0].topic.name)
        entries: list[spb.SendResultEntry | None] = [None] * len(messages)
        ready: list[tuple[int, Message]] = []
        for i, message in enumerate(messages):
            try:
                ready.append((i, self._to_remoting(message, topic_type)))
            except EXPECTED_ERRORS as exc:
                entries[i] = spb.SendResultEntry(status=status.from_exception(exc))
        batch = [(i, msg) for i, msg in ready if batching.batchable(msg)]
        if len(batch) >= batching.MIN_BATCH:
            sent = await self._send_batch([msg for _i, msg in batch])
            if sent is not None:
                for (i, _msg), entry in zip(batch, sent, strict=True):
                    entries[i] = entry
                ready = [(i, msg) for i, msg in ready if entries[i] is None]
        for i, msg in ready:
            entries[i] = await self._send_one(msg)
        done = [e for e in entries if e is not None]
        if len(done) == 1:  # the usual request: one message
            if done[0].status.code == Code.OK:
                self.metrics.sent(messages[0].system_properties.message_type)
            return done
        stored = Counter(m.system_properties.message_type for m, e in zip(messages, done, strict=True)
                         if e.status.code == Code.OK)
        for message_type, count in stored.items():
            self.metrics.sent(message_type, count)
        return done

    async def SendMessage(self, request: spb.SendMessageRequest, context: Any) -> spb.SendMessageResponse:
        async def body(caller: clients.Caller) -> spb.SendMessageResponse:
            if not request.messages:
                raise ProxyError(Code.MESSAGE_CORRUPTED, "no message to send")
            if len(request.messages) > 1 and len({m.topic.name for m in request.messages}) > 1:
                raise ProxyError(Code.MESSAGE_CORRUPTED, "messages of one request must share a topic")
            auth.authorize(caller.account, {request.messages[0].topic.name: permissions.PUB})
            entries = await self._send_all(request.messages)
            return spb.SendMessageResponse(status=status.combined([e.status for e in entries]), entries=entries)
        return await self._answer(context, spb.SendMessageResponse, body)

    async def EndTransaction(self, request: spb.EndTransactionRequest, context: Any) -> spb.EndTransactionResponse:
        async def body(caller: clients.Caller) -> spb.EndTransactionResponse:
            topic = convert.check_topic(request.topic)
            auth.authorize(caller.account, {topic: permissions.PUB})
            await self.backend.end_transaction(topic, request.transaction_id, request.resolution, request.source)
            return spb.EndTransactionResponse(status=status.ok())
        return await self._answer(context, spb.EndTransactionResponse, body)

    # --- receiving ----------------------------------------------------------------------------

    def _poll_ms(self, request: spb.ReceiveMessageRequest, context: Any) -> int:
        remaining = context.time_remaining()
        if request.HasField("long_polling_timeout"):
            poll = convert.duration_ms(request.long_polling_timeout)
        elif remaining is not None:
            poll = int(remaining * 1000) - 1_500
        else:
            poll = MAX_POLL_MS
        poll = max(MIN_POLL_MS, min(MAX_POLL_MS, poll))
        if remaining is not None and remaining * 1000 < MIN_POLL_MS:
            raise ProxyError(Code.ILLEGAL_POLLING_TIME, "the deadline leaves less than the shortest poll time")
        return poll

    def _invisible_ms(self, request: spb.ReceiveMessageRequest) -> int:
        if request.auto_renew or not request.HasField("invisible_duration"):
            return self.settings.default_invisible_time_mills  # renewed while held (``renewals``)
        invisible = convert.duration_ms(request.invisible_duration)
        lo, hi = self.settings.min_invisible_time_mills_for_recv, self.settings.max_invisible_time_mills
        if not lo <= invisible <= hi:
            raise ProxyError(Code.ILLEGAL_INVISIBLE_TIME, f"invisible time {invisible} ms is outside {lo}..{hi} ms")
        return invisible

    async def _receive(self, request: spb.ReceiveMessageRequest, context: Any) -> list[spb.ReceiveMessageResponse]:
        caller = self._identify(context)
        group = convert.check_group(request.group)
        topic = convert.check_topic(request.message_queue.topic)
        _authorize_consume(caller, topic, group)
        poll_ms = self._poll_ms(request, context)
        invisible_ms = self._invisible_ms(request)
        expression, kind = convert.check_filter(topic, request.filter_expression)
        fifo = await self.backend.metadata.group_orderly(group, topic)  # orderly pops block per queue
        addr = await self.backend.master(topic, request.message_queue.broker.name)
        result = await self.backend.pops.pop(
            addr, request.message_queue.broker.name, group, topic,
            max_nums=max(1, min(request.batch_size or MAX_POP_BATCH, MAX_POP_BATCH)), invisible_ms=invisible_ms,
            poll_ms=poll_ms, expression=expression, expression_type=kind, order=fifo,
            attempt_id=request.attempt_id if request.HasField("attempt_id") else None)
        if result.status is PopStatus.POLLING_FULL:
            return [spb.ReceiveMessageResponse(status=status.of(Code.TOO_MANY_REQUESTS, "polling full"))]
        if not result.messages:
            return [spb.ReceiveMessageResponse(status=status.of(Code.MESSAGE_NOT_FOUND, "no new message"))]
        if request.auto_renew and self.settings.enable_proxy_auto_renew:
            for p in result.messages:
                self.renewer.hold(caller.client_id, group, topic, p.message.msg_id, p.receipt_handle,
                                  p.message.reconsume_times)
        out = [spb.ReceiveMessageResponse(status=status.ok())]
        out.extend(spb.ReceiveMessageResponse(message=convert.to_v2(p.message, topic=topic,
                                                                    receipt_handle=p.receipt_handle))
                   for p in result.messages)
        for message_type, count in Counter(a.message.system_properties.message_type for a in out[1:]).items():
            self.metrics.received(message_type, count)
        return out

    async def ReceiveMessage(self, request: spb.ReceiveMessageRequest,
                             context: Any) -> AsyncIterator[spb.ReceiveMessageResponse]:
        started = time.perf_counter()
        receiving = asyncio.ensure_future(self._receive(request, context))
        try:
            # shielded: a client gone mid-poll must not lose what the broker pops for it meanwhile
            answers = await asyncio.shield(receiving)
        except asyncio.CancelledError:
            receiving.add_done_callback(lambda done: self._abandoned(request, context, done))
            raise
        except Exception as exc:
            if not isinstance(exc, EXPECTED_ERRORS):
                self._warnings.warning(type(exc).__name__, "receive failed unexpectedly: %r", exc)
            answers = [spb.ReceiveMessageResponse(status=status.from_exception(exc))]
        self.metrics.rpc("ReceiveMessage", answers[0].status.code, time.perf_counter() - started)
        for i, answer in enumerate(answers):
            try:
                yield answer
            except (asyncio.CancelledError, GeneratorExit):
                self._give_back(request, context, answers[i:])
                raise
        now = timestamp_pb2.Timestamp()
        now.GetCurrentTime()
        yield spb.ReceiveMessageResponse(delivery_timestamp=now)

    def _abandoned(self, request: spb.ReceiveMessageRequest, context: Any,
                   done: asyncio.Future[list[spb.ReceiveMessageResponse]]) -> None:
        if not done.cancelled() and done.exception() is None:
            self._give_back(request, context, done.result())

    def _give_back(self, request: spb.ReceiveMessageRequest, context: Any,
                   answers: list[spb.ReceiveMessageResponse]) -> None:
        """Messages popped for a client that is no longer there to get them: visible again in
        ``invisibleTimeMillisWhenClear``, as RocketMQ's proxy nacks a message it fails to write."""
        messages = [a.message for a in answers if a.HasField("message")]
        if not messages:
            return
        try:
            client_id = clients.caller(context.invocation_metadata()).client_id
        except ProxyError:
            client_id = ""  # then none of them was held for renewal
        self.renewer.give_back(client_id, [
            Held(request.group.name, m.topic.name, m.system_properties.message_id, m.system_properties.receipt_handle,
                 0, 0) for m in messages])

    async def _newest_handle(self, caller: clients.Caller, group: str, message_id: str, text: str) -> ReceiptHandle:
        """The handle to use for a received message: the renewed one if the proxy renewed it."""
        renewed = await self.renewer.release(caller.client_id, group, message_id, text)
        return ReceiptHandle.parse(renewed or text)

    async def _change_held(self, held: Held, invisible_ms: int) -> str:
        """A held message's invisible time set to ``invisible_ms`` from now (``renewals``)."""
        handle = ReceiptHandle.parse(held.handle)
        addr = await self.backend.master(held.topic, handle.extra.broker_name)
        try:
            changed = await self.backend.pops.change_invisible_time(
                addr, held.group, handle.as_popped(held.topic, held.group, held.message_id), invisible_ms)
        except BrokerError as exc:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, str(exc)) from None
        return changed.receipt_handle

    async def _ack_target(self, caller: clients.Caller, group: str, topic: str, entry: spb.AckMessageEntry,
                          masters: dict[str, str]) -> tuple[str, str, PoppedMessage]:
        """(broker address, broker name, what PopClient acks) for one entry; ProxyError if it cannot be.
        ``masters``: the broker addresses this call has looked up already, by broker name."""
        handle = await self._newest_handle(caller, group, entry.message_id, entry.receipt_handle)
        handle.check_alive(_now_ms())
        broker_name = handle.extra.broker_name
        addr = masters.get(broker_name)
        if addr is None:
            addr = masters[broker_name] = await self.backend.master(topic, broker_name)
        return addr, broker_name, handle.as_popped(topic, group, entry.message_id)

    async def _ack_each(self, addr: str, group: str, popped: list[tuple[int, PoppedMessage]],
                        answers: list[pb.Status | None]) -> None:
        for i, message in popped:
            try:
                await self.backend.pops.ack(addr, group, message)
                answers[i] = status.ok()
            except EXPECTED_ERRORS as exc:
                answers[i] = status.from_exception(exc)

    async def _ack_all(self, caller: clients.Caller, group: str, topic: str,
                       entries: Sequence[spb.AckMessageEntry]) -> list[spb.AckMessageResultEntry]:
        """An answer per entry. With ``enableBatchAck`` the entries of one broker go as one
        BATCH_ACK_MESSAGE; if the broker refuses any of it, each is acked alone for its own answer
        (acking an offset twice does no harm)."""
        answers: list[pb.Status | None] = [None] * len(entries)
        by_broker: dict[tuple[str, str], list[tuple[int, PoppedMessage]]] = {}
        masters: dict[str, str] = {}
        for i, entry in enumerate(entries):
            try:
                addr, broker_name, message = await self._ack_target(caller, group, topic, entry, masters)
            except EXPECTED_ERRORS as exc:
                answers[i] = status.from_exception(exc)
                continue
            by_broker.setdefault((addr, broker_name), []).append((i, message))
        for (addr, broker_name), popped in by_broker.items():
            if self.settings.enable_batch_ack and len(popped) >= batching.MIN_BATCH:
                try:
                    await self.backend.pops.batch_ack(addr, broker_name, group, [m for _i, m in popped])
                except EXPECTED_ERRORS:
                    pass  # one by one below
                else:
                    for i, _message in popped:
                        answers[i] = status.ok()
                    continue
            await self._ack_each(addr, group, popped, answers)
        acked = sum(1 for a in answers if a is not None and a.code == Code.OK)
        if acked:
            self.metrics.acked(acked)
        return [spb.AckMessageResultEntry(message_id=e.message_id, receipt_handle=e.receipt_handle, status=a)
                for e, a in zip(entries, answers, strict=True)]

    async def AckMessage(self, request: spb.AckMessageRequest, context: Any) -> spb.AckMessageResponse:
        async def body(caller: clients.Caller) -> spb.AckMessageResponse:
            group = convert.check_group(request.group)
            topic = convert.check_topic(request.topic)
            _authorize_consume(caller, topic, group)
            if not request.entries:
                raise ProxyError(Code.BAD_REQUEST, "no entry to ack")
            entries = await self._ack_all(caller, group, topic, request.entries)
            return spb.AckMessageResponse(status=status.combined([e.status for e in entries]), entries=entries)
        return await self._answer(context, spb.AckMessageResponse, body)

    async def _target(self, caller: clients.Caller, request: Any) -> tuple[str, str, ReceiptHandle, str]:
        """(group, topic, handle, broker address) of a call that names a received message."""
        group = convert.check_group(request.group)
        topic = convert.check_topic(request.topic)
        _authorize_consume(caller, topic, group)
        handle = await self._newest_handle(caller, group, request.message_id, request.receipt_handle)
        return group, topic, handle, await self.backend.master(topic, handle.extra.broker_name)

    async def ChangeInvisibleDuration(self, request: spb.ChangeInvisibleDurationRequest,
                                      context: Any) -> spb.ChangeInvisibleDurationResponse:
        async def body(caller: clients.Caller) -> spb.ChangeInvisibleDurationResponse:
            invisible = convert.duration_ms(request.invisible_duration)
            if not 0 <= invisible <= self.settings.max_invisible_time_mills:
                raise ProxyError(Code.ILLEGAL_INVISIBLE_TIME, f"invisible time {invisible} ms is out of range")
            group, topic, handle, addr = await self._target(caller, request)
            handle.check_alive(_now_ms())
            try:
                changed = await self.backend.pops.change_invisible_time(
                    addr, group, handle.as_popped(topic, group, request.message_id), invisible)
            except BrokerError as exc:
                raise ProxyError(Code.INTERNAL_SERVER_ERROR, str(exc)) from None
            return spb.ChangeInvisibleDurationResponse(status=status.ok(), receipt_handle=changed.receipt_handle)
        return await self._answer(context, spb.ChangeInvisibleDurationResponse, body)

    async def ForwardMessageToDeadLetterQueue(self, request: spb.ForwardMessageToDeadLetterQueueRequest,
                                              context: Any) -> spb.ForwardMessageToDeadLetterQueueResponse:
        async def body(caller: clients.Caller) -> spb.ForwardMessageToDeadLetterQueueResponse:
            group, topic, handle, addr = await self._target(caller, request)
            if handle.commit_log_offset is None:
                raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle has no commit log offset")
            await self.backend.pops.forward_to_dlq(addr, group, handle.as_popped(topic, group, request.message_id),
                                                   max(0, request.max_delivery_attempts - 1))
            return spb.ForwardMessageToDeadLetterQueueResponse(status=status.ok())
        return await self._answer(context, spb.ForwardMessageToDeadLetterQueueResponse, body)

    # --- telemetry ----------------------------------------------------------------------------

    async def _fifo(self, received: pb.Settings) -> bool:
        """``fifo`` for a consumer's settings: its group's consumeMessageOrderly (RocketMQ's proxy)."""
        sub = received.subscription
        if not received.HasField("subscription") or not sub.HasField("group") or not sub.subscriptions:
            return False
        return await self.backend.metadata.group_orderly(sub.group.name, sub.subscriptions[0].topic.name)

    async def _on_command(self, caller: clients.Caller, command: spb.TelemetryCommand,
                          stream: clients.Outgoing) -> spb.TelemetryCommand | None:
        """The reply to one client command (None: the command needs none)."""
        which = command.WhichOneof("command")
        if which == "settings":
            try:
                auth.authorize(caller.account, auth.settings_needs(command.settings))
                merged = clients.merged_settings(
                    command.settings, max_body_size=self.settings.max_message_size,
                    validate_type=self.settings.enable_topic_message_type_check,
                    fifo=await self._fifo(command.settings))
            except ProxyError as exc:
                return spb.TelemetryCommand(status=status.of(exc.code, exc.message))
            self.registrar.seen(caller, self.clients.register(caller.client_id, command.settings, stream))
            return spb.TelemetryCommand(status=status.ok(), settings=merged)
        if not self.relays.answered(command):  # a late answer, or one to a command never sent
            self._warnings.log(logging.DEBUG, caller.client_id, "telemetry %s from %s ignored", which,
                               caller.client_id)
        return None

    async def Telemetry(self, request_iterator: AsyncIterator[spb.TelemetryCommand],
                        context: Any) -> AsyncIterator[spb.TelemetryCommand]:
        """Replies to the client's commands and the commands the proxy queues for it, on one stream."""
        try:
            caller = self._identify(context)
        except ProxyError as exc:
            yield spb.TelemetryCommand(status=status.of(exc.code, exc.message))
            return
        stream: clients.Outgoing = asyncio.Queue(clients.MAX_OUTGOING_COMMANDS)

        async def read() -> None:
            try:
                async for command in request_iterator:
                    reply = await self._on_command(caller, command, stream)
                    if reply is not None:
                        await stream.put(reply)
            finally:
                with contextlib.suppress(asyncio.QueueFull):  # a full stream's reader is gone anyway
                    stream.put_nowait(None)

        reader = asyncio.create_task(read())
        self.metrics.telemetry_streams.inc()
        try:
            while (item := await stream.get()) is not None:
                yield item
        finally:
            self.metrics.telemetry_streams.dec()
            reader.cancel()
            if self.clients.detach(caller.client_id, stream):
                self.registrar.gone(caller.client_id)  # RocketMQ: the client's channel is no longer active


def _authorize_consume(caller: clients.Caller, topic: str, group: str) -> None:
    auth.authorize(caller.account, {topic: permissions.SUB, validator.retry(group): permissions.SUB})


def _sent_entry(result: SendResult, message_id: str, offset: int) -> spb.SendResultEntry:
    sent = status.ok() if result.status.name == "SEND_OK" else status.of(
        SEND_STATUS_CODES.get(result.status.name, Code.INTERNAL_SERVER_ERROR), result.status.name)
    return spb.SendResultEntry(status=sent, message_id=message_id, transaction_id=message_id, offset=offset)


SEND_STATUS_CODES: Final = {
    "FLUSH_DISK_TIMEOUT": Code.MASTER_PERSISTENCE_TIMEOUT,
    "FLUSH_SLAVE_TIMEOUT": Code.SLAVE_PERSISTENCE_TIMEOUT,
    "SLAVE_NOT_AVAILABLE": Code.HA_NOT_AVAILABLE,
}

"""Broker requests for a v2 client, relayed over the client's Telemetry stream.

An admin tool asks a broker about one consumer: GET_CONSUMER_RUNNING_INFO (``rocketq admin
consumerStatus``; with ``jstackEnable`` for its thread stacks), or has it consume one stored
message now: CONSUME_MESSAGE_DIRECTLY (``queryMsgById -g -d``). The broker sends the request to
the client's connection, which for a v2 client is the connection the proxy registered it on
(``registrations``), so the request reaches the proxy. As RocketMQ's ``GrpcClientChannel`` and
``GrpcChannelManager`` do, the proxy writes a Telemetry command with a fresh nonce and answers
the broker when the client's reply carrying that nonce comes back:

- with ``jstackEnable``: ``print_thread_stack_trace_command{nonce}``; the client's
  ``thread_stack_trace{nonce, thread_stack_trace}`` with status OK becomes a
  ``ConsumerRunningInfo`` whose ``jstack`` is that text; VERIFY_FIFO_MESSAGE_UNSUPPORTED is
  NO_PERMISSION "forbidden to verify message", any other status SYSTEM_ERROR "verify message
  failed" (RocketMQ's words);
- CONSUME_MESSAGE_DIRECTLY: ``verify_message_command{nonce, message}``; the status of the
  client's ``verify_message_result{nonce}`` becomes a ``ConsumeMessageDirectlyResult``: OK is
  CR_SUCCESS, FAILED_TO_CONSUME_MESSAGE CR_LATER, MESSAGE_CORRUPTED CR_RETURN_NULL (other: no
  result), remark "from gRPC client";
- no reply within ``grpcProxyRelayRequestTimeoutInSeconds``: SYSTEM_BUSY "call remote timeout";
- without ``jstackEnable`` RocketMQ's proxy writes nothing and the broker's wait runs out;
  rocketq answers at once with what the client's Settings say (its type, language, version and
  subscriptions; a POP consumer has no queue table).

A client with no open Telemetry stream cannot be asked: SYSTEM_ERROR.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Final

import orjson

from rocketq.protocol import storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader
from rocketq.protocol.messageerrors import MessageFormatError
from rocketq.proxy import clients, convert
from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.remoting.connection import Connection, Handler

log = logging.getLogger(__name__)

MAX_PENDING: Final = 1024
"""Relayed requests waiting for their client's answer at once; more are answered SYSTEM_BUSY."""
CONSUME_TYPES: Final = {pb.PUSH_CONSUMER: "CONSUME_PASSIVELY", pb.SIMPLE_CONSUMER: "CONSUME_ACTIVELY"}
VERIFY_RESULTS: Final = {Code.OK: "CR_SUCCESS", Code.FAILED_TO_CONSUME_MESSAGE: "CR_LATER",
                         Code.MESSAGE_CORRUPTED: "CR_RETURN_NULL"}
"""``ClientActivity.buildConsumeMessageDirectlyResult``: a verify result's status as a CMResult."""


class Relays:
    """The nonces in flight and the handlers the proxy's per-client broker connections answer with."""

    def __init__(self, table: clients.ClientTable, timeout_s: float) -> None:
        self._clients = table
        self._timeout_s = timeout_s
        self._nonces = itertools.count()
        self._pending: dict[str, asyncio.Future[spb.TelemetryCommand]] = {}

    def handlers(self) -> dict[int, Handler]:
        """What the proxy's broker connections for v2 clients answer."""
        return {RequestCode.GET_CONSUMER_RUNNING_INFO: self.running_info,
                RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_directly}

    def answered(self, command: spb.TelemetryCommand) -> bool:
        """A client's reply to a relayed command; False when no request waits for its nonce."""
        which = command.WhichOneof("command")
        if which not in ("thread_stack_trace", "verify_message_result"):
            return False
        future = self._pending.pop(getattr(command, which).nonce, None)
        if future is None or future.done():
            return False
        future.set_result(command)
        return True

    async def _ask(self, stream: clients.Outgoing, make: Any) -> spb.TelemetryCommand | None:
        """Write ``make(nonce)`` to the stream and wait for the reply; None when none came in time."""
        nonce = str(next(self._nonces))
        future: asyncio.Future[spb.TelemetryCommand] = asyncio.get_running_loop().create_future()
        self._pending[nonce] = future
        try:
            stream.put_nowait(make(nonce))
            return await asyncio.wait_for(future, self._timeout_s)
        except TimeoutError:
            return None
        finally:
            self._pending.pop(nonce, None)

    async def running_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_CONSUMER_RUNNING_INFO from a broker, for the client the header names."""
        header = GetConsumerRunningInfoRequestHeader.from_ext(request.ext_fields)
        client = self._clients.get(header.client_id)
        if client is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"the client {header.client_id} is not connected")
        info = running_info(client)
        if header.jstack_enable:
            stream = self._stream(client)
            if stream is None:
                return request.response(ResponseCode.SYSTEM_ERROR,
                                        f"the client {header.client_id} has no telemetry stream to ask")
            reply = await self._ask(stream, lambda nonce: spb.TelemetryCommand(
                print_thread_stack_trace_command=spb.PrintThreadStackTraceCommand(nonce=nonce)))
            if reply is None:
                return request.response(ResponseCode.SYSTEM_BUSY, "call remote timeout")
            if reply.status.code == Code.VERIFY_FIFO_MESSAGE_UNSUPPORTED:
                return request.response(ResponseCode.NO_PERMISSION, "forbidden to verify message")
            if reply.status.code != Code.OK:
                return request.response(ResponseCode.SYSTEM_ERROR, "verify message failed")
            info["jstack"] = reply.thread_stack_trace.thread_stack_trace
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(info))

    async def consume_directly(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """CONSUME_MESSAGE_DIRECTLY from a broker: the stored message in the body, for the client named."""
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext(request.ext_fields)
        client = self._clients.get(header.client_id)
        stream = self._stream(client) if client is not None else None
        if stream is None:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    f"the client {header.client_id} has no telemetry stream to ask")
        try:
            msg = storedrecords.decode_stored_record(request.body)
        except MessageFormatError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, f"the message to verify cannot be read: {exc}")
        message = convert.to_v2(msg, topic=header.topic or msg.topic)
        reply = await self._ask(stream, lambda nonce: spb.TelemetryCommand(
            verify_message_command=spb.VerifyMessageCommand(nonce=nonce, message=message)))
        if reply is None:
            return request.response(ResponseCode.SYSTEM_BUSY, "call remote timeout")
        result = {"order": False, "autoCommit": True, "consumeResult": VERIFY_RESULTS.get(reply.status.code),
                  "remark": "from gRPC client", "spentTimeMills": 0}
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(result))

    def _stream(self, client: clients.Client) -> clients.Outgoing | None:
        """The client's stream if a command can be queued on it now."""
        stream = client.stream
        if stream is None or stream.full() or len(self._pending) >= MAX_PENDING:
            return None
        return stream


def running_info(client: clients.Client) -> dict[str, Any]:
    """The ``ConsumerRunningInfo`` a v2 client's Settings give (no queue table: POP has none)."""
    settings = client.settings
    properties = {
        "PROP_CONSUME_TYPE": CONSUME_TYPES.get(settings.client_type, "CONSUME_ACTIVELY"),
        "PROP_CONSUMEORDERLY": str(bool(settings.subscription.fifo)).lower(),
        "PROP_CLIENT_VERSION": settings.user_agent.version,
        "PROP_CLIENT_LANGUAGE": _name(pb.Language, settings.user_agent.language),
        "PROP_CLIENT_HOSTNAME": settings.user_agent.hostname,
        "PROP_CONSUMER_START_TIMESTAMP": str(client.since_ms),
        "PROP_CLIENT_TYPE": _name(pb.ClientType, settings.client_type),
    }
    subs = [s.to_json() for s in clients.subscriptions(settings)]
    return {"properties": properties, "subscriptionSet": subs, "mqTable": {}, "statusTable": {}}


def _name(enum: Any, value: int) -> str:
    """An enum value's name; the number itself for one newer than these stubs."""
    try:
        return str(enum.Name(value))
    except ValueError:
        return str(value)

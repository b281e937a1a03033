"""Request-reply in the SDK: the requester's waiting futures and the replier's reply message.

    reply = await producer.request(Message("Orders", b"lookup 42"), timeout_ms=3000)

    async def handle(msgs, ctx):                      # a consumer of "Orders"
        for m in msgs:
            await replier.send(replies.create_reply_message(m, b"order 42: shipped"))
        return ConsumeStatus.CONSUME_SUCCESS

The requester stamps CORRELATION_ID (a fresh UUID), REPLY_TO_CLIENT (its client id) and TTL
(the timeout in ms) on an ordinary message, as RocketMQ's ``prepareSendRequest`` does, and waits
on a future keyed by the correlation id. ``create_reply_message`` builds the answer the way
``MessageUtil.createReplyMessage`` does: topic ``<CLUSTER>_REPLY_TOPIC`` (CLUSTER is stamped on
every message by the broker that stored it), ``MSG_TYPE=reply`` and the three properties copied.
A producer sends a ``MSG_TYPE=reply`` message with SEND_REPLY_MESSAGE_V2; the broker pushes it to
the requester's client instance with PUSH_REPLY_MESSAGE_TO_CLIENT, whose handler here completes
the future. A reply nobody waits for any more (it came after the timeout) is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Final

from rocketq.client.errors import ClientError, MessageError
from rocketq.client.messages import Message
from rocketq.protocol import codes, messageerrors, messageproperties, messagetypes, storedrecords
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import HeaderError, ReplyMessageRequestHeader
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)

REPLY_MESSAGE_FLAG: Final = "reply"
"""MSG_TYPE of a reply (MixAll.REPLY_MESSAGE_FLAG)."""


class RequestTimeoutError(ClientError):
    """The request was sent but no reply came within its timeout (RequestTimeoutException)."""


def prepare_request(msg: messagetypes.Message, client_id: str, timeout_ms: int) -> str:
    """Stamp the request properties on ``msg``; returns its correlation id."""
    correlation_id = str(uuid.uuid4())
    msg.properties[messageproperties.CORRELATION_ID] = correlation_id
    msg.properties[messageproperties.REPLY_TO_CLIENT] = client_id
    msg.properties[messageproperties.TTL] = str(timeout_ms)
    return correlation_id


def is_reply(properties: dict[str, str] | str | None) -> bool:
    """Whether a message (its properties, as a map or as encoded text) is a reply."""
    if isinstance(properties, dict):
        return properties.get(messageproperties.MSG_TYPE) == REPLY_MESSAGE_FLAG
    return messageproperties.property_value(properties or "", messageproperties.MSG_TYPE) == REPLY_MESSAGE_FLAG


def create_reply_message(request: messagetypes.Message, body: bytes) -> Message:
    """The reply to ``request`` (a message a consumer received); MessageError if it is no request."""
    props = request.properties
    cluster = props.get(messageproperties.CLUSTER)
    if not cluster:
        raise MessageError("create reply message fail, requestMessage error, property[CLUSTER] is null.")
    reply = Message(codes.reply_topic(cluster), body)
    reply.properties[messageproperties.MSG_TYPE] = REPLY_MESSAGE_FLAG
    for name in (messageproperties.CORRELATION_ID, messageproperties.REPLY_TO_CLIENT, messageproperties.TTL):
        value = props.get(name)
        if value is not None:
            reply.properties[name] = value
    return reply


class ReplyWaiters:
    """Futures of requests in flight, by correlation id, and the handler that completes them."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[Message]] = {}

    def expect(self, correlation_id: str) -> asyncio.Future[Message]:
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = future
        return future

    def forget(self, correlation_id: str) -> None:
        self._waiting.pop(correlation_id, None)

    def __len__(self) -> int:
        return len(self._waiting)

    async def on_push(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT from a broker."""
        try:
            reply = _reply_from(request)
        except (HeaderError, messageerrors.MessageFormatError) as exc:
            log.warning("reply pushed by %s does not decode: %s", conn.remote_addr, exc)
            return request.response(ResponseCode.SYSTEM_ERROR, "process reply message fail")
        correlation_id = reply.properties.get(messageproperties.CORRELATION_ID)
        future = self._waiting.pop(correlation_id, None) if correlation_id else None
        if future is None or future.done():
            log.debug("reply %s from %s: nobody waits for it (timed out?)", correlation_id, conn.remote_addr)
        else:
            future.set_result(reply)
        return request.response(ResponseCode.SUCCESS)


def _reply_from(request: RemotingCommand) -> Message:
    header = ReplyMessageRequestHeader.from_ext(request.ext_fields)
    body = request.body
    if header.sys_flag & messagetypes.MessageSysFlag.COMPRESSED:
        body = storedrecords.inflate_body(body, header.sys_flag)
    props = messageproperties.decode_properties(header.properties or "")
    props[messageproperties.ARRIVE_TIME] = str(int(time.time() * 1000))
    return Message(header.topic, body, header.flag, props)

"""Request-reply on the broker: SEND_REPLY_MESSAGE(_V2) in, PUSH_REPLY_MESSAGE_TO_CLIENT out.

A requester sends an ordinary message carrying CORRELATION_ID, REPLY_TO_CLIENT (its client id)
and TTL. The consumer that handles it sends a *reply* (``MSG_TYPE=reply``) to the reply topic
``<cluster>_REPLY_TOPIC`` with SEND_REPLY_MESSAGE (324) or its short-header form (325). The
broker does not wait for anyone to pull the reply: it finds the requester's connection among
the producers that heartbeat to it (by REPLY_TO_CLIENT) and calls it synchronously with
PUSH_REPLY_MESSAGE_TO_CLIENT (326). The answer to the replier says whether that push worked
(SUCCESS with msgId "0", or SYSTEM_ERROR); with ``storeReplyMessageEnable`` (default true) the
reply is *also* stored in the reply topic and the answer names where, as RocketMQ's
``ReplyMessageProcessor`` does. So a requester must be connected to the broker its reply goes
through: the reply topic lives on every broker of the cluster, and the replier sends to any.
"""

from __future__ import annotations

import logging
import time
from typing import Final

from rocketq.broker.clienttable import ClientManager
from rocketq.broker.send import SendHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.protocol import messageerrors, messageproperties
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    HeaderError,
    ReplyMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    send_header_from_v2,
)
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler

log = logging.getLogger(__name__)

PUSH_TIMEOUT_S: Final = 10.0
"""How long the broker waits for the requester to take a reply (RocketMQ's callClient)."""


class ReplyHandlers:
    def __init__(self, send: SendHandlers, clients: ClientManager, behaviour: BrokerBehaviour,
                 store_host: str) -> None:
        self._send = send
        self._clients = clients
        self._behaviour = behaviour
        self._store_host = store_host
        self._failures = LogLimiter(log)

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.SEND_REPLY_MESSAGE: self.reply, RequestCode.SEND_REPLY_MESSAGE_V2: self.reply}

    async def reply(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            if request.code == RequestCode.SEND_REPLY_MESSAGE:
                header = SendMessageRequestHeader.from_ext(request.ext_fields)
            else:
                header = send_header_from_v2(request.ext_fields)
        except HeaderError as exc:
            self._failures.warning(conn.remote_addr, "reply from %s refused: %s", conn.remote_addr, exc)
            raise  # the dispatcher answers SYSTEM_ERROR, as for a send
        refusal = self._send.check(request, header)
        if refusal is not None:
            return refusal
        queue_id = max(header.queue_id, 0)
        pushed, remark = await self._push(conn, header, queue_id, request.body)
        answer = SendMessageResponseHeader(msg_id="0", queue_id=queue_id, queue_offset=0).to_ext()
        if self._behaviour.store_reply_message_enable:
            stored = await self._send.store(conn, request, header)
            if stored.code == ResponseCode.SUCCESS:
                answer.update(stored.ext_fields)  # where it was stored; the code still says whether it was pushed
            else:
                log.warning("storing a reply to %s failed: %s", header.topic, stored.remark)
        answer["MSG_REGION"] = "DefaultRegion"
        answer["TRACE_ON"] = "true"
        return request.response(ResponseCode.SUCCESS if pushed else ResponseCode.SYSTEM_ERROR, remark, answer)

    async def _push(self, conn: Connection, header: SendMessageRequestHeader, queue_id: int,
                    body: bytes) -> tuple[bool, str | None]:
        """Call the requester with the reply; (pushed, remark for the replier)."""
        try:
            props = messageproperties.decode_properties(header.properties or "")
        except messageerrors.MessageFormatError as exc:
            return False, f"reply message properties are malformed: {exc}"
        client_id = props.get(messageproperties.REPLY_TO_CLIENT)
        if not client_id:
            return False, "reply message properties[REPLY_TO_CLIENT] is null"
        target = self._producer_connection(client_id)
        if target is None:
            return False, f"push reply message fail, channel of {client_id} not found."
        now_ms = int(time.time() * 1000)
        props[messageproperties.PUSH_REPLY_TIME] = str(now_ms)
        push_header = ReplyMessageRequestHeader(
            producer_group=header.producer_group, topic=header.topic, default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums, queue_id=queue_id, sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp, flag=header.flag,
            properties=messageproperties.encode_properties(props),
            reconsume_times=header.reconsume_times or 0, unit_mode=header.unit_mode,
            born_host=conn.remote_addr, store_host=self._store_host, store_timestamp=now_ms,
        )
        push = RemotingCommand(code=RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, ext_fields=push_header.to_ext(),
                               body=body)
        try:
            answer = await target.invoke(push, PUSH_TIMEOUT_S)
        except Exception as exc:  # a dead or slow requester: the replier hears it failed
            self._failures.warning(client_id, "push of a reply to %s failed: %s", client_id, exc)
            return False, f"push reply message to {client_id}fail."
        if answer.code != ResponseCode.SUCCESS:
            return False, f"push reply message to {client_id}fail."
        return True, None

    def _producer_connection(self, client_id: str) -> Connection | None:
        """The requester's live connection: a producer channel with that client id."""
        for channels in self._clients.producers.values():
            for connection, channel in channels.items():
                if channel.client_id == client_id and not connection.closed:
                    return connection
        return None

"""Admin requests about a broker's connected clients: producerConnection and consumerStatus.

- GET_PRODUCER_CONNECTION_LIST (204): the producers of a group that heartbeat to this broker,
  ``{"connectionSet":[{clientId, clientAddr, language, version}]}``; a group with none is
  SYSTEM_ERROR "the producer group[<g>] not exist", as RocketMQ answers.
- GET_CONSUMER_RUNNING_INFO (307): the broker cannot answer this itself: it forwards the request
  unchanged to the named consumer's connection (broker → client, RocketMQ's ``callConsumer``)
  and relays the client's answer (its ``ConsumerRunningInfo`` JSON). A client that is not
  connected gets SYSTEM_ERROR "The Consumer <g> <id> not online"; one that does not answer within
  ``CALL_CONSUMER_TIMEOUT_S``, CONSUME_MSG_TIMEOUT.
- CONSUME_MESSAGE_DIRECTLY (309): the same relay, with the stored message the offset message id
  names as the body and ``brokerName`` set (RocketMQ's ``consumeMessageDirectly``); the client
  answers a ``ConsumeMessageDirectlyResult``. An id naming no stored message: SYSTEM_ERROR.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import orjson

from rocketq.broker.clienttable import ClientManager
from rocketq.protocol import msgid
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ProducerGroupHeader,
)
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.remoting.errors import RemotingError, RemotingTimeoutError

log = logging.getLogger(__name__)

CALL_CONSUMER_TIMEOUT_S: Final = 10.0
"""How long a forwarded GET_CONSUMER_RUNNING_INFO waits for the client (RocketMQ: 10 s)."""


class ClientAdminHandlers:
    def __init__(self, clients: ClientManager, look_message: Callable[[int], bytes | memoryview | None],
                 broker_name: str) -> None:
        """``look_message(commit_log_offset)``: the stored record there, or None."""
        self._clients = clients
        self._look_message = look_message
        self._broker_name = broker_name
        self._failures = LogLimiter(log)

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.producer_connections,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
        }

    async def producer_connections(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        group = ProducerGroupHeader.from_ext(request.ext_fields).producer_group
        channels = [ch for c, ch in (self._clients.producers.get(group) or {}).items() if not c.closed]
        if not channels:
            return request.response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        body = {"connectionSet": [
            {"clientId": ch.client_id, "clientAddr": ch.connection.remote_addr, "language": ch.language,
             "version": ch.version} for ch in channels]}
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(body))

    async def consumer_running_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerRunningInfoRequestHeader.from_ext(request.ext_fields)
        forwarded = RemotingCommand(code=RequestCode.GET_CONSUMER_RUNNING_INFO, ext_fields=dict(request.ext_fields))
        return await self._call_consumer(request, forwarded, header.consumer_group, header.client_id)

    async def consume_message_directly(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext(request.ext_fields)
        try:
            offset = msgid.decode_offset_msg_id(header.msg_id.strip().upper()).commit_log_offset
        except (msgid.MessageIdError, ValueError) as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, f"{header.msg_id} is not an offset message id: {exc}")
        record = self._look_message(offset)
        if record is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
        forwarded = RemotingCommand(code=RequestCode.CONSUME_MESSAGE_DIRECTLY, body=bytes(record),
                                    ext_fields={**request.ext_fields, "brokerName": self._broker_name})
        return await self._call_consumer(request, forwarded, header.consumer_group, header.client_id)

    async def _call_consumer(self, request: RemotingCommand, forwarded: RemotingCommand, group: str,
                             client_id: str) -> RemotingCommand:
        """Send ``forwarded`` to the group's consumer ``client_id`` and answer with its answer."""
        info = self._clients.consumer_group(group)
        member = next((c for c, ch in info.channels.items() if ch.client_id == client_id and not c.closed),
                      None) if info is not None else None
        if member is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        try:
            answer = await member.invoke(forwarded, CALL_CONSUMER_TIMEOUT_S)
        except RemotingTimeoutError:
            return request.response(ResponseCode.CONSUME_MSG_TIMEOUT,
                                    f"consumer <{client_id}> did not answer in {CALL_CONSUMER_TIMEOUT_S} s")
        except RemotingError as exc:
            self._failures.warning(member.remote_addr, "asking consumer %s (request %d) failed: %s",
                                   client_id, forwarded.code, exc)
            return request.response(ResponseCode.SYSTEM_ERROR, f"invoke consumer <{client_id}> failed: {exc}")
        return request.response(answer.code, answer.remark, body=answer.body)

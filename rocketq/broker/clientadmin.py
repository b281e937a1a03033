"""Admin requests about a broker's connected clients: producerConnection and consumerStatus.

- GET_PRODUCER_CONNECTION_LIST (204): the producers of a group that heartbeat to this broker,
  ``{"connectionSet":[{clientId, clientAddr, language, version}]}``; a group with none is
  SYSTEM_ERROR "the producer group[<g>] not exist", as RocketMQ answers.
- GET_CONSUMER_RUNNING_INFO (307): the broker cannot answer this itself: it forwards the request
  unchanged to the named consumer's connection (broker → client, RocketMQ's ``callConsumer``)
  and relays the client's answer (its ``ConsumerRunningInfo`` JSON). A client that is not
  connected gets SYSTEM_ERROR "The Consumer <g> <id> not online"; one that does not answer within
  ``CALL_CONSUMER_TIMEOUT_S``, CONSUME_MSG_TIMEOUT.
"""

from __future__ import annotations

import logging
from typing import Final

import orjson

from rocketq.broker.clienttable import ClientManager
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import GetConsumerRunningInfoRequestHeader, ProducerGroupHeader
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.remoting.errors import RemotingError, RemotingTimeoutError

log = logging.getLogger(__name__)

CALL_CONSUMER_TIMEOUT_S: Final = 10.0
"""How long a forwarded GET_CONSUMER_RUNNING_INFO waits for the client (RocketMQ: 10 s)."""


class ClientAdminHandlers:
    def __init__(self, clients: ClientManager) -> None:
        self._clients = clients
        self._failures = LogLimiter(log)

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.producer_connections,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.consumer_running_info,
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
        info = self._clients.consumer_group(header.consumer_group)
        member = next((c for c, ch in info.channels.items() if ch.client_id == header.client_id and not c.closed),
                      None) if info is not None else None
        if member is None:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    f"The Consumer <{header.consumer_group}> <{header.client_id}> not online")
        forwarded = RemotingCommand(code=RequestCode.GET_CONSUMER_RUNNING_INFO, ext_fields=dict(request.ext_fields))
        try:
            answer = await member.invoke(forwarded, CALL_CONSUMER_TIMEOUT_S)
        except RemotingTimeoutError:
            return request.response(ResponseCode.CONSUME_MSG_TIMEOUT,
                                    f"consumer <{header.client_id}> did not answer in {CALL_CONSUMER_TIMEOUT_S} s")
        except RemotingError as exc:
            self._failures.warning(member.remote_addr, "asking consumer %s for its running info failed: %s",
                                   header.client_id, exc)
            return request.response(ResponseCode.SYSTEM_ERROR, f"invoke consumer <{header.client_id}> failed: {exc}")
        return request.response(answer.code, answer.remark, body=answer.body)

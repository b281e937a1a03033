"""In-band v2 statuses: every answer carries ``Status{code, message}``; the gRPC status stays OK.

RocketMQ's proxy reports business errors inside the response (``status.code`` from the
``apache.rocketmq.v2.Code`` enum) and keeps the transport status OK; the official clients check
that field. A handler raises ``ProxyError(code, message)`` and the service turns it into the
response's status. Broker answers (remoting response codes) map as RocketMQ's
``ResponseBuilder`` maps them, plus the two codes whose meaning is unambiguous in v2
(TOPIC_NOT_EXIST → TOPIC_NOT_FOUND, NO_PERMISSION → FORBIDDEN, SUBSCRIPTION_PARSE_FAILED →
ILLEGAL_FILTER_EXPRESSION).
"""

from __future__ import annotations

from typing import Final

from rocketq.client.errors import BrokerError
from rocketq.protocol.codes import ResponseCode
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.remoting.errors import RemotingError, RemotingTimeoutError

Code = pb.Code


class ProxyError(Exception):
    """A request the proxy answers with a non-OK status."""

    def __init__(self, code: pb.Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


BROKER_CODES: Final[dict[int, pb.Code]] = {
    ResponseCode.SUCCESS: Code.OK,
    ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: Code.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: Code.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.TOPIC_NOT_EXIST: Code.TOPIC_NOT_FOUND,
    ResponseCode.NO_PERMISSION: Code.FORBIDDEN,
    ResponseCode.SUBSCRIPTION_PARSE_FAILED: Code.ILLEGAL_FILTER_EXPRESSION,
}


_OK: Final = pb.Status(code=Code.OK, message="OK")


def ok() -> pb.Status:
    """The OK status: one shared message (protobuf copies it into whatever response it is put
    in, so no caller can change it)."""
    return _OK


def of(code: pb.Code, message: str) -> pb.Status:
    return pb.Status(code=code, message=message)


def from_exception(exc: BaseException) -> pb.Status:
    """The status a failed call answers: its ProxyError, the broker's code, or an internal error."""
    if isinstance(exc, ProxyError):
        return of(exc.code, exc.message)
    if isinstance(exc, BrokerError):
        return of(BROKER_CODES.get(exc.code, Code.INTERNAL_SERVER_ERROR), str(exc))
    if isinstance(exc, RemotingTimeoutError):
        return of(Code.PROXY_TIMEOUT, str(exc))
    if isinstance(exc, RemotingError):
        return of(Code.INTERNAL_SERVER_ERROR, str(exc))
    return of(Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")


def combined(codes: list[pb.Status]) -> pb.Status:
    """The top status of a multi-entry answer: the single code, or MULTIPLE_RESULTS."""
    if len({s.code for s in codes}) == 1:
        return codes[0]
    return of(Code.MULTIPLE_RESULTS, "multiple results")

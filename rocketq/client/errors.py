"""What the SDK raises, so an application can tell its own mistakes from the cluster's answers.

- ``ClientStateError``: the producer or consumer is not started, already closed, or misused
  (subscribing after start, no listener registered).
- ``MessageError``: a message the client refuses to send (bad topic name, empty or oversized
  body, a batch mixing topics). Nothing went over the wire.
- ``RouteError``: no name server knows the topic and no auto-create route (TBW102) exists, or
  no name server answered.
- ``ProtocolError``: an answer that cannot be understood (a response header missing a field,
  a body that is not what the request code promises).
- ``BrokerError``: a broker answered with a response code that is an error (RocketMQ's
  ``MQBrokerException``); it carries the code, the remark and the broker's address.

Transport failures (connect refused, timeout, connection closed) surface as
``rocketq.remoting.errors.RemotingError`` subclasses, unchanged, once retries are spent.
"""

from __future__ import annotations

from rocketq.protocol.codes import ResponseCode


class ClientError(Exception):
    """Base of every error the SDK raises itself."""


class ClientStateError(ClientError):
    """The call does not fit the object's state (not started, closed, misconfigured)."""


class MessageError(ClientError):
    """The message cannot be sent as it is; nothing was sent."""


class RouteError(ClientError):
    """No route to the topic's brokers."""


class ProtocolError(ClientError):
    """A name server or broker answered with something that is not a valid response."""


class BrokerError(ClientError):
    """A broker answered with an error code (RocketMQ's MQBrokerException)."""

    def __init__(self, code: int, remark: str | None, addr: str = "") -> None:
        self.code = code
        self.remark = remark or ""
        self.addr = addr
        try:
            name = ResponseCode(code).name
        except ValueError:
            name = "UNKNOWN"
        where = f" from {addr}" if addr else ""
        super().__init__(f"CODE: {code} ({name}){where} DESC: {self.remark}")

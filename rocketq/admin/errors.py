"""How an admin call fails, as the caller sees it.

Three kinds, kept apart because a caller reacts differently to each:

* ``AdminError``: the name server or broker answered, with a code other than SUCCESS. It keeps
  RocketMQ's numeric code, its name (``TOPIC_NOT_EXIST``) and the server's remark, so a person
  reading ``rocketq admin`` output sees the same words mqadmin would show.
* ``BodyError``: the server answered SUCCESS but with a body or header this client cannot read;
  the server (or something in between) is not speaking RocketMQ's shapes. It is
  ``rocketq.protocol.sharedbodies.BodyError`` itself, so the shared readers' errors need no translation.
* ``ArgumentError``: the caller asked for something that cannot be sent (a blank topic, a
  queue count out of range, a cluster nobody knows); nothing was changed.
* ``UnavailableError``: the request is fine but no server that could answer it is online (a
  cluster without a master, a topic whose brokers are all gone).
* ``NotFoundError``: every server that could know was asked and none has what was looked for.

Transport failures (no connection, timeout) stay ``rocketq.remoting.errors.RemotingError``.
"""

from __future__ import annotations

from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.sharedbodies import BodyError as BodyError


def code_name(code: int) -> str:
    """RocketMQ's name for a response code, or ``UNKNOWN_<n>`` for one this codebase lacks."""
    try:
        return ResponseCode(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


class AdminError(Exception):
    """A server answered a request with an error code."""

    def __init__(self, code: int, remark: str | None) -> None:
        self.code = code
        self.remark = remark or ""
        super().__init__(code, self.remark)

    @property
    def name(self) -> str:
        return code_name(self.code)

    def __str__(self) -> str:
        text = f"{self.name} ({self.code})"
        return f"{text}: {self.remark}" if self.remark else text


class ArgumentError(ValueError):
    """An admin request with arguments that cannot be valid; nothing was sent."""


class UnavailableError(Exception):
    """No registered broker can serve the request right now."""


class NotFoundError(Exception):
    """A lookup over the cluster found nothing."""

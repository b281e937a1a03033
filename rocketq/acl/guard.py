"""The broker's ACL hook: every request handler wrapped with the check, at install time.

With ``aclEnable=false`` nothing is wrapped, so requests pay nothing. With it, a refused
request is answered NO_PERMISSION with RocketMQ's reason in the remark (a oneway request gets
no answer, as in RocketMQ) and never reaches its handler; refusals are logged at most once per
peer per period (a hostile peer can send many).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Final

from rocketq import ratelimit
from rocketq.acl import validator
from rocketq.acl.plainacl import Account, AclConfig
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.connection import Connection, Handler

log = logging.getLogger(__name__)
_refusals = ratelimit.LogLimiter(log)

EXCEPTION_NAME: Final = "org.apache.rocketmq.acl.common.AclException"
"""The remark starts as RocketMQ's does, so tools that match on it keep working."""


def guarded(handlers: Mapping[int, Handler], current: Callable[[], AclConfig],
            internal: Account | None = None) -> dict[int, Handler]:
    """``handlers`` with each one checked first against the table ``current()`` returns
    (and ``internal``, the process's own account: ``validator.check``)."""
    return {code: _guard(handler, current, internal) for code, handler in handlers.items()}


def _guard(handler: Handler, current: Callable[[], AclConfig], internal: Account | None) -> Handler:
    async def checked(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        reason = validator.check(current(), request, conn.remote_host, internal)
        if reason is None:
            return await handler(conn, request)
        _refusals.warning(conn.remote_host, "ACL refused code %d from %s: %s", request.code, conn.remote_addr, reason)
        if request.is_oneway:
            return None
        return request.response(ResponseCode.NO_PERMISSION, f"{EXCEPTION_NAME}: {reason}")
    return checked

"""What every page module's change handlers share: run the change audited, say how it went."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from aiohttp import web

from rocketq.admin.errors import AdminError
from rocketq.console import guards, keys
from rocketq.protocol.codes import ResponseCode

T = TypeVar("T")


async def audited(request: web.Request, action: str, target: str, work: Awaitable[T]) -> T:
    """Run a change as the logged-in user and write it to the audit log, failed or not."""
    user = guards.session_of(request).user
    assert user is not None  # guards.access lets no change through without a user
    return await request.app[keys.AUDIT].action(user.name, action, target, work)


def done(request: web.Request, message: str, location: str) -> web.Response:
    """Tell the user on the next page that the change worked, and go there."""
    guards.session_of(request).flash("ok", message)
    return guards.see_other(location)


async def unless_missing(work: Awaitable[T]) -> T | None:
    """``work``'s result, or None when the topic it reads does not exist (a group's retry, DLQ or
    trace topic that was never created: an answer, not an error, on these pages)."""
    try:
        return await work
    except AdminError as exc:
        if exc.code != ResponseCode.TOPIC_NOT_EXIST:
            raise
        return None

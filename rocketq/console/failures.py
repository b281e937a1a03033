"""How the console fails: every error is a page that says what went wrong, never a stack trace.

An exception escaping a handler is turned into an error page with a status that matches what
happened, so a person (and a test) can tell the cases apart:

* 400: the input cannot be valid (``InvalidInput``, the admin client's ``ArgumentError``);
* 403: not logged in for a change, the read-only role asking for a change, a missing or wrong
  CSRF token (``Refused``);
* 404: no such page, topic, group or message (``AdminError`` TOPIC_NOT_EXIST and friends,
  ``NotFoundError``);
* 502: a server answered with a refusal or an unreadable body;
* 503: no name server or broker could be reached (``RemotingError``, ``UnavailableError``);
* 500: a bug; the traceback goes to the console's own log, the page says only that it happened.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import aiohttp_jinja2
from aiohttp import web

from rocketq.admin.errors import AdminError, ArgumentError, BodyError, NotFoundError, UnavailableError
from rocketq.console import rendering
from rocketq.protocol.codes import ResponseCode
from rocketq.remoting.errors import RemotingError

log = logging.getLogger(__name__)

NOT_FOUND_CODES: Final = frozenset({ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                    ResponseCode.QUERY_NOT_FOUND})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class InvalidInput(ValueError):
    """A form or query value that cannot be valid; the message says which and why."""


class Refused(Exception):
    """The request is not allowed (role, CSRF, login); the message says why."""


def describe(exc: BaseException) -> tuple[int, str, str]:
    """(status, title, message) for an exception a handler raised."""
    match exc:
        case InvalidInput() | ArgumentError():
            return 400, "Invalid input", str(exc)
        case Refused():
            return 403, "Not allowed", str(exc)
        case NotFoundError():
            return 404, "Not found", str(exc)
        case AdminError() if exc.code in NOT_FOUND_CODES:
            return 404, "Not found", str(exc)
        case AdminError():
            return 502, "The server refused", str(exc)
        case BodyError():
            return 502, "Unreadable answer", str(exc)
        case UnavailableError():
            return 503, "Unavailable", str(exc)
        case RemotingError():
            return 503, "Cannot reach the cluster", f"{type(exc).__name__}: {exc}"
    return 500, "Internal error", "The console hit an unexpected error; it is in the console's log."


@web.middleware
async def error_pages(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return await render_error(request, exc.status, exc.reason, exc.text or exc.reason)
    except Exception as exc:
        status, title, message = describe(exc)
        if status == 500:
            log.exception("console: %s %s failed", request.method, request.path)
        return await render_error(request, status, title, message)


async def render_error(request: web.Request, status: int, title: str, message: str) -> web.StreamResponse:
    if message.startswith(f"{status}: "):  # aiohttp's own texts repeat the status
        message = message.split(": ", 1)[1]
    # the template context middleware is inside the guards, so an error they raise skipped it
    context = {**await rendering.page_context(request), "title": title, "message": message}
    return aiohttp_jinja2.render_template("error.html", request, context, status=status)

"""The console's request guards, as aiohttp middlewares, outermost first after ``error_pages``:

1. ``sessions``: find the visitor's session by cookie or start one; set the cookie when the
   session is new or was replaced (login, logout). A logged-in session takes its user as the
   users file has it now (``users.Directory.current``: removed or re-passworded: logged out).
2. ``csrf``: every request that is not GET/HEAD must carry the session's CSRF token, as the form
   field ``csrf_token`` or the ``X-CSRF-Token`` header. Another site can make a browser send a
   POST with the cookie, but it cannot read the token from our pages.
3. ``access``: pages need a logged-in user (a GET without one is sent to the login page); a
   change (any POST but login and logout) needs the admin role. A refused change is audited.
"""

from __future__ import annotations

import secrets
from typing import Final

from aiohttp import web

from rocketq.console import keys
from rocketq.console.failures import Handler, Refused
from rocketq.console.sessions import COOKIE_NAME, Session

SAFE_METHODS: Final = frozenset({"GET", "HEAD"})
PUBLIC_PREFIXES: Final = ("/static/",)
PUBLIC_PATHS: Final = frozenset({"/login", "/healthz"})
ANY_ROLE_POSTS: Final = frozenset({"/login", "/logout"})
"""Changes to one's own session, not to the cluster: any role (or none, for login) may post them."""
CSRF_FIELD: Final = "csrf_token"
CSRF_HEADER: Final = "X-CSRF-Token"


def session_of(request: web.Request) -> Session:
    return request[keys.SESSION]


@web.middleware
async def sessions(request: web.Request, handler: Handler) -> web.StreamResponse:
    store = request.app[keys.SESSIONS]
    sent = request.cookies.get(COOKIE_NAME)
    session = request[keys.SESSION] = store.get(sent) or store.new()
    if session.user is not None:  # the users file may have changed since the login
        directory = request.app[keys.USERS]
        directory.refresh()
        session.user = directory.current(session.user)
    response = await handler(request)
    final = session_of(request)  # a handler may have replaced it (login, logout)
    if final.sid != sent:
        response.set_cookie(COOKIE_NAME, final.sid, httponly=True, samesite="Strict", path="/",
                            secure=request.app[keys.CONFIG].secure_cookies)
    return response


@web.middleware
async def csrf(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method not in SAFE_METHODS:
        given = request.headers.get(CSRF_HEADER)
        if given is None and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            value = (await request.post()).get(CSRF_FIELD)
            given = value if isinstance(value, str) else None
        expected = session_of(request).csrf_token
        if not given or not secrets.compare_digest(given.encode(), expected.encode()):
            raise Refused("The form's security token is missing or stale (CSRF check). Reload the page and retry.")
    return await handler(request)


@web.middleware
async def access(request: web.Request, handler: Handler) -> web.StreamResponse:
    path = request.path
    if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
        return await handler(request)
    user = session_of(request).user
    if request.method in SAFE_METHODS:
        if user is None:
            return see_other(f"/login?next={request.rel_url}")
        return await handler(request)
    if path in ANY_ROLE_POSTS:
        return await handler(request)
    if user is None:
        raise Refused("Log in first.")
    if not user.may_change:
        request.app[keys.AUDIT].write_refused(user.name, f"POST {path}")
        raise Refused(f"User {user.name!r} has the read-only role: changes need the admin role.")
    return await handler(request)


def see_other(location: str) -> web.Response:
    """303: after a POST the browser GETs the next page, so reloading it does not post again."""
    return web.Response(status=303, headers={"Location": location})

"""Logging in and out, and the audit page."""

from __future__ import annotations

import logging
from typing import Any, Final

import aiohttp_jinja2
from aiohttp import web

from rocketq.console import guards, keys
from rocketq.ratelimit import LogLimiter

routes = web.RouteTableDef()
log = logging.getLogger(__name__)
_failed_logins: Final = LogLimiter(log)
MAX_FIELD: Final = 256
"""Longest user name or password looked at; longer input is a failed login, not an argon2 workload."""


def safe_next(target: str | None) -> str:
    """Where to go after login: only a path on this site (``//host`` would leave it)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


@routes.get("/login")
@aiohttp_jinja2.template("login.html")
async def login_form(request: web.Request) -> dict[str, Any]:
    return {"next": safe_next(request.query.get("next")), "error": ""}


@routes.post("/login")
async def login(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    name, password = str(form.get("username", "")), str(form.get("password", ""))
    target = safe_next(str(form.get("next", "")))
    address = request.remote or "?"
    throttle = request.app[keys.THROTTLE]
    wait = throttle.blocked_for(address)
    if wait > 0:
        return aiohttp_jinja2.render_template("login.html", request, {
            "next": target, "error": f"Too many failed logins from your address; try again in {int(wait) + 1} s."},
            status=429)
    user = None
    if 0 < len(name) <= MAX_FIELD and 0 < len(password) <= MAX_FIELD:
        directory = request.app[keys.USERS]
        directory.refresh()
        user = directory.authenticate(name, password)
    if user is None:
        throttle.failed(address)
        _failed_logins.warning(address, "console: failed login from %s", address)
        return aiohttp_jinja2.render_template("login.html", request, {"next": target,
                                              "error": "Wrong user name or password."}, status=401)
    throttle.succeeded(address)
    store = request.app[keys.SESSIONS]
    request[keys.SESSION] = store.rotate(guards.session_of(request), user)
    request.app[keys.AUDIT].write_event(user.name, "login")
    return guards.see_other(target)


@routes.post("/logout")
async def logout(request: web.Request) -> web.StreamResponse:
    session = guards.session_of(request)
    if session.user is not None:
        request.app[keys.AUDIT].write_event(session.user.name, "logout")
    request[keys.SESSION] = request.app[keys.SESSIONS].rotate(session, None)
    return guards.see_other("/login")


@routes.get("/audit")
@aiohttp_jinja2.template("audit.html")
async def audit_page(request: web.Request) -> dict[str, Any]:
    return {"entries": list(reversed(request.app[keys.AUDIT].recent))}


@routes.get("/healthz")
async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")

"""``make_app``: the console's aiohttp application, from a ``ConsoleConfig``.

The app owns one ``AdminClient`` (connections pooled per address, opened on first use and
closed on shutdown), the users directory, the session store and the audit log. Every page
module's routes are added here; every asset under ``/static/`` is package data, so the console
needs nothing from the internet. Responses carry a Content-Security-Policy allowing only this
site's own scripts and styles, and may not be framed by another site.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

from aiohttp import web

from rocketq.admin.client import AdminClient
from rocketq.console import failures, guards, history, keys, rendering
from rocketq.console.audit import AuditLog
from rocketq.console.config import ConsoleConfig as ConsoleConfig
from rocketq.console.pages import acl, auth, charts, cluster, groups, messages, producers, topics
from rocketq.console.rates import RateMeter
from rocketq.console.sessions import SessionStore
from rocketq.console.throttle import LoginThrottle
from rocketq.console.users import Directory

STATIC_DIR: Final = Path(__file__).with_name("static")
PAGE_MODULES: Final = (auth, cluster, topics, groups, messages, producers, acl, charts)
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def make_app(config: ConsoleConfig) -> web.Application:
    app = web.Application(middlewares=[failures.error_pages, guards.sessions, guards.csrf, guards.access])
    app[keys.CONFIG] = config
    app[keys.ADMIN] = AdminClient(config.namesrv_addr, timeout=config.timeout, access_key=config.access_key,
                                  secret_key=config.secret_key)
    app[keys.USERS] = Directory(config.users, config.users_file)
    app[keys.SESSIONS] = SessionStore()
    app[keys.AUDIT] = AuditLog(config.audit_file)
    app[keys.RATES] = RateMeter()
    app[keys.HISTORY] = history.History()
    app[keys.THROTTLE] = LoginThrottle()
    if config.sample_interval > 0:
        app.cleanup_ctx.append(_sampling)
    rendering.setup(app)
    app.router.add_get("/", home)
    for module in PAGE_MODULES:
        app.router.add_routes(module.routes)
    app.router.add_static("/static/", STATIC_DIR, name="static")
    app.on_response_prepare.append(_security_headers)
    app.on_cleanup.append(_close_admin)
    return app


async def home(request: web.Request) -> web.StreamResponse:
    return guards.see_other("/cluster")


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)


async def _sampling(app: web.Application) -> AsyncIterator[None]:
    sampler = history.Sampler(app[keys.ADMIN], app[keys.HISTORY], app[keys.CONFIG].sample_interval)
    sampler.start()
    yield
    await sampler.stop()


async def _close_admin(app: web.Application) -> None:
    await app[keys.ADMIN].close()

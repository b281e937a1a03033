"""The typed keys under which the console keeps its parts in the aiohttp app and request."""

from __future__ import annotations

from typing import Final

from aiohttp import web

from rocketq.admin.client import AdminClient
from rocketq.console.audit import AuditLog
from rocketq.console.config import ConsoleConfig
from rocketq.console.history import History
from rocketq.console.rates import RateMeter
from rocketq.console.sessions import Session, SessionStore
from rocketq.console.throttle import LoginThrottle
from rocketq.console.users import Directory

CONFIG: Final = web.AppKey("config", ConsoleConfig)
ADMIN: Final = web.AppKey("admin", AdminClient)
USERS: Final = web.AppKey("users", Directory)
SESSIONS: Final = web.AppKey("sessions", SessionStore)
AUDIT: Final = web.AppKey("audit", AuditLog)
RATES: Final = web.AppKey("rates", RateMeter)
HISTORY: Final = web.AppKey("history", History)
THROTTLE: Final = web.AppKey("throttle", LoginThrottle)
SESSION: Final = web.RequestKey("session", Session)
"""Request key of the visitor's ``Session`` (set by ``guards.sessions``)."""

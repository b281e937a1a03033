"""Server-side sessions: an opaque random cookie names a ``Session`` kept in this process.

Every visitor gets a session on the first request, before logging in, so the login form carries
a CSRF token too. Logging in replaces the session with a new one (a new id: a session id an
attacker planted before login is worth nothing after it); logging out drops it.

The cookie is HttpOnly and SameSite=Strict: scripts cannot read it and other sites' pages do not
send it. Sessions live in memory: restarting the console logs everyone out, which is acceptable
for an admin tool and keeps secrets off disk. The store is bounded (``MAX_SESSIONS``, oldest
dropped first) so a client that never keeps cookies cannot grow it without limit.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from rocketq.console.users import User

COOKIE_NAME: Final = "rocketq_console"
IDLE_TIMEOUT_S: Final = 8 * 3600.0
"""A session unused this long is forgotten: a working day."""
MAX_SESSIONS: Final = 10_000
TOKEN_BYTES: Final = 32


@dataclass(slots=True)
class Session:
    sid: str
    csrf_token: str
    last_seen: float
    user: User | None = None
    flashes: list[tuple[str, str]] = field(default_factory=list)
    """(level, text) shown on the next page rendered, then cleared."""

    def flash(self, level: str, text: str) -> None:
        self.flashes.append((level, text))

    def take_flashes(self) -> list[tuple[str, str]]:
        taken, self.flashes = self.flashes, []
        return taken


class SessionStore:
    def __init__(self, *, idle_timeout: float = IDLE_TIMEOUT_S, max_sessions: int = MAX_SESSIONS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._idle_timeout = idle_timeout
        self._max_sessions = max_sessions
        self._clock = clock

    def get(self, sid: str | None) -> Session | None:
        """The live session with this id (its idle clock restarted), or None."""
        if not sid:
            return None
        session = self._sessions.get(sid)
        now = self._clock()
        if session is None or now - session.last_seen > self._idle_timeout:
            self._sessions.pop(sid, None)
            return None
        session.last_seen = now
        self._sessions.move_to_end(sid)
        return session

    def new(self, user: User | None = None) -> Session:
        while len(self._sessions) >= self._max_sessions:
            self._sessions.popitem(last=False)
        session = Session(secrets.token_urlsafe(TOKEN_BYTES), secrets.token_urlsafe(TOKEN_BYTES),
                          self._clock(), user)
        self._sessions[session.sid] = session
        return session

    def rotate(self, old: Session, user: User | None) -> Session:
        """A new session (new id, new CSRF token) for a login or logout; the old one is dropped."""
        self._sessions.pop(old.sid, None)
        session = self.new(user)
        session.flashes = old.flashes
        return session

    def __len__(self) -> int:
        return len(self._sessions)

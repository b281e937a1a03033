"""The audit log: who changed what, when, and whether it worked.

Every state-changing action of the console goes through ``AuditLog.action``: it runs the change
and writes one JSON line whatever the outcome (``ok``, or ``failed`` with the error's text), to
the audit file when one is configured and to the ``rocketq.console.audit`` logger. The last
``RECENT`` entries are also kept in memory for the console's audit page. A failed attempt is
logged too: an operator wants to see who tried to delete a topic, not only who managed to.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final, TypeVar

import orjson

RECENT: Final = 200
"""Entries kept in memory for the audit page."""

T = TypeVar("T")
log = logging.getLogger("rocketq.console.audit")


@dataclass(frozen=True, slots=True)
class Entry:
    when_ms: int
    user: str
    action: str
    target: str
    outcome: str
    detail: str = ""


class AuditLog:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.recent: deque[Entry] = deque(maxlen=RECENT)

    async def action(self, user: str, action: str, target: str, work: Awaitable[T]) -> T:
        """Await ``work`` and record it; its exception is recorded and raised again."""
        try:
            result = await work
        except Exception as exc:
            self.write(Entry(_now_ms(), user, action, target, "failed", f"{type(exc).__name__}: {exc}"))
            raise
        self.write(Entry(_now_ms(), user, action, target, "ok"))
        return result

    def write_event(self, user: str, action: str) -> None:
        """A session event (login, logout): no target, always ok."""
        self.write(Entry(_now_ms(), user, action, "", "ok"))

    def write_refused(self, user: str, action: str) -> None:
        """A change the user's role does not allow: asked for, not attempted."""
        self.write(Entry(_now_ms(), user, action, "", "refused", "read-only role"))

    def write(self, entry: Entry) -> None:
        self.recent.append(entry)
        line = orjson.dumps(asdict(entry)).decode()
        log.info("%s", line)
        if self.path is not None:
            # one short append per action: simpler and safer than holding a file open for days
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")


def _now_ms() -> int:
    return int(time.time() * 1000)

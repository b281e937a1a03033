"""The broker's current ACL table: loaded at start, re-read when the file changes.

``AclTable.start`` loads the file (a broken file then stops the broker: it must not serve
with no accounts). An owned task then compares the file's (mtime, size, inode) every
``RELOAD_INTERVAL_S`` — RocketMQ 4.9.0 polls every 500 ms too — and on a change parses the new
file off the event loop and swaps the whole table in one assignment: a request is checked
against the old table or the new one, never a mix. A file whose mtime is within
``RACY_WINDOW_S`` of now is re-read even if its stamp looks unchanged (a same-size edit inside
one tick of a coarse mtime would otherwise go unseen), and its bytes decide whether it changed.
A new file that does not parse keeps the old table and logs the error once per change; a file
that disappears keeps the old table too (an editor that writes by rename leaves it missing for
a moment).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Final

from rocketq.acl import plainacl
from rocketq.acl.plainacl import AclConfig, AclFileError
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

RELOAD_INTERVAL_S: Final = 0.5
"""Seconds between checks of the file: a stat call, cheap enough to do often."""

RACY_WINDOW_S: Final = 2.0
"""Coarsest mtime resolution expected (FAT has 2 s): a stamp this young may hide an edit."""

Stamp = tuple[int, int, int]


def _stamp(path: Path) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class AclTable:
    def __init__(self, path: Path, interval: float = RELOAD_INTERVAL_S) -> None:
        self.path = path
        self.interval = interval
        self.config = AclConfig()
        self.reloads = 0
        """Successful loads after the first: tests and logs can tell a reload happened."""
        self._stamp: Stamp | None = None
        self._content = b""
        self._task = OwnedTask("acl-reload", self._watch)

    async def start(self) -> None:
        """Load the file (AclFileError if it is unusable) and start watching it."""
        self._stamp = _stamp(self.path)
        self._content = await asyncio.to_thread(plainacl.read, self.path)
        self.config = await asyncio.to_thread(plainacl.parse_bytes, self._content, self.path)
        log.info("ACL: %d account(s) from %s", len(self.config.accounts), self.path)
        self._task.start()

    async def close(self) -> None:
        await self._task.stop()

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            stamp = _stamp(self.path)
            if stamp is None or (stamp == self._stamp and time.time_ns() - stamp[0] > RACY_WINDOW_S * 1e9):
                continue
            self._stamp = stamp
            try:
                content = await asyncio.to_thread(plainacl.read, self.path)
                if content == self._content:
                    continue
                self._content = content  # a broken file is reported once, not every pass
                self.config = await asyncio.to_thread(plainacl.parse_bytes, content, self.path)
            except AclFileError as exc:
                log.error("ACL: keeping the previous accounts, the changed file is unusable: %s", exc)
                continue
            self.reloads += 1
            log.info("ACL: reloaded %d account(s) from %s", len(self.config.accounts), self.path)

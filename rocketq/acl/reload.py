"""The broker's current ACL table: every ACL file loaded at start, re-read when one changes.

RocketMQ 4.9.3 reads ``plain_acl.yml`` plus every ``*.yml``/``*.yaml`` in the ``acl/`` directory
beside it (``conf/plain_acl.yml`` and ``conf/acl/``). The files are merged into one table: the
global white addresses of all of them, and the accounts, where an accessKey belongs to the first
file that defines it (``plain_acl.yml`` first, then the directory's files by name; a second
definition is ignored with an error in the log, as RocketMQ ignores it).

``AclTable.start`` loads them (a broken file then stops the broker: it must not serve with
half its accounts). An owned task then compares each file's (mtime, size, inode), and the
directory's listing, every ``RELOAD_INTERVAL_S`` — RocketMQ 4.9.0 polls every 500 ms too — and on
a change parses the changed file off the event loop and swaps the whole merged table in one
assignment: a request is checked against the old table or the new one, never a mix. A file
whose mtime is within ``RACY_WINDOW_S`` of now is re-read even if its stamp looks unchanged (a
same-size edit inside one tick of a coarse mtime would otherwise go unseen), and its bytes decide
whether it changed. A changed file that does not parse keeps that file's previous accounts and
logs the error once per change. ``plain_acl.yml`` disappearing keeps its accounts (an editor that
writes by rename leaves it missing for a moment); a directory file that disappears is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocketq.acl import plainacl
from rocketq.acl.plainacl import Account, AclConfig, AclFileError
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

RELOAD_INTERVAL_S: Final = 0.5
"""Seconds between checks of the files: stat calls, cheap enough to do often."""

RACY_WINDOW_S: Final = 2.0
"""Coarsest mtime resolution expected (FAT has 2 s): a stamp this young may hide an edit."""

ACL_DIR_NAME: Final = "acl"
SUFFIXES: Final = (".yml", ".yaml")
MAX_DIR_FILES: Final = 1000
"""More files than this in the ACL directory is a mistake (a wrong mount), not a configuration."""

Stamp = tuple[int, int, int]


def _stamp(path: Path) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


@dataclass(frozen=True, slots=True)
class LoadedFile:
    stamp: Stamp | None
    content: bytes
    config: AclConfig
    """The last usable parse; what a broken later version of the file leaves in force."""


def acl_directory(default_file: Path) -> Path:
    """``conf/acl/`` for ``conf/plain_acl.yml``: RocketMQ's layout under ``ROCKETMQ_HOME``."""
    return default_file.parent / ACL_DIR_NAME


def directory_files(directory: Path) -> list[Path]:
    try:
        names = sorted(entry.name for entry in os.scandir(directory)
                       if entry.name.endswith(SUFFIXES) and entry.is_file())
    except OSError:
        return []
    if len(names) > MAX_DIR_FILES:
        raise AclFileError(f"{directory}: {len(names)} ACL files, more than {MAX_DIR_FILES}")
    return [directory / name for name in names]


def merge(files: list[tuple[Path, AclConfig]]) -> tuple[AclConfig, dict[str, Path]]:
    """One table from the files in order, and which file owns each accessKey."""
    white = tuple(p for _, config in files for p in config.global_white_addresses)
    accounts: dict[str, Account] = {}
    owners: dict[str, Path] = {}
    for path, config in files:
        for key, account in config.accounts.items():
            if key in owners:
                log.error("ACL: accessKey %s is defined in %s and %s; the second is ignored", key, owners[key], path)
                continue
            accounts[key] = account
            owners[key] = path
    version = files[0][1].data_version if files else AclConfig().data_version
    return AclConfig(white, accounts, version), owners


class AclTable:
    def __init__(self, path: Path, interval: float = RELOAD_INTERVAL_S, directory: Path | None = None) -> None:
        self.path = path
        self.directory = directory if directory is not None else acl_directory(path)
        self.interval = interval
        self.config = AclConfig()
        self.owners: dict[str, Path] = {}
        """accessKey -> the file that defines it (where an admin update of it is written)."""
        self.reloads = 0
        """Table swaps after the first load: tests and logs can tell a reload happened."""
        self._files: dict[Path, LoadedFile] = {}
        self._task = OwnedTask("acl-reload", self._watch)
        self._scan_lock = asyncio.Lock()

    @property
    def files(self) -> dict[Path, LoadedFile]:
        return dict(self._files)

    async def start(self) -> None:
        """Load every file (AclFileError if one is unusable) and start watching them."""
        for path in [self.path, *await asyncio.to_thread(directory_files, self.directory)]:
            stamp = _stamp(path)
            content = await asyncio.to_thread(plainacl.read, path)
            config = await asyncio.to_thread(plainacl.parse_bytes, content, path)
            self._files[path] = LoadedFile(stamp, content, config)
        self._swap()
        log.info("ACL: %d account(s) from %d file(s) (%s, %s)", len(self.config.accounts), len(self._files),
                 self.path, self.directory)
        self._task.start()

    async def close(self) -> None:
        await self._task.stop()

    async def reload_now(self) -> None:
        """Re-read what changed at once (after an admin request rewrote a file)."""
        await self._scan()

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self._scan()

    async def _scan(self) -> None:
        async with self._scan_lock:
            try:
                listed = await asyncio.to_thread(directory_files, self.directory)
            except AclFileError as exc:
                log.error("ACL: keeping the previous accounts: %s", exc)
                return
            changed = False
            for path in [self.path, *listed]:
                changed |= await self._refresh(path)
            for gone in set(self._files) - {self.path, *listed}:
                del self._files[gone]
                changed = True
            if changed:
                self._swap()
                self.reloads += 1
                log.info("ACL: reloaded %d account(s) from %d file(s)", len(self.config.accounts), len(self._files))

    async def _refresh(self, path: Path) -> bool:
        """Re-read ``path`` if its stamp says it may have changed; True when its table did."""
        stamp = _stamp(path)
        known = self._files.get(path)
        if stamp is None or (known is not None and stamp == known.stamp
                             and time.time_ns() - stamp[0] > RACY_WINDOW_S * 1e9):
            return False
        try:
            content = await asyncio.to_thread(plainacl.read, path)
        except AclFileError as exc:
            log.error("ACL: %s", exc)
            return False
        if known is not None and content == known.content:
            self._files[path] = LoadedFile(stamp, content, known.config)
            return False
        try:
            config = await asyncio.to_thread(plainacl.parse_bytes, content, path)
        except AclFileError as exc:
            # Remember the bytes, so a broken file is reported once, not every pass.
            self._files[path] = LoadedFile(stamp, content, known.config if known else AclConfig())
            log.error("ACL: keeping the previous accounts of a changed file that is unusable: %s", exc)
            return False
        self._files[path] = LoadedFile(stamp, content, config)
        return True

    def _swap(self) -> None:
        ordered = [self.path, *sorted(p for p in self._files if p != self.path)]
        self.config, self.owners = merge([(p, self._files[p].config) for p in ordered if p in self._files])

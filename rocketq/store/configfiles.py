"""Metadata files: JSON documents written so that a crash never leaves none readable.

The broker's managers (topics, subscription groups, consumer offsets) persist through
``write_json_atomic`` / ``read_json``. Writing follows RocketMQ's ``MixAll.string2File`` and
adds the fsyncs it lacks: the new content goes to ``<file>.tmp`` (fsynced), the current file
becomes ``<file>.bak``, the temp file is renamed over ``<file>``, and the directory is fsynced.
Reading falls back to ``.bak`` when the file is missing or does not parse, as RocketMQ's
``ConfigManager.load`` does. What the documents contain is the broker's business.

``CoalescedFile`` is how a broker table that changes at runtime is written: a change asks for a
write, concurrent changes share one (``rocketq.groupcommit``), and the caller that must answer
only once its change is durable awaits ``write``. The document is taken on the event loop (so
it is one consistent state of the table) and serialised and written in a worker thread; a
sequence number keeps an older snapshot from ever replacing a newer file.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from rocketq.groupcommit import GroupCommit

log = logging.getLogger(__name__)


class ConfigFileError(RuntimeError):
    """Neither a config file nor its backup can be read."""


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Replace ``path`` with ``obj`` as pretty JSON; blocking (a few syscalls and two fsyncs)."""
    write_bytes_atomic(path, orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """``write_json_atomic`` for a document already serialised."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        write_and_sync(tmp, data, os.O_TRUNC)
    except OSError:
        tmp.unlink(missing_ok=True)  # on a full disk, a partial temp file holds blocks for nothing
        raise
    if path.exists():
        os.replace(path, path.with_name(path.name + ".bak"))
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_and_sync(path: Path, data: bytes, mode: int) -> None:
    """Write all of ``data`` to ``path`` (opened ``O_WRONLY | O_CREAT | mode``) and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make the names in ``directory`` (a file created, renamed or deleted) survive a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: str | Path) -> Any | None:
    """The document at ``path``, else its ``.bak``; None when neither exists.

    A file that exists but does not parse falls back to the backup; if that is also unusable,
    ConfigFileError says so (starting with empty metadata would silently lose it).
    """
    path = Path(path)
    backup = path.with_name(path.name + ".bak")
    problems = []
    for candidate in (path, backup):
        try:
            raw = candidate.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{candidate}: {exc.strerror}")
            continue
        if not raw.strip():
            problems.append(f"{candidate}: empty")
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            problems.append(f"{candidate}: {exc}")
            continue
        if candidate is backup:
            log.warning("config %s unreadable, loaded its backup %s", path, backup)
        return value
    if problems:
        raise ConfigFileError("; ".join(problems))
    return None


class CoalescedFile:
    """One JSON file written from ``snapshot()``, by group commit.

    ``snapshot`` runs on the event loop and must return a document the table's later changes do
    not mutate (fresh dicts, or dicts the table replaces rather than edits): it is serialised in
    a worker thread while the loop goes on changing the table.
    """

    def __init__(self, path: Path, snapshot: Callable[[], Any]) -> None:
        self.path = path
        self._snapshot = snapshot
        self._commit = GroupCommit(f"writing {path.name}", self._write_in_thread)
        self._sequence = itertools.count(1)
        self._lock = threading.Lock()
        self._written = 0
        """Sequence number of the snapshot the file holds; an older one is never written over it."""

    @property
    def writes(self) -> int:
        return self._commit.runs

    async def write(self) -> None:
        """Return once the table as it is now (or newer) is on disk; OSError when it cannot be."""
        await self._commit.commit()

    def request(self) -> None:
        """Write soon; without a running event loop (tools, tests), write now."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.write_now()
            return
        self._commit.commit_soon()

    def write_now(self) -> None:
        """Write on the calling thread (start-up, shutdown, a slave copying its master's tables)."""
        self._store(next(self._sequence), self._snapshot())

    async def close(self) -> None:
        await self._commit.close()

    async def _write_in_thread(self) -> None:
        document = self._snapshot()
        await asyncio.to_thread(self._store, next(self._sequence), document)

    def _store(self, sequence: int, document: Any) -> None:
        data = orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
        with self._lock:
            if sequence > self._written:
                write_bytes_atomic(self.path, data)
                self._written = sequence

"""A broker table file that a change makes durable in time proportional to the change.

topics.json and subscriptionGroup.json are RocketMQ's whole-table documents; rewriting one per
change (RocketMQ's ``ConfigManager.persist``) costs the table: 11 MB at 50 000 topics. Here a
change is made durable by appending one line to a journal beside the file and fsyncing it, by
group commit (``rocketq.groupcommit``: at most one append in flight, the next carries every
change made meanwhile), and the whole file is rewritten only now and then:

    topics.json              the table, RocketMQ's format (what a Java broker reads)
    topics.json.journal.<n>  one JSON line per batch of changes: {"dataVersion", "put", "delete"}

- ``record`` notes a change (entries put, names deleted, the table's new DataVersion) and asks
  for an append; ``write`` returns once everything recorded before the call is fsynced.
- Once the current journal holds ``COMPACT_ABOVE_BYTES``, a compaction switches new changes to
  journal n+1, rewrites the whole file (off the loop; ``configfiles.CoalescedFile``) and then
  deletes journals up to n, oldest first. ``write_now`` (start-up after a crash, a slave adopting
  its master's table, shutdown) rewrites the file and deletes every journal.
- ``read`` is the file with the journals replayed in order. A change is a put or a delete of a
  whole entry, so replaying a journal the file already covers changes nothing; a journal left
  behind by a crash is replayed and folded into the file at the next start. A torn last line
  (a crash during an append, never acknowledged) is ignored.

A Java broker given this directory after a clean shutdown reads the same files it would have
written; after a crash, only rocketq knows to replay the journals.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import orjson

from rocketq.groupcommit import GroupCommit
from rocketq.store import configfiles

log = logging.getLogger(__name__)

COMPACT_ABOVE_BYTES: Final = 4 * 1024 * 1024
"""Journal bytes after which the whole file is rewritten: about 20 000 topic changes, so one
rewrite (about 50 ms of CPU and disk at 50 000 topics, 11 MB) per 20 000 changes, not per batch."""


class JournaledFile:
    def __init__(self, path: Path, table_key: str, snapshot: Callable[[], Any],
                 compact_above: int = COMPACT_ABOVE_BYTES) -> None:
        self.path = path
        self._key = table_key
        self._file = configfiles.CoalescedFile(path, snapshot)
        self._compact_above = compact_above
        self._pending: list[bytes] = []
        self._appends = GroupCommit(f"journaling {path.name}", self._append)
        self._compactions = GroupCommit(f"compacting {path.name}", self._compact)
        self._index = max(self._journal_indexes(), default=0) + 1
        """The journal new changes go to; a new process never appends to an older one."""
        self._journal_bytes = 0
        self.appends = 0
        """Journal appends (fsyncs) done so far."""

    @property
    def rewrites(self) -> int:
        """Whole-file writes done so far (compactions; not counting ``write_now``)."""
        return self._file.writes

    # --- changes -------------------------------------------------------------------------------

    def record(self, data_version: Any, put: Mapping[str, Any] | None = None,
               delete: Iterable[str] = ()) -> None:
        """Note a change and ask for its append; without a running loop, rewrite the file now."""
        line = orjson.dumps({"dataVersion": data_version, "put": dict(put or {}), "delete": list(delete)})
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.write_now()
            return
        self._pending.append(line + b"\n")
        self._appends.commit_soon()

    async def write(self) -> None:
        """Return once every change recorded before the call is on disk (OSError if it cannot be)."""
        await self._appends.commit()

    def write_now(self) -> None:
        """Rewrite the whole file on this thread and drop every journal (it covers them all)."""
        covered = self._index
        self._index += 1
        self._journal_bytes = 0
        self._file.write_now()
        self._delete_journals(covered)

    async def close(self) -> None:
        """Finish the appends and compactions asked for; the caller then calls ``write_now``."""
        await self._appends.close()
        await self._compactions.close()
        await self._file.close()

    async def _append(self) -> None:
        lines, self._pending = self._pending, []
        if not lines:
            return
        data = b"".join(lines)
        await asyncio.to_thread(_append_and_sync, self._journal(self._index), data)
        self.appends += 1
        self._journal_bytes += len(data)
        if self._journal_bytes > self._compact_above:
            self._journal_bytes = 0
            self._compactions.commit_soon()

    async def _compact(self) -> None:
        covered = self._index
        self._index += 1  # changes from now on go to the next journal
        await self._appends.commit()  # an append still writing to `covered` has finished
        await self._file.write()  # the table as it is now: every change in `covered` included
        await asyncio.to_thread(self._delete_journals, covered)

    # --- files ---------------------------------------------------------------------------------

    def _journal(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.journal.{index}")

    def _journal_indexes(self) -> list[int]:
        pattern = re.compile(re.escape(self.path.name) + r"\.journal\.(\d+)")
        try:
            names = os.listdir(self.path.parent)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for m in map(pattern.fullmatch, names) if m)

    def _delete_journals(self, up_to: int) -> None:
        """Oldest first: a crash part-way leaves only newer journals, whose replay is still right."""
        for index in self._journal_indexes():
            if index <= up_to:
                self._journal(index).unlink(missing_ok=True)

    def has_journals(self) -> bool:
        return bool(self._journal_indexes())

    def read(self) -> Any | None:
        """The file with every journal replayed, or None when neither exists."""
        document = configfiles.read_json(self.path)
        indexes = self._journal_indexes()
        if not indexes:
            return document
        if not isinstance(document, dict):
            document = {}
        table = document.get(self._key)
        if not isinstance(table, dict):
            table = document[self._key] = {}
        for index in indexes:
            for record in _records(self._journal(index)):
                for name in record.get("delete") or ():
                    table.pop(name, None)
                table.update(record.get("put") or {})
                if record.get("dataVersion") is not None:
                    document["dataVersion"] = record["dataVersion"]
        return document


def _append_and_sync(path: Path, data: bytes) -> None:
    new = not path.exists()
    configfiles.write_and_sync(path, data, os.O_APPEND)
    if new:
        configfiles.fsync_dir(path.parent)  # a new journal's name must survive a crash too


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        return []
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            if number < len(lines) - 1 or lines[-1] == b"":
                log.warning("skipping unreadable line %d of %s", number, path)
            continue  # else a torn last line: a crash during an append nobody was answered about
        if isinstance(record, dict):
            records.append(record)
        else:
            log.warning("skipping line %d of %s: not a change record", number, path)
    return records

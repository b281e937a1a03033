"""The entry index: Raft's view of a DLedger broker's CommitLog.

The CommitLog keeps RocketMQ's plain format (no DLedger entry header), so what Raft needs to know
about each entry lives beside it, in ``<storePathRootDir>/dledger/entryindex``: a 32-byte header,
then one fixed-size record per entry, entry ``i`` at ``HEADER.size + (i - 1) * RECORD.size``::

    header  magic "RQDLIDX1" (8) | version i32 | reserved i32 | committed index i64 | reserved i64
    record  term i64 | pos i64 (CommitLog offset where the entry starts) | size i32 | crc32 u32

An entry's bytes are ``[pos, pos + size)`` of the CommitLog: one put's records, with the
END_OF_FILE blank before them when the put rolled a segment; size 0 is a no-op entry. Entries
follow each other without gaps (``pos`` of entry ``i + 1`` = end of entry ``i``). The record's
CRC covers its first 20 bytes, so a record torn by a crash is recognised and dropped with
everything after it. The committed index in the header is a hint written as commits happen and
made durable with the store's flushes: after a restart dispatch resumes from it, and anything
later is dispatched again once the group commits it anew.

Writes are ``pwrite`` calls; the file is fsynced together with the CommitLog (the store's
flusher takes ``fd``), so it is as durable as the messages are under either flush policy.
Reads are ``pread`` calls: nothing is cached except the last record.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import Final, NamedTuple

from rocketq.store import mappedfile

FILE_NAME: Final = "entryindex"
MAGIC: Final = b"RQDLIDX1"
VERSION: Final = 1
HEADER: Final = struct.Struct(">8siiqq")
RECORD: Final = struct.Struct(">qqiI")
_CRC_COVERS: Final = RECORD.size - 4


class EntryIndexError(ValueError):
    """The file is not an entry index (wrong magic or version)."""


class EntryRecord(NamedTuple):
    term: int
    pos: int
    size: int

    @property
    def end(self) -> int:
        return self.pos + self.size


def _encode(record: EntryRecord) -> bytes:
    head = struct.pack(">qqi", record.term, record.pos, record.size)
    return head + struct.pack(">I", zlib.crc32(head))


class EntryIndex:
    """The records of one DLedger store's entries, on disk."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / FILE_NAME
        created = not self.path.exists()
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.last_index = 0
        self.committed_hint = 0
        self._last: EntryRecord | None = None
        try:
            if created or os.fstat(self.fd).st_size < HEADER.size:
                os.pwrite(self.fd, HEADER.pack(MAGIC, VERSION, 0, 0, 0), 0)
                mappedfile.fsync_dir(directory)
            self._load()
        except BaseException:
            os.close(self.fd)
            raise

    def _load(self) -> None:
        magic, version, _r, committed, _r2 = HEADER.unpack(os.pread(self.fd, HEADER.size, 0))
        if magic != MAGIC or version != VERSION:
            raise EntryIndexError(f"{self.path} is not a rocketq entry index (magic {magic!r}, version {version})")
        count = (os.fstat(self.fd).st_size - HEADER.size) // RECORD.size
        # a crash may leave a torn or zeroed record at the tail: the last good one ends the log
        while count and self._read(count) is None:
            count -= 1
        self.last_index = count
        self._last = self._read(count) if count else None
        self.committed_hint = max(0, min(committed, count))
        self._cut_file()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    # --- reads ----------------------------------------------------------------------------------

    def _read(self, index: int) -> EntryRecord | None:
        raw = os.pread(self.fd, RECORD.size, HEADER.size + (index - 1) * RECORD.size)
        if len(raw) < RECORD.size:
            return None
        term, pos, size, crc = RECORD.unpack(raw)
        if zlib.crc32(raw[:_CRC_COVERS]) != crc or term <= 0 or size < 0:
            return None
        return EntryRecord(term, pos, size)

    def get(self, index: int) -> EntryRecord | None:
        """Entry ``index`` (1..last_index), else None."""
        if not 1 <= index <= self.last_index:
            return None
        if index == self.last_index:
            return self._last
        return self._read(index)

    @property
    def last(self) -> EntryRecord | None:
        return self._last

    # --- writes ---------------------------------------------------------------------------------

    def append(self, record: EntryRecord) -> int:
        """Write the next entry's record; returns its index."""
        if self._last is not None and record.pos != self._last.end:
            raise ValueError(f"entry at {record.pos} does not follow the last one, which ends at {self._last.end}")
        index = self.last_index + 1
        os.pwrite(self.fd, _encode(record), HEADER.size + (index - 1) * RECORD.size)
        self.last_index = index
        self._last = record
        return index

    def truncate_after(self, index: int) -> None:
        """Drop the records of every entry above ``index``."""
        if index >= self.last_index:
            return
        self.last_index = max(0, index)
        self._last = self._read(self.last_index) if self.last_index else None
        self.committed_hint = min(self.committed_hint, self.last_index)
        self._cut_file()

    def _cut_file(self) -> None:
        os.ftruncate(self.fd, HEADER.size + self.last_index * RECORD.size)

    def set_committed(self, index: int) -> None:
        """Record the committed index in the header (durable with the next flush)."""
        self.committed_hint = index
        os.pwrite(self.fd, struct.pack(">q", index), 16)

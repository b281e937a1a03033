"""IndexFile: find messages by key (QUERY_MESSAGE) or by unique id, within a time range.

Each file under ``index/`` is named by its creation time (``yyyyMMddHHmmssSSS``) and laid out as
RocketMQ's ``IndexFile``::

    header   40 bytes: beginTimestamp i64, endTimestamp i64, beginPhyOffset i64,
             endPhyOffset i64, hashSlotCount i32, indexCount i32
    slots    maxHashSlotNum x i32: the newest entry number whose key hashes to the slot
    entries  maxIndexNum x 20 bytes: keyHash i32, phyOffset i64, timeDiff i32 (seconds since
             beginTimestamp), prevIndex i32 (the slot's previous newest entry; 0 ends the chain)

The key of an entry is ``topic#key`` and its hash Java's ``String.hashCode`` made non-negative.
Entry number 0 is never used, so 0 means "none". Lookups walk a slot's chain newest-first and
keep entries whose hash and time match; different keys can share a hash, so callers check the
records they get. A full file rolls to a new one.

Like the ConsumeQueue, the index is derived from the CommitLog and rebuilt from it after a
crash. It stores offsets, not messages, and it does not read the CommitLog.

Writes go through the map, so they only touch allocated blocks (see ``mappedfile``): a new file
gets its header and hash slots (written anywhere) allocated at creation, and entries, which
are written in order, are allocated a window ahead. A full disk raises OSError from ``add``
before the entry is written; entries a failed put left behind point at offsets the CommitLog
has not kept and are harmless, since every hit is checked against the record it points to.
"""

from __future__ import annotations

import functools
import logging
import mmap
import os
import re
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from rocketq.protocol import javahash, messageproperties, nativecodecs
from rocketq.store import mappedfile
from rocketq.store.mappedfile import StoreFileError

log = logging.getLogger(__name__)

HEADER = struct.Struct(">qqqqii")
HEADER_SIZE: Final = 40
SLOT = struct.Struct(">i")
SLOT_SIZE: Final = 4
ENTRY = struct.Struct(">iqii")
ENTRY_SIZE: Final = 20
INVALID_INDEX: Final = 0
MAX_TIME_DIFF: Final = 0x7FFFFFFF
_NAME = re.compile(r"^\d{17}$")


def key_hash(topic: str, key: str) -> int:
    """``Math.abs(("topic#key").hashCode())``, with Integer.MIN_VALUE mapped to 0 as RocketMQ does.

    The ``topic#`` part is hashed once per topic and extended by each key (``message.
    java_string_hash_after``): a message has one or more keys, a topic has many messages.
    """
    return _extended_hash(_topic_prefix_hash(topic), key)


def _extended_hash(prefix: int, key: str) -> int:
    """``key_hash`` given the hash of ``topic#`` (one lookup per message, not per key)."""
    value = javahash.java_string_hash_after(prefix, key)
    if value & 0x80000000:
        value = 0x100000000 - value  # abs() of the signed value; MIN_VALUE stays 0x80000000
    return 0 if value > 0x7FFFFFFF else value


@functools.lru_cache(maxsize=4096)
def _topic_prefix_hash(topic: str) -> int:
    return javahash.java_string_hash_unsigned(topic + "#")


def file_name(millis: int) -> str:
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(millis / 1000))
    return f"{stamp}{millis % 1000:03d}"


class IndexFile:
    """One index file, mapped in memory; ``put`` and ``lookup`` never leave the map."""

    # slots: the C appends (native/indexput.c) read and move the counters at their slots
    __slots__ = ("_entries_at", "begin_phy_offset", "begin_timestamp", "buf", "end_phy_offset", "end_timestamp",
                 "fd", "flushed", "hash_slot_count", "header_dirty", "index_count", "index_num", "path", "reserved",
                 "size", "slot_num")

    def __init__(self, path: Path, slot_num: int, index_num: int, *, create: bool) -> None:
        self.path = path
        self.slot_num = slot_num
        self.index_num = index_num
        self.size = HEADER_SIZE + slot_num * SLOT_SIZE + index_num * ENTRY_SIZE
        self._entries_at = HEADER_SIZE + slot_num * SLOT_SIZE
        fd = os.open(path, os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0), 0o644)
        try:
            if create:
                os.ftruncate(fd, self.size)
            actual = os.fstat(fd).st_size
            if actual != self.size:
                raise StoreFileError(f"{path} is {actual} bytes, maxHashSlotNum={slot_num} and "
                                     f"maxIndexNum={index_num} give {self.size}")
            self.reserved = 0
            """Bytes from the file start allocated on disk (page-aligned, or the whole file)."""
            if create:
                self.reserved = mappedfile.allocate(fd, 0, self._entries_at + 2 * ENTRY_SIZE, self.size)
            self.buf = mmap.mmap(fd, self.size)
        except BaseException:
            os.close(fd)
            if create:
                path.unlink(missing_ok=True)
            raise
        self.fd = fd
        (self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
         self.hash_slot_count, self.index_count) = HEADER.unpack_from(self.buf, 0)
        if create or self.index_count < 1:
            self.index_count = 1
        self.header_dirty = create
        self.flushed = not create

    @property
    def is_full(self) -> bool:
        return self.index_count >= self.index_num

    def put(self, hash_code: int, phy_offset: int, store_timestamp: int) -> bool:
        """Add an entry; False when the file is full."""
        count = self.index_count
        if count >= self.index_num:
            return False
        entry_end = self._entries_at + (count + 1) * ENTRY_SIZE
        if entry_end > self.reserved:
            # From 0 for a file written before this process: its slots may be sparse.
            self.reserved = mappedfile.allocate(self.fd, self.reserved, entry_end, self.size)
        buf = self.buf
        slot_pos = HEADER_SIZE + (hash_code % self.slot_num) * SLOT_SIZE
        (prev,) = SLOT.unpack_from(buf, slot_pos)
        if prev <= INVALID_INDEX or prev >= count:
            prev = INVALID_INDEX
            self.hash_slot_count += 1
        if count <= 1:
            self.begin_timestamp = store_timestamp
            self.begin_phy_offset = phy_offset
        diff = (store_timestamp - self.begin_timestamp) // 1000
        diff = 0 if diff < 0 else min(diff, MAX_TIME_DIFF)
        ENTRY.pack_into(buf, self._entries_at + count * ENTRY_SIZE, hash_code, phy_offset, diff, prev)
        SLOT.pack_into(buf, slot_pos, count)
        self.index_count = count + 1
        self.end_timestamp = store_timestamp
        self.end_phy_offset = phy_offset
        self.header_dirty = True
        self.flushed = False
        return True

    def has_room(self, entries: int) -> bool:
        """Whether ``entries`` more entries fit with their blocks already allocated."""
        count = self.index_count + entries
        return count <= self.index_num and self._entries_at + count * ENTRY_SIZE <= self.reserved

    def write_header(self) -> None:
        if self.reserved < HEADER_SIZE:
            self.reserved = mappedfile.allocate(self.fd, 0, HEADER_SIZE, self.size)
        HEADER.pack_into(self.buf, 0, self.begin_timestamp, self.end_timestamp, self.begin_phy_offset,
                         self.end_phy_offset, self.hash_slot_count, self.index_count)
        self.header_dirty = False

    def overlaps(self, begin: int, end: int) -> bool:
        return self.index_count > 1 and self.begin_timestamp <= end and self.end_timestamp >= begin

    def lookup(self, hash_code: int, begin: int, end: int, max_num: int, out: list[int]) -> None:
        """Append to ``out`` the offsets of entries with this hash stored in [begin, end]."""
        count = self.index_count
        (current,) = SLOT.unpack_from(self.buf, HEADER_SIZE + (hash_code % self.slot_num) * SLOT_SIZE)
        while INVALID_INDEX < current < count and len(out) < max_num:
            entry_hash, phy, diff, prev = ENTRY.unpack_from(self.buf, self._entries_at + current * ENTRY_SIZE)
            stored_at = self.begin_timestamp + diff * 1000
            if entry_hash == hash_code and begin <= stored_at <= end:
                out.append(phy)
            if diff < 0 or prev >= current:
                break  # chains only go back in time; anything else is damage, not a loop to follow
            current = prev

    def close(self) -> None:
        if self.fd < 0:
            return
        if self.header_dirty:
            self.write_header()
        self.buf.close()
        os.close(self.fd)
        self.fd = -1

    def destroy(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


class IndexService:
    """The index files of a store: where entries go, and lookups across files."""

    def __init__(self, directory: Path, slot_num: int, index_num: int, clock_ms: Callable[[], int]) -> None:
        self.directory = directory
        self.slot_num = slot_num
        self.index_num = index_num
        self._clock_ms = clock_ms
        self.files: list[IndexFile] = []
        self.rebuild_from: int | None = None
        """Set by ``load`` when damaged files were dropped: the CommitLog offset to re-index from."""

    def load(self) -> None:
        """Map the index files. One of the wrong size is deleted with the files after it, and
        ``rebuild_from`` tells recovery where re-indexing from the CommitLog must start."""
        self.directory.mkdir(parents=True, exist_ok=True)
        paths = sorted(p for p in self.directory.iterdir() if _NAME.match(p.name))
        for at, path in enumerate(paths):
            try:
                self.files.append(IndexFile(path, self.slot_num, self.index_num, create=False))
            except StoreFileError as exc:
                log.warning("index: %s; deleting it and %d newer files, they are rebuilt from the commitlog",
                            exc, len(paths) - at - 1)
                for damaged in paths[at:]:
                    damaged.unlink()
                self.rebuild_from = max(0, self.end_phy_offset)
                return

    def close(self) -> None:
        for f in self.files:
            f.close()

    @property
    def end_phy_offset(self) -> int:
        """Offset of the newest indexed message (-1 when nothing is indexed)."""
        for f in reversed(self.files):
            if f.index_count > 1:
                return f.end_phy_offset
        return -1

    # --- writes -------------------------------------------------------------------------------

    def _writable(self) -> IndexFile:
        if self.files and not self.files[-1].is_full:
            return self.files[-1]
        millis = self._clock_ms()
        path = self.directory / file_name(millis)
        while path.exists():
            millis += 1
            path = self.directory / file_name(millis)
        if self.files:
            self.files[-1].write_header()
        created = IndexFile(path, self.slot_num, self.index_num, create=True)
        self.files.append(created)
        log.info("index file %s created", path.name)
        return created

    @nativecodecs.accelerated_as("index_add")
    def add(self, topic: str, uniq_key: str | None, keys: str | None, phy_offset: int, store_timestamp: int) -> None:
        """Index one message under its unique key and each of its KEYS.

        The file's header is written before returning (or raising), so the map is whole after
        every add: a kill -9 between puts finds the counters the entries need, and the put
        path needs no separate ``commit``.

        The reference for native/indexput.c, which writes the same entries and header when the
        last file has room and allocated blocks for all of them, and calls this method otherwise."""
        f = self.files[-1] if self.files else self._writable()
        try:
            prefix = _topic_prefix_hash(topic)
            if uniq_key:
                code = _extended_hash(prefix, uniq_key)
                if not f.put(code, phy_offset, store_timestamp):
                    f = self._writable()
                    f.put(code, phy_offset, store_timestamp)
            if keys:
                for key in keys.split(messageproperties.KEY_SEPARATOR):
                    if key:
                        code = _extended_hash(prefix, key)
                        if not f.put(code, phy_offset, store_timestamp):
                            f = self._writable()
                            f.put(code, phy_offset, store_timestamp)
        finally:
            if f.header_dirty:
                f.write_header()

    @staticmethod
    def entry_count(uniq_key: str | None, keys: str | None) -> int:
        """How many entries ``add`` writes for a message with these keys."""
        entries = 1 if uniq_key else 0
        if keys:
            entries += sum(1 for key in keys.split(messageproperties.KEY_SEPARATOR) if key)
        return entries

    def has_room(self, entries: int) -> bool:
        """Whether ``add`` of ``entries`` entries fits in the last file as it is: no file to
        create or roll to, no blocks to allocate (``groupappend``'s precondition)."""
        return bool(self.files) and self.files[-1].has_room(entries)

    def commit(self) -> None:
        """Write the header of the file being filled, if anything left it stale (``add`` does
        not; this is for callers that put entries into files directly)."""
        if self.files and self.files[-1].header_dirty:
            self.files[-1].write_header()

    # --- reads --------------------------------------------------------------------------------

    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], int, int]:
        """Offsets of messages indexed under ``key`` (newest first), and the index's last update
        (timestamp, offset) for QUERY_MESSAGE's response header."""
        hash_code = key_hash(topic, key)
        found: list[int] = []
        for f in reversed(self.files):
            if len(found) >= max_num:
                break
            if f.overlaps(begin, end):
                f.lookup(hash_code, begin, end, max_num, found)
        last = next((f for f in reversed(self.files) if f.index_count > 1), None)
        return found, (last.end_timestamp if last else 0), (last.end_phy_offset if last else 0)

    # --- upkeep -------------------------------------------------------------------------------

    def unflushed(self) -> list[IndexFile]:
        self.commit()
        return [f for f in self.files if not f.flushed and f.fd >= 0]

    def delete_below(self, commitlog_min: int) -> int:
        """Delete files whose newest entry points below ``commitlog_min`` (never the last file)."""
        deleted = 0
        while len(self.files) > 1 and self.files[0].end_phy_offset < commitlog_min:
            self.files.pop(0).destroy()
            deleted += 1
        return deleted

    def drop_unreliable(self, checkpoint_ts: int, phys_end: int) -> int | None:
        """After a crash: delete files that may hold unflushed entries or entries for lost
        CommitLog bytes. Returns the smallest offset they covered (where re-indexing starts)."""
        rebuild_from: int | None = None
        while self.files:
            f = self.files[-1]
            if f.index_count > 1 and f.end_timestamp <= checkpoint_ts and f.end_phy_offset < phys_end:
                break
            if f.index_count > 1:
                rebuild_from = f.begin_phy_offset if rebuild_from is None else min(rebuild_from, f.begin_phy_offset)
            log.warning("index: dropping %s, it may be incomplete after the crash", f.path.name)
            self.files.pop().destroy()
        return rebuild_from

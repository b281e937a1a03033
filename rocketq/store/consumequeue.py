"""ConsumeQueue: the per-(topic, queueId) index of a queue's messages in the CommitLog.

A consumer reads a queue by *logical* offset 0, 1, 2, ... Unit ``n`` of the queue is 20 bytes
at byte ``n * 20``: the record's CommitLog offset (i64), its size (i32) and its tag hash code
(i64; for SCHEDULE_TOPIC_XXXX the delivery time). Units live in fixed-size files (300 000 units)
under ``consumequeue/<topic>/<queueId>/``, named like CommitLog segments by their first byte's
logical byte offset. A pull turns an offset into a unit, filters by tag code without touching
the CommitLog, then slices the record out of the CommitLog.

The queue is *derived* data: everything in it can be rebuilt from the CommitLog, which is what
recovery does after a crash. The unit with size ``BLANK_UNIT_SIZE`` is a placeholder written
when a rebuild finds a hole; readers skip it. This module does not know the CommitLog; the
store passes in what it needs (the CommitLog's min and max offsets).
"""

from __future__ import annotations

import itertools
import logging
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from rocketq.store import mappedfile
from rocketq.store.mappedfile import MappedFile, StoreFileError

log = logging.getLogger(__name__)

UNIT = struct.Struct(">qiq")
UNIT_SIZE: Final = 20
BLANK_UNIT_SIZE: Final = 0x7FFFFFFF
"""RocketMQ's filler unit (offset 0, size Integer.MAX_VALUE, tag 0)."""
_BLANK_UNIT: Final = UNIT.pack(0, BLANK_UNIT_SIZE, 0)
RESERVE_WINDOW: Final = 64 * 1024
"""Blocks allocated ahead of a queue's writer (3 276 units). Small, because every queue has a
file being written and reserved blocks count as used: 8 000 queues reserve 512 MiB, not 32 GiB."""


def unit_file_size(configured: int) -> int:
    """File size rounded down to whole units."""
    return configured - configured % UNIT_SIZE


class ConsumeQueue:
    """One queue's units, in files of ``file_size`` bytes."""

    # slots: the C appends read ``files`` and ``topic`` at their slots (native/attributes.c)
    __slots__ = ("directory", "file_size", "files", "min_offset", "queue_id", "repaired", "topic")

    def __init__(self, directory: Path, topic: str, queue_id: int, file_size: int) -> None:
        self.directory = directory
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = unit_file_size(file_size)
        self.files: list[MappedFile] = []
        self.min_offset = 0
        """Smallest logical offset still readable."""
        self.repaired = False
        """Files were damaged at load: recovery must rebuild the queue's units from the CommitLog."""

    # --- lifecycle ----------------------------------------------------------------------------

    def load(self) -> None:
        """Map the queue's files. A short last file is extended (whole units kept); files that
        cannot be used are deleted: either way ``repaired`` asks recovery to rebuild the queue."""
        try:
            self.files = mappedfile.load_segments(self.directory, self.file_size, unit=UNIT_SIZE,
                                                  setting="mappedFileSizeConsumeQueue", reserve_window=RESERVE_WINDOW)
        except StoreFileError as exc:
            log.warning("consumequeue %s/%d: %s; deleting its files, it is rebuilt from the commitlog",
                        self.topic, self.queue_id, exc)
            self.destroy()
            self.repaired = True
            return
        if self.files:
            self.min_offset = self.files[0].start // UNIT_SIZE
            self.repaired = self.files[-1].repaired_from is not None

    def close(self) -> None:
        for f in self.files:
            f.close()

    def destroy(self) -> None:
        for f in self.files:
            f.close()
        self.files = []
        shutil.rmtree(self.directory, ignore_errors=True)

    # --- offsets ------------------------------------------------------------------------------

    @property
    def max_offset(self) -> int:
        """Logical offset of the next unit (the queue's message count since it began)."""
        if not self.files:
            return self.min_offset
        tail = self.files[-1]
        return (tail.start + tail.wrote) // UNIT_SIZE

    def _file_for(self, offset: int) -> tuple[MappedFile, int] | None:
        """File and byte position of logical ``offset``, if that file exists."""
        if not self.files:
            return None
        byte = offset * UNIT_SIZE
        index = (byte - self.files[0].start) // self.file_size
        if index < 0 or index >= len(self.files):
            return None
        f = self.files[index]
        return f, byte - f.start

    # --- writes -------------------------------------------------------------------------------

    def append(self, phys: int, size: int, tag_code: int) -> None:
        """Add the unit for the message at ``max_offset`` (the store's hot path)."""
        files = self.files
        tail = files[-1] if files else None
        if tail is None or tail.wrote >= tail.size:
            tail = self._new_file(tail.end if tail else self.min_offset * UNIT_SIZE)
        if tail.wrote + UNIT_SIZE > tail.reserved:
            tail.reserve(tail.wrote + UNIT_SIZE)  # a full disk raises here, before the map is touched
        self.write_unit(tail, phys, size, tag_code)

    @staticmethod
    def write_unit(tail: MappedFile, phys: int, size: int, tag_code: int) -> None:
        """Write a unit at the write position of ``tail`` (the last file), which has room for it
        and its blocks reserved (``append`` and ``inplace.append_in_place`` check that first)."""
        pos = tail.wrote
        UNIT.pack_into(tail.buf, pos, phys, size, tag_code)
        tail.wrote = pos + UNIT_SIZE

    def _new_file(self, byte_offset: int) -> MappedFile:
        start = byte_offset - byte_offset % self.file_size
        self.directory.mkdir(parents=True, exist_ok=True)
        f = MappedFile(self.directory / mappedfile.file_name(start), self.file_size, create=True,
                       reserve_window=RESERVE_WINDOW)
        try:
            f.reserve(byte_offset - start + UNIT_SIZE)
        except OSError:
            f.destroy()
            raise
        if byte_offset > start:
            # A queue that starts mid-file (rebuilt after its head was cleaned up): the units
            # before its first message are placeholders, never messages.
            f.buf[0:byte_offset - start] = _BLANK_UNIT * ((byte_offset - start) // UNIT_SIZE)
            f.wrote = byte_offset - start
        self.files.append(f)
        return f

    def put_at(self, offset: int, phys: int, size: int, tag_code: int) -> None:
        """Write the unit for ``offset`` during a rebuild: idempotent, fills holes with blanks."""
        end = self.max_offset
        if offset < end:
            found = self._file_for(offset)
            if found is None:
                return  # below the queue's first file: long cleaned up
            f, pos = found
            if UNIT.unpack_from(f.buf, pos) != (phys, size, tag_code):
                log.warning("consumequeue %s/%d: rewriting unit %d from the commitlog",
                            self.topic, self.queue_id, offset)
                UNIT.pack_into(f.buf, pos, phys, size, tag_code)
            return
        if not self.files:
            self.min_offset = offset
        elif offset > end:
            log.warning("consumequeue %s/%d: units %d..%d missing from the commitlog rebuild; "
                        "filling with blanks", self.topic, self.queue_id, end, offset - 1)
            for _ in range(offset - end):
                self.append(0, BLANK_UNIT_SIZE, 0)
        self.append(phys, size, tag_code)

    def rollback(self, offset: int) -> None:
        """Drop the units from ``offset`` on (a put that failed half-way): files created for
        them are deleted, and the bytes zeroed, so the next unit is written at ``offset``."""
        byte = offset * UNIT_SIZE
        while len(self.files) > 1 and self.files[-1].start >= byte:
            self.files.pop().destroy()
        if self.files:
            tail = self.files[-1]
            tail.truncate_tail(max(0, min(byte - tail.start, tail.wrote)))

    # --- reads --------------------------------------------------------------------------------

    def unit(self, offset: int) -> tuple[int, int, int] | None:
        """(commitlog offset, size, tag code) of ``offset``, or None if not readable."""
        if offset < self.min_offset or offset >= self.max_offset:
            return None
        found = self._file_for(offset)
        if found is None:
            return None
        f, pos = found
        phys, size, tag = UNIT.unpack_from(f.buf, pos)
        return phys, size, tag

    def units(self, offset: int, limit: int) -> Iterator[tuple[int, int, int]]:
        """Up to ``limit`` consecutive units from ``offset`` (which must be readable)."""
        # The units of each file are unpacked by one ``iter_unpack`` and chained in C: a pull
        # reads them one by one, and a generator in between would be resumed once per unit.
        return itertools.chain.from_iterable(map(UNIT.iter_unpack, self.unit_chunks(offset, limit)))

    def unit_chunks(self, offset: int, limit: int) -> Iterator[memoryview]:
        """``units`` as the raw bytes of one run per file (whole units), each sliced when the
        one before is used up."""
        end = min(self.max_offset, offset + limit)
        while offset < end:
            run = self.unit_run(offset, end)
            if run is None:
                return
            yield run
            if not run:
                return
            offset += len(run) // UNIT_SIZE

    def unit_run(self, offset: int, end: int) -> memoryview | None:
        """The raw units from ``offset`` (below ``end``) to ``end`` or the end of their file:
        ``unit_chunks``' first run, without a generator (a pull's read usually needs only it)."""
        found = self._file_for(offset)
        if found is None:
            return None
        f, pos = found
        return f.view[pos:min(f.wrote, pos + (end - offset) * UNIT_SIZE)]

    def last_phys_end(self) -> int:
        """CommitLog offset just past the newest message this queue points to (0 if none)."""
        offset = self.max_offset - 1
        while offset >= self.min_offset:
            unit = self.unit(offset)
            if unit is None:
                break
            phys, size, _tag = unit
            if size != BLANK_UNIT_SIZE:
                return phys + size
            offset -= 1
        return 0

    # --- recovery -----------------------------------------------------------------------------

    def recover(self) -> None:
        """Find the end of the written units (the first empty unit of the last file)."""
        if not self.files:
            return
        for f in self.files[:-1]:
            f.wrote = f.flushed = f.size
        tail = self.files[-1]
        end = 0
        for phys, size, _tag in UNIT.iter_unpack(tail.view):
            if size <= 0 or phys < 0:
                break
            end += UNIT_SIZE
        tail.truncate_tail(end)
        tail.wrote = tail.flushed = end

    def truncate_beyond(self, phys_end: int) -> None:
        """Drop units that point past ``phys_end`` (CommitLog bytes a crash did not keep)."""
        while self.files:
            tail = self.files[-1]
            while tail.wrote > 0:
                phys, size, _tag = UNIT.unpack_from(tail.buf, tail.wrote - UNIT_SIZE)
                if size == BLANK_UNIT_SIZE or phys + size <= phys_end:
                    return
                tail.wrote -= UNIT_SIZE
            tail.truncate_tail(tail.wrote)
            if tail.wrote > 0 or len(self.files) == 1:
                return
            self.files.pop().destroy()

    def correct_min_offset(self, commitlog_min: int) -> None:
        """Move ``min_offset`` past units whose messages were deleted from the CommitLog."""
        offset = self.min_offset
        end = self.max_offset
        for phys, size, _tag in self.units(offset, end - offset):
            if size != BLANK_UNIT_SIZE and phys >= commitlog_min:
                break
            offset += 1
        self.min_offset = offset

    # --- cleanup and flush --------------------------------------------------------------------

    def delete_below(self, commitlog_min: int) -> int:
        """Delete files whose every unit points below ``commitlog_min``; never the last file."""
        deleted = 0
        while len(self.files) > 1:
            head = self.files[0]
            phys, size, _tag = UNIT.unpack_from(head.buf, head.size - UNIT_SIZE)
            if size != BLANK_UNIT_SIZE and phys >= commitlog_min:
                break
            self.files.pop(0).destroy()
            deleted += 1
        if self.files:
            self.min_offset = max(self.min_offset, self.files[0].start // UNIT_SIZE)
        self.correct_min_offset(commitlog_min)
        return deleted

    def dirty_files(self, least_pages: int) -> list[MappedFile]:
        return [f for f in self.files if f.flushed < f.wrote and (
            least_pages <= 0 or f.dirty_pages() >= least_pages or f.wrote == f.size)]


def load_all(root: Path, file_size: int) -> list[ConsumeQueue]:
    """Every queue under ``consumequeue/``; a directory that is not <topic>/<int> is skipped."""
    queues: list[ConsumeQueue] = []
    if not root.is_dir():
        return queues
    for topic_dir in sorted(root.iterdir()):
        if not topic_dir.is_dir():
            log.warning("ignoring %s: not a topic directory", topic_dir)
            continue
        for queue_dir in sorted(topic_dir.iterdir()):
            if not queue_dir.is_dir() or not queue_dir.name.isdigit():
                log.warning("ignoring %s: not a consume queue directory", queue_dir)
                continue
            cq = ConsumeQueue(queue_dir, topic_dir.name, int(queue_dir.name), file_size)
            cq.load()
            queues.append(cq)
    return queues

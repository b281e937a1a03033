"""The CommitLog: every message of every topic, appended in arrival order to one log.

The log is a run of fixed-size segment files (``MappedFile``) named by the physical offset of
their first byte, so offset ``o`` lives in segment ``(o - first.start) // segment_size``.
Records are stored back to back, unaligned. When a record does not fit in what is left of a
segment (keeping room for the 8-byte END_OF_FILE marker), the segment is closed with a blank
record (TOTALSIZE = bytes left, MAGIC = BLANK_MAGIC) and the record goes to the start of a new
segment. A record therefore never straddles two files and a pull can return a single slice.

There is one writer: ``append`` is synchronous and the store calls it from the event loop, so
no two appends interleave. Each append reserves the bytes (``MappedFile.reserve``: a full disk
is an OSError here, never a SIGBUS in the copy), copies a pre-encoded record into the map and
stamps QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP in place. A put that fails half-way calls
``rollback``: the next append starts where the last successful one ended, and the bytes of the
failed one are gone from the file, so a restart cannot mistake them for records. Flushing (``flush_range``) and deciding
what a record means (ConsumeQueue, index) belong to other modules.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Final

from rocketq.protocol import storedrecords
from rocketq.protocol.messagetypes import MessageSysFlag
from rocketq.store import mappedfile
from rocketq.store.mappedfile import MappedFile

log = logging.getLogger(__name__)

END_FILE_MIN_BLANK_LENGTH: Final = 8
"""Room always kept at a segment's end for the END_OF_FILE marker (TOTALSIZE + MAGIC)."""
_BLANK = struct.Struct(">ii")
_HEAD = struct.Struct(">iii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_BODY_LEN_AFTER_HOSTS: Final = 8 + 4 + 8
"""After the born host come STORETIMESTAMP, then (after the store host) RECONSUMETIMES and
PREPARED_TX_OFFSET; BODYLEN follows."""
_POSITIONS = storedrecords.POSITIONS
_STORE_TS = storedrecords.STORE_TIMESTAMP
_QUEUE_OFFSET_POS: Final = storedrecords.QUEUE_OFFSET_POS


class ReplicaOffsetError(ValueError):
    """Replicated bytes do not start where this log ends: the slave must resynchronise."""


class CommitLog:
    """Segments of the log, the append path and positional reads."""

    def __init__(self, directory: Path, segment_size: int) -> None:
        self.directory = directory
        self.segment_size = segment_size
        self.segments: list[MappedFile] = []
        self.flushed_offset = 0
        """Physical offset up to which the log is known to be on disk."""
        self.last_store_timestamp = 0
        """STORETIMESTAMP of the newest appended record (the checkpoint's clock)."""
        self.flushed_store_timestamp = 0
        """STORETIMESTAMP of the newest record known to be on disk."""
        self.cuts = 0
        """How often the tail was cut (``rollback``): an fsync that began before a cut must not
        mark bytes written after it as flushed."""

    # --- lifecycle ----------------------------------------------------------------------------

    def load(self) -> None:
        """Map the existing segments; positions are set afterwards by recovery."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segments = mappedfile.load_segments(self.directory, self.segment_size,
                                                 setting="mappedFileSizeCommitLog")

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    # --- offsets ------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        return self.segments[0].start if self.segments else 0

    @property
    def max_offset(self) -> int:
        """Physical offset of the next append."""
        return self.segments[-1].write_offset if self.segments else 0

    def segment_for(self, offset: int) -> MappedFile | None:
        if not self.segments or offset < self.segments[0].start:
            return None
        index = (offset - self.segments[0].start) // self.segment_size
        return self.segments[index] if index < len(self.segments) else None

    def fits_in_segment(self, size: int) -> bool:
        return size + END_FILE_MIN_BLANK_LENGTH <= self.segment_size

    # --- append -------------------------------------------------------------------------------

    def append(self, record: bytes, queue_offset: int, store_timestamp: int, ts_pos: int) -> int:
        """Copy ``record`` to the end of the log, stamp its positions, return its offset.

        The caller checked ``fits_in_segment``. The record's QUEUEOFFSET, PHYSICALOFFSET and
        STORETIMESTAMP (at ``ts_pos``) are written into the map, not into ``record``.
        """
        size = len(record)
        segments = self.segments
        tail = segments[-1] if segments else None
        if tail is None or tail.size - tail.wrote < size + END_FILE_MIN_BLANK_LENGTH:
            tail = self._roll(tail)
        if tail.wrote + size > tail.reserved:
            tail.reserve(tail.wrote + size)
        return self.write_at(tail, record, queue_offset, store_timestamp, ts_pos)

    def write_at(self, tail: MappedFile, record: bytes, queue_offset: int, store_timestamp: int, ts_pos: int) -> int:
        """Copy and stamp ``record`` at the write position of ``tail`` (the last segment), which
        has room for it and its blocks reserved; return its offset. (``append`` and
        ``inplace.append_in_place`` check that first.)"""
        pos = tail.wrote
        size = len(record)
        phys = tail.start + pos
        buf = tail.buf
        buf[pos:pos + size] = record
        _POSITIONS.pack_into(buf, pos + _QUEUE_OFFSET_POS, queue_offset, phys)
        _STORE_TS.pack_into(buf, pos + ts_pos, store_timestamp)
        tail.wrote = pos + size
        self.last_store_timestamp = store_timestamp
        return phys

    def _roll(self, tail: MappedFile | None) -> MappedFile:
        """Close the current segment with the END_OF_FILE blank and start the next one."""
        if tail is None:
            start = self.flushed_offset  # an empty log after cleanup keeps its offsets going
        else:
            if tail.wrote < tail.size:
                tail.reserve(tail.wrote + END_FILE_MIN_BLANK_LENGTH)
                _BLANK.pack_into(tail.buf, tail.wrote, tail.size - tail.wrote, storedrecords.BLANK_MAGIC)
                tail.wrote = tail.size
            start = tail.end
        segment = MappedFile(self.directory / mappedfile.file_name(start), self.segment_size, create=True)
        # Without this a SYNC_FLUSH acknowledgement could name a file a power loss forgets.
        mappedfile.fsync_dir(self.directory)
        self.segments.append(segment)
        log.info("commitlog rolled to segment %s", segment.path.name)
        return segment

    # --- replication --------------------------------------------------------------------------

    def append_replicated(self, phys_offset: int, data: bytes | memoryview) -> None:
        """Write bytes a master sent at ``phys_offset``, which must be the end of this log.

        The bytes are the master's CommitLog as it is: records, possibly cut in the middle, and
        the END_OF_FILE blanks that close its segments, so this log's segments fill and roll at
        exactly the master's offsets. Nothing is stamped. An empty log starts at the offset it
        is given, which must begin a segment (a master streams an empty slave its newest
        segment from the start). Raises ReplicaOffsetError when the offset does not fit.
        """
        if not self.segments:
            if not data:
                return
            if phys_offset % self.segment_size:
                raise ReplicaOffsetError(f"an empty commitlog can start at a segment boundary only, "
                                         f"not at {phys_offset}")
            self.flushed_offset = phys_offset  # where _roll starts an empty log
            self._roll(None)
        elif phys_offset != self.max_offset:
            raise ReplicaOffsetError(f"replicated bytes at {phys_offset}, but this commitlog ends at {self.max_offset}")
        view = memoryview(data)
        while view:
            tail = self.segments[-1]
            if tail.wrote >= tail.size:
                tail = self._roll(tail)  # full: the master's blank came through, no blank to write
            pos = tail.wrote
            count = min(len(view), tail.size - pos)
            tail.reserve(pos + count)  # blocks first: a full disk is an OSError here, never a SIGBUS
            tail.buf[pos:pos + count] = view[:count]
            tail.wrote = pos + count
            view = view[count:]

    def read_replica(self, offset: int, max_bytes: int) -> memoryview | None:
        """Up to ``max_bytes`` written bytes from ``offset`` within its segment, for a slave.

        Never crosses a segment end (as RocketMQ's HA transfer); an empty view means nothing
        new yet, None that ``offset`` is not in this log (deleted or beyond the end).
        """
        segment = self.segment_for(offset)
        if segment is None:
            return memoryview(b"") if offset == self.max_offset else None
        pos = offset - segment.start
        if pos > segment.wrote or segment.closed:
            return None
        return segment.view[pos:min(segment.wrote, pos + max_bytes)]

    # --- reads --------------------------------------------------------------------------------

    def read(self, offset: int, size: int) -> memoryview | None:
        """The ``size`` bytes at ``offset`` if they were written, else None."""
        segment = self.segment_for(offset)
        if segment is None or size <= 0:
            return None
        pos = offset - segment.start
        if pos + size > segment.wrote or segment.closed:
            return None
        return segment.view[pos:pos + size]

    def read_record(self, offset: int) -> memoryview | None:
        """The whole record starting at ``offset``, if a well-formed one does."""
        segment = self.segment_for(offset)
        if segment is None or segment.closed:
            return None
        pos = offset - segment.start
        size = check_record(segment, pos, check_crc=False)
        if size == 0 or pos + size > segment.wrote:
            return None
        return segment.view[pos:pos + size]

    def store_timestamp_at(self, offset: int) -> int:
        """STORETIMESTAMP of the record at ``offset`` (-1 if there is none)."""
        view = self.read_record(offset)
        if view is None:
            return -1
        (sys_flag,) = _I32.unpack_from(view, storedrecords.SYS_FLAG_POS)
        (stamp,) = _I64.unpack_from(view, storedrecords.store_timestamp_pos(sys_flag))
        return int(stamp)

    # --- flush --------------------------------------------------------------------------------

    def unflushed_segments(self) -> list[MappedFile]:
        return [s for s in self.segments if s.flushed < s.wrote]

    def dirty_pages(self) -> int:
        return sum(s.dirty_pages() for s in self.segments if s.flushed < s.wrote)

    def unflushed_below(self, target: int) -> list[MappedFile]:
        """Segments holding bytes below ``target`` that are not known to be on disk."""
        out = []
        for segment in self.segments:
            if segment.start >= target:
                break
            if segment.flushed < min(segment.wrote, target - segment.start):
                out.append(segment)
        return out

    def mark_flushed(self, target: int, target_timestamp: int) -> None:
        """Record that everything below ``target`` is on disk (after ``flush_range``)."""
        for segment in self.segments:
            if segment.start >= target:
                break
            segment.flushed = max(segment.flushed, min(segment.size, target - segment.start))
        self.flushed_offset = max(self.flushed_offset, target)
        self.flushed_store_timestamp = max(self.flushed_store_timestamp, target_timestamp)

    # --- recovery and cleanup -----------------------------------------------------------------

    def set_end(self, offset: int) -> None:
        """Make ``offset`` the end of the log (recovery): truncate the segment there, delete
        later ones, and take everything below as on disk."""
        self._cut(offset, "beyond the recovered end")
        for segment in self.segments:
            segment.flushed = segment.wrote
        self.flushed_offset = offset

    def rollback(self, offset: int) -> None:
        """Forget what was appended from ``offset`` on (a put that failed half-way, or a
        Raft log's uncommitted tail). Bytes appended here later are not on disk yet."""
        self._cut(offset, "of a failed append")
        self.flushed_offset = min(self.flushed_offset, offset)
        self.cuts += 1

    def _cut(self, offset: int, why: str) -> None:
        keep: list[MappedFile] = []
        for segment in self.segments:
            if segment.start > offset or (segment.start == offset and keep):
                log.warning("commitlog: deleting segment %s %s at %d", segment.path.name, why, offset)
                segment.destroy()
                continue
            keep.append(segment)
            pos = min(offset - segment.start, segment.size)
            if pos < segment.size:
                segment.truncate_tail(pos)
            segment.wrote = pos
        self.segments = keep

    def remove_head(self, count: int) -> list[MappedFile]:
        """Detach the ``count`` oldest segments (never the last) and return them for deletion."""
        count = min(count, len(self.segments) - 1)
        if count <= 0:
            return []
        removed, self.segments = self.segments[:count], self.segments[count:]
        return removed


def check_record(segment: MappedFile, pos: int, *, check_crc: bool) -> int:
    """TOTALSIZE of a well-formed record at ``pos`` of ``segment``, or 0.

    A structural walk without building objects, so recovery of a full segment stays fast.
    """
    view = segment.view
    room = segment.size - pos
    if room < storedrecords.MIN_RECORD_SIZE:
        return 0
    total, magic, crc = _HEAD.unpack_from(view, pos)
    if (magic not in (storedrecords.MAGIC_V1, storedrecords.MAGIC_V2)
            or not storedrecords.MIN_RECORD_SIZE <= total <= room):
        return 0
    (phys,) = _I64.unpack_from(view, pos + storedrecords.PHYSICAL_OFFSET_POS)
    if phys != segment.start + pos:
        return 0  # a stale record left from before an earlier truncation
    (sys_flag,) = _I32.unpack_from(view, pos + storedrecords.SYS_FLAG_POS)
    at = (storedrecords.store_timestamp_pos(sys_flag) + storedrecords.host_size(sys_flag, MessageSysFlag.STOREHOST_V6)
          + _BODY_LEN_AFTER_HOSTS)
    end = pos + total
    (body_len,) = _I32.unpack_from(view, pos + at)
    body_at = pos + at + 4
    if body_len < 0 or body_at + body_len + 3 > end:
        return 0
    at = body_at + body_len
    if magic == storedrecords.MAGIC_V1:
        topic_len = view[at] if view[at] < 0x80 else -1  # TOPICLEN is a signed byte
        at += 1
    else:
        (topic_len,) = _I16.unpack_from(view, at)
        at += 2
    if topic_len <= 0 or at + topic_len + 2 > end:
        return 0
    at += topic_len
    (props_len,) = _I16.unpack_from(view, at)
    if props_len < 0 or at + 2 + props_len != end:
        return 0
    if check_crc and storedrecords.body_crc(view[body_at:body_at + body_len]) != crc:
        return 0
    return int(total)

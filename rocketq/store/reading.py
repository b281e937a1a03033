"""The read path: a pull's records, as slices of the CommitLog found through a ConsumeQueue.

``get_messages`` answers RocketMQ's ``DefaultMessageStore.getMessage``: where the requested
offset stands against the queue's bounds (a GetStatus and the offset to pull next), or up to
``max_nums`` records from it. Each record is a memoryview into the CommitLog's map, never a
copy: the broker writes the views to the socket as they are.

Filtering happens in two stages, as in RocketMQ: ``tag_filter`` sees each ConsumeQueue unit's
tag hash code (cheap, no CommitLog read), ``record_filter`` each remaining record (a SQL92
selector reads its properties). A pull inspects at most ``MAX_FILTER_SCAN_UNITS`` units, so a
consumer whose filter matches nothing still gets an answer (and an offset to move to) quickly.

The common pull (no filter, its offset readable, its records in one ConsumeQueue file and one
CommitLog segment) is read by one C call, ``_native.read_plain`` (native/unitruns.c: the
queue's bounds as ``ConsumeQueue``'s properties compute them, its units, the first record's
segment as ``CommitLog.segment_for`` finds it, and the walk over the units). It declines
anything else before counting anything, and the status checks and the general loop
``_read_queue`` read it as without the extension: that loop is the reference
(tests/store/test_reading_plain.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

from rocketq.protocol import nativecodecs
from rocketq.store import consumequeue
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import BLANK_UNIT_SIZE, ConsumeQueue
from rocketq.store.results import GetResult, GetStatus, new_get_result
from rocketq.store.stats import StoreStats

DEFAULT_MAX_TRANSFER_BYTES: Final = 256 * 1024
"""A pull returns at most this many bytes (RocketMQ's maxTransferBytesOnMessageInMemory), but
always at least one message."""
MAX_FILTER_SCAN_UNITS: Final = 800
"""Units a pull inspects at most when filtering by tag (16 000 bytes of ConsumeQueue)."""
ACCESS_MESSAGE_IN_MEMORY_MAX_RATIO: Final = 40
"""Percent of RAM: a consumer further behind than this is told to pull from a slave."""

TagFilter = Callable[[int], bool]
RecordFilter = Callable[[memoryview], bool]


def get_messages(commitlog: CommitLog, cq: ConsumeQueue | None, offset: int, max_nums: int, max_bytes: int,
                 tag_filter: TagFilter | None, record_filter: RecordFilter | None, stats: StoreStats) -> GetResult:
    """Records of a queue (``None``: a queue the store does not have) from ``offset``."""
    if cq is None:
        stats.get_message_times_miss += 1
        return new_get_result(GetStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0, [], [], [], 0, False)
    if _read_plain_native is not None and tag_filter is None and record_filter is None:
        read = _read_plain_native(cq, commitlog, offset, max_nums, max_bytes, MAX_FILTER_SCAN_UNITS)
        if read is not None:  # found, in one file and segment; else nothing was counted
            buffers, queue_offsets, tag_codes, next_offset, total, behind, min_offset, max_offset = read
            stats.get_message_times_found += 1
            stats.get_message_transferred += len(buffers)
            return new_get_result(_FOUND, next_offset, min_offset, max_offset, buffers, queue_offsets, tag_codes,
                                  total, behind > _MEMORY_FOR_PULLS)
    min_offset, max_offset = cq.min_offset, cq.max_offset
    status: GetStatus
    if max_offset == 0:
        status, next_offset = GetStatus.NO_MESSAGE_IN_QUEUE, 0
    elif offset < min_offset:
        status, next_offset = GetStatus.OFFSET_TOO_SMALL, min_offset
    elif offset == max_offset:
        status, next_offset = GetStatus.OFFSET_OVERFLOW_ONE, offset
    elif offset > max_offset:
        status, next_offset = GetStatus.OFFSET_OVERFLOW_BADLY, max_offset
    else:
        return _read_queue(commitlog, cq, offset, max(1, max_nums), max_bytes, tag_filter, record_filter, stats)
    stats.get_message_times_miss += 1
    return new_get_result(status, next_offset, min_offset, max_offset, [], [], [], 0, False)


def _read_queue(commitlog: CommitLog, cq: ConsumeQueue, offset: int, max_nums: int, max_bytes: int,
                tag_filter: TagFilter | None, record_filter: RecordFilter | None, stats: StoreStats) -> GetResult:
    min_phys = commitlog.min_offset
    status = GetStatus.NO_MATCHED_MESSAGE
    buffers: list[memoryview] = []
    queue_offsets: list[int] = []
    tag_codes: list[int] = []
    total = scanned = found = 0
    last_phys = commitlog.max_offset
    # The records of one pull almost always lie in one CommitLog segment: slice its view here
    # and ask the log only when a record is outside it (``CommitLog.read``'s checks, inlined:
    # this loop runs once per message of every pull).
    add_buffer, add_offset, add_tag = buffers.append, queue_offsets.append, tag_codes.append
    seg_view: memoryview | None = None
    seg_start = seg_end = 0
    # Without filters, the units whose records lie in the segment last used are walked in C
    # (``_native.read_units``: the same appends and counts as this loop); it hands back the
    # first unit it does not take, which this loop takes as always.
    walk = _native.read_units if _native is not None and tag_filter is None and record_filter is None else None
    full = False
    for chunk in cq.unit_chunks(offset, max(MAX_FILTER_SCAN_UNITS, max_nums)):
        pos, end = 0, len(chunk)
        while pos < end:
            if walk is not None and seg_view is not None:
                pos, scanned, found, total, last_phys, full = walk(
                    chunk, pos, seg_view, seg_start, seg_end, offset, scanned, found, total, last_phys, max_nums,
                    max_bytes, buffers, queue_offsets, tag_codes)
                if full or pos >= end:
                    break
            phys, size, tag = consumequeue.UNIT.unpack_from(chunk, pos)
            pos += consumequeue.UNIT_SIZE
            if found and (found >= max_nums or total + size > max_bytes):
                full = True
                break
            scanned += 1
            if size == BLANK_UNIT_SIZE:
                continue
            if tag_filter is not None and not tag_filter(tag):
                continue
            if seg_view is not None and seg_start <= phys and phys + size <= seg_end and size > 0:
                view: memoryview | None = seg_view[phys - seg_start:phys - seg_start + size]
            else:
                view = commitlog.read(phys, size) if phys >= min_phys else None
                segment = commitlog.segment_for(phys) if view is not None else None
                if segment is not None and not segment.closed:
                    seg_view, seg_start, seg_end = segment.view, segment.start, segment.start + segment.wrote
            if view is None:
                if not found:
                    status = GetStatus.MESSAGE_WAS_REMOVING
                continue
            if record_filter is not None and not record_filter(view):
                continue
            add_buffer(view)
            add_offset(offset + scanned - 1)
            add_tag(tag)
            found += 1
            total += size
            last_phys = phys
        if full:
            break
    if found:
        status = GetStatus.FOUND
    if scanned == 0:
        status = GetStatus.OFFSET_FOUND_NULL
        scanned = _units_to_next_file(cq, offset)
    if buffers:
        stats.get_message_times_found += 1
        stats.get_message_transferred += len(buffers)
    else:
        stats.get_message_times_miss += 1
    behind = commitlog.max_offset - last_phys
    return new_get_result(status, offset + scanned, cq.min_offset, cq.max_offset, buffers, queue_offsets,
                          tag_codes, total, behind > _MEMORY_FOR_PULLS)


def _units_to_next_file(cq: ConsumeQueue, offset: int) -> int:
    per_file = cq.file_size // consumequeue.UNIT_SIZE
    return per_file - offset % per_file


_native = nativecodecs.native
_read_plain_native = _native.read_plain if _native is not None else None
_FOUND: Final = GetStatus.FOUND


def _memory_for_pulls() -> int:
    """Bytes of RAM a consumer may lag behind before being sent to a slave."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 8 << 30
    return total * ACCESS_MESSAGE_IN_MEMORY_MAX_RATIO // 100


_MEMORY_FOR_PULLS: Final = _memory_for_pulls()

"""Recovery: after a restart, find where the CommitLog really ends and make the queues agree.

Run once by ``MessageStore.open`` before anything is written:

1. Every ConsumeQueue finds its end (the first empty unit of its last file).
2. The CommitLog is walked record by record from a starting segment and every record checked:
   magic, TOTALSIZE within the segment, field lengths adding up to TOTALSIZE, its own
   PHYSICALOFFSET, and (checkCRCOnRecover, on by default, after a crash and after a clean stop
   alike, as RocketMQ does) its BODYCRC. After a clean shutdown the walk covers the
   last ``NORMAL_RECOVERY_SEGMENTS`` segments. After a crash (the ``abort`` file was left
   behind) it starts at the newest segment whose first record is older than the checkpoint's
   oldest timestamp minus ``CHECKPOINT_MARGIN_MS``. The first record that fails is the torn
   tail: the log is cut there (the rest of that segment zeroed, later segments deleted).
3. ConsumeQueue units pointing past the new end are dropped, and so are IndexFiles that may be
   incomplete (written after the checkpoint, or covering lost bytes).
4. Records from the dispatch point to the end are dispatched again: missing units and index
   entries are written, units that disagree with the CommitLog are rewritten, and units that
   are already right are left alone, so running recovery twice changes nothing.

Queue offset counters need no separate rebuild: a queue's next offset is its unit count.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from rocketq.protocol import messageerrors, messageproperties, messagetypes, storedrecords
from rocketq.store import commitlog as commitlog_mod
from rocketq.store import dispatch
from rocketq.store.checkpoint import CheckpointValues
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import ConsumeQueue
from rocketq.store.index import IndexService
from rocketq.store.mappedfile import MappedFile

log = logging.getLogger(__name__)

NORMAL_RECOVERY_SEGMENTS: Final = 3
CHECKPOINT_MARGIN_MS: Final = 3000
"""RocketMQ also starts 3 s before the checkpoint: store times of adjacent records can disagree."""
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    abnormal: bool
    validated_from: int
    dispatched_from: int
    end_offset: int
    torn_tail: bool
    records_checked: int
    records_dispatched: int


def recover(
    commitlog: CommitLog,
    queues: Iterable[ConsumeQueue],
    queue_for: Callable[[str, int], ConsumeQueue],
    index: IndexService | None,
    checkpoint: CheckpointValues,
    delay_levels_ms: tuple[int, ...],
    *,
    abnormal: bool,
    check_crc: bool = True,
) -> RecoveryReport:
    queues = list(queues)
    for cq in queues:
        cq.recover()
    segments = commitlog.segments
    if abnormal:
        validate_from = _checkpoint_segment(segments, checkpoint, with_index=index is not None)
    elif segments:
        validate_from = segments[max(0, len(segments) - NORMAL_RECOVERY_SEGMENTS)].start
    else:
        validate_from = 0
    end, checked, last_timestamp = _walk(commitlog, validate_from, check_crc=check_crc)
    torn = _has_bytes_after(commitlog, end)
    if torn:
        log.warning("commitlog: torn or corrupt tail after offset %d, cutting it off", end)
    commitlog.set_end(end)
    for cq in queues:
        cq.truncate_beyond(end)
    dispatch_from = _dispatch_point(commitlog, queues, index, checkpoint, validate_from, end, abnormal)
    dispatched = redispatch(commitlog, dispatch_from, end, queue_for, index, delay_levels_ms)
    commitlog.last_store_timestamp = commitlog.flushed_store_timestamp = last_timestamp
    return RecoveryReport(abnormal, validate_from, dispatch_from, end, torn, checked, dispatched)


def _checkpoint_segment(segments: list[MappedFile], values: CheckpointValues, *, with_index: bool) -> int:
    """Start of the newest segment whose first record predates the checkpoint (minus margin)."""
    if not segments:
        return 0
    limit = values.min_timestamp(with_index=with_index) - CHECKPOINT_MARGIN_MS
    if limit > 0:
        for segment in reversed(segments):
            if commitlog_mod.check_record(segment, 0, check_crc=False) and _store_timestamp(segment, 0) <= limit:
                return segment.start
    return segments[0].start


def _store_timestamp(segment: MappedFile, pos: int) -> int:
    (sys_flag,) = _I32.unpack_from(segment.view, pos + storedrecords.SYS_FLAG_POS)
    (stamp,) = _I64.unpack_from(segment.view, pos + storedrecords.store_timestamp_pos(sys_flag))
    return int(stamp)


def _walk(commitlog: CommitLog, start: int, *, check_crc: bool) -> tuple[int, int, int]:
    """Walk valid records from ``start``; returns (end offset, records checked, last store time)."""
    segments = commitlog.segments
    segment = commitlog.segment_for(start)
    if segment is None:
        return start, 0, 0
    index = segments.index(segment)
    pos = start - segment.start
    checked = last_timestamp = 0
    while True:
        segment = segments[index]
        while True:
            if _is_blank_end(segment, pos):
                break
            total = commitlog_mod.check_record(segment, pos, check_crc=check_crc)
            if total == 0:
                if check_crc and commitlog_mod.check_record(segment, pos, check_crc=False):
                    log.warning("commitlog: body CRC mismatch at offset %d: the log ends there",
                                segment.start + pos)
                return segment.start + pos, checked, last_timestamp
            last_timestamp = _store_timestamp(segment, pos)
            checked += 1
            pos += total
        if index + 1 == len(segments):
            return segment.end, checked, last_timestamp
        index += 1
        pos = 0


def _is_blank_end(segment: MappedFile, pos: int) -> bool:
    if segment.size - pos < 8:
        return segment.size == pos
    total, magic = struct.unpack_from(">ii", segment.view, pos)
    return bool(magic == storedrecords.BLANK_MAGIC and total == segment.size - pos)


def _has_bytes_after(commitlog: CommitLog, end: int) -> bool:
    segment = commitlog.segment_for(end)
    if segment is None:
        return False
    if commitlog.segments[-1] is not segment:
        return True
    pos = end - segment.start
    return any(segment.view[pos:pos + 64])


def _dispatch_point(commitlog: CommitLog, queues: list[ConsumeQueue], index: IndexService | None,
                    checkpoint: CheckpointValues, validate_from: int, end: int, abnormal: bool) -> int:
    """Offset from which records are dispatched again."""
    point = validate_from if abnormal else max((cq.last_phys_end() for cq in queues), default=0)
    for cq in queues:
        if cq.repaired:  # its units after its own last one must come from the log again
            point = min(point, cq.last_phys_end())
    if index is not None and index.rebuild_from is not None:
        point = min(point, index.rebuild_from)
    if index is not None:
        reliable_until = checkpoint.index_msg_timestamp if abnormal else 1 << 62
        rebuild = index.drop_unreliable(checkpoint_ts=reliable_until, phys_end=end)
        if rebuild is not None:
            point = min(point, rebuild)
    return max(point, commitlog.min_offset)


def redispatch(commitlog: CommitLog, start: int, end: int, queue_for: Callable[[str, int], ConsumeQueue],
                index: IndexService | None, delay_levels_ms: tuple[int, ...]) -> int:
    index_floor = index.end_phy_offset if index is not None else -1
    count = 0
    for phys, size, record in _records(commitlog, start, end):
        dispatch_stored(record, phys, size, queue_for, index if phys > index_floor else None, delay_levels_ms)
        count += 1
    if index is not None:
        index.commit()
    if count:
        log.info("recovery re-dispatched %d records from offset %d", count, start)
    return count


def dispatch_stored(record: messagetypes.MessageExt, phys: int, size: int,
                    queue_for: Callable[[str, int], ConsumeQueue], index: IndexService | None,
                    delay_levels_ms: tuple[int, ...]) -> ConsumeQueue | None:
    """Write a decoded record's ConsumeQueue unit (at the queue offset it carries) and index
    entries; returns the queue it went to, if any. Recovery and a slave's replicated appends
    both dispatch this way, since neither encoded the record itself."""
    props = record.properties
    cq = None
    if dispatch.builds_queue_unit(record.sys_flag):
        code = dispatch.tag_code(record.topic, props.get(messageproperties.TAGS), props.get(messageproperties.DELAY),
                                 record.store_timestamp, delay_levels_ms)
        cq = queue_for(record.topic, record.queue_id)
        cq.put_at(record.queue_offset, phys, size, code)
    if index is not None:
        index.add(record.topic, props.get(messageproperties.UNIQ_KEY), props.get(messageproperties.KEYS), phys,
                  record.store_timestamp)
    return cq


def _records(commitlog: CommitLog, start: int, end: int) -> Iterator[tuple[int, int, messagetypes.MessageExt]]:
    """Decoded records in [start, end), crossing END_OF_FILE blanks."""
    offset = start
    while offset < end:
        segment = commitlog.segment_for(offset)
        if segment is None:
            return
        pos = offset - segment.start
        if _is_blank_end(segment, pos):
            offset = segment.end
            continue
        try:
            record = storedrecords.decode_stored_record(segment.view, pos, decompress=False)
        except messageerrors.MessageFormatError as exc:
            # Only records before the validated range can get here (they are trusted, as in
            # RocketMQ); a corrupt one ends the rebuild instead of the store.
            log.error("recovery: cannot re-dispatch the record at %d: %s", offset, exc)
            return
        yield offset, record.store_size, record
        offset += record.store_size

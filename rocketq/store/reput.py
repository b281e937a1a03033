"""Reput: dispatching records this store did not encode itself (a slave's replicated bytes).

On a master, ``MessageStore`` dispatches each record as it appends it: it knows the record's
topic, queue and keys. A slave's CommitLog grows by raw byte ranges a master streams to it
(``CommitLog.append_replicated``), and a range may end in the middle of a record. ``Reput``
follows behind the writer: from ``offset`` (the first byte not yet dispatched) it takes each
record that has arrived whole, checks it, decodes it and dispatches it exactly as recovery does
(``recovery.dispatch_stored``: the ConsumeQueue unit goes at the queue offset the record
carries, so the slave's queues match the master's), steps over END_OF_FILE blanks, and stops
at the first incomplete record until more bytes come. RocketMQ's ReputMessageService plays the
same part on every broker; here only replicated appends need it.

A record that cannot be what a master wrote (bad magic, sizes that do not add up, a
PHYSICALOFFSET other than where it lies) raises ``ReplicaRecordError``: the stream is wrong,
and the caller cuts the log back to ``offset`` and asks the master again.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable

from rocketq.protocol import messageerrors, storedrecords
from rocketq.store import commitlog as commitlog_mod
from rocketq.store import recovery
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import ConsumeQueue
from rocketq.store.index import IndexService

log = logging.getLogger(__name__)

_HEAD = struct.Struct(">ii")


class ReplicaRecordError(ValueError):
    """Replicated bytes hold something that is not a record where a record must start."""

    def __init__(self, offset: int, why: str) -> None:
        super().__init__(f"replicated commitlog bytes at {offset}: {why}")
        self.offset = offset


class Reput:
    """Dispatches the complete records between ``offset`` and the end of the log."""

    def __init__(self, commitlog: CommitLog, queue_for: Callable[[str, int], ConsumeQueue],
                 index: IndexService | None, delay_levels_ms: tuple[int, ...]) -> None:
        self._commitlog = commitlog
        self._queue_for = queue_for
        self._index = index
        self._delay_levels = delay_levels_ms
        self.offset = commitlog.max_offset
        """First byte not yet dispatched; recovery dispatched everything before the end."""

    def run(self, limit: int = -1) -> list[ConsumeQueue]:
        """Dispatch every record that has arrived whole and ends at or below ``limit`` (-1: no
        limit; a DLedger store passes its committed position); returns the queues that grew."""
        touched: dict[int, ConsumeQueue] = {}
        commitlog = self._commitlog
        try:
            while True:
                size = self._complete_record(self.offset)
                if size is None or 0 <= limit < self.offset + abs(size):
                    break
                if size < 0:  # an END_OF_FILE blank: the next record starts the next segment
                    self.offset -= size
                    continue
                segment = commitlog.segment_for(self.offset)
                assert segment is not None
                try:
                    record = storedrecords.decode_stored_record(segment.view, self.offset - segment.start,
                                                          decompress=False)
                except messageerrors.MessageFormatError as exc:
                    raise ReplicaRecordError(self.offset, str(exc)) from None
                cq = recovery.dispatch_stored(record, self.offset, size, self._queue_for, self._index,
                                              self._delay_levels)
                if cq is not None:
                    touched[id(cq)] = cq
                commitlog.last_store_timestamp = record.store_timestamp
                self.offset += size
        finally:
            if self._index is not None:
                self._index.commit()
        return list(touched.values())

    def _complete_record(self, offset: int) -> int | None:
        """Size of the whole record at ``offset``, minus the bytes of a blank to step over, or
        None while it has not fully arrived."""
        segment = self._commitlog.segment_for(offset)
        if segment is None:
            return None
        pos = offset - segment.start
        written = segment.wrote - pos
        if written < _HEAD.size:
            return None
        total, magic = _HEAD.unpack_from(segment.view, pos)
        if magic == storedrecords.BLANK_MAGIC:
            if total != segment.size - pos:
                raise ReplicaRecordError(offset, f"a blank of {total} bytes does not end the segment (is "
                                                 "mappedFileSizeCommitLog the same as the master's?)")
            return -total if written >= total else None
        if magic not in (storedrecords.MAGIC_V1, storedrecords.MAGIC_V2):
            raise ReplicaRecordError(offset, f"magic {magic & 0xFFFFFFFF:#x} is not a record's")
        if not storedrecords.MIN_RECORD_SIZE <= total <= segment.size - pos:
            raise ReplicaRecordError(offset, f"TOTALSIZE {total} does not fit the segment")
        if total > written:
            return None
        if commitlog_mod.check_record(segment, pos, check_crc=False) != total:
            raise ReplicaRecordError(offset, "not a well-formed record at its own PHYSICALOFFSET")
        return int(total)

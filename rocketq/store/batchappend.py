"""The append of a whole batch when nothing has to be rolled or reserved: one call for all of it.

A SEND_BATCH_MESSAGE puts its messages back to back into one queue. When the CommitLog's last
segment has room for every record (keeping the END_OF_FILE blank) with its blocks already
allocated, and the queue's last file has room for every unit likewise, the batch's append is
only stores into two maps: per record its bytes, QUEUEOFFSET, PHYSICALOFFSET and
STORETIMESTAMP, and its 20-byte unit; then the counters move once. ``append_batch_in_place``
does exactly that, or nothing at all and returns None when any precondition fails (no segment
or queue file yet, a roll due, blocks to reserve): the caller then takes the general path
(``MessageStore._append_prepared``), which rolls, reserves and can fail with ENOSPC.

The records, offsets and units are those the general path would write, in the same order:
records are consecutive in the log and their units consecutive in the queue. Index entries
are not written here (the caller adds them after, as the general path adds them per record).

The C twin writes the records with one ``pwrite`` of the segment's file rather than by stores
into its map (the map shares the page cache, so the bytes are the same): that spares a write
fault per fresh page, about half the cost of a 1 KiB record's copy. Its only new failure is an
I/O error from ``pwrite`` (the blocks are allocated already, so not ENOSPC): OSError, with no
counter moved and no unit written; the store answers it as a failed append.

This Python function is the reference; ``native/batchappend.c`` is its C twin (the same checks,
bytes, counters and result), used unless ``ROCKETQ_NATIVE=0``
(``rocketq.protocol.nativecodecs``). tests/store/test_batch_append.py compares the two and the
whole store against the general path.
"""

from __future__ import annotations

from collections.abc import Sequence

from rocketq.protocol import nativecodecs
from rocketq.store.commitlog import END_FILE_MIN_BLANK_LENGTH, CommitLog
from rocketq.store.consumequeue import UNIT_SIZE, ConsumeQueue
from rocketq.store.putting import PreparedMessage

BatchPlacement = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[str, ...]]
"""What a placed batch gives for its PutResult: CommitLog offsets, record sizes, queue offsets
(0 without a queue) and offset message ids (``msg_id_prefix`` + the offset as 16 hex digits)."""


@nativecodecs.accelerated
def append_batch_in_place(commitlog: CommitLog, queue: ConsumeQueue | None, prepared: Sequence[PreparedMessage],
                          store_timestamp: int, ts_pos: int, msg_id_prefix: str) -> BatchPlacement | None:
    """Append every record of ``prepared`` (and its unit in ``queue``, unless None, tagged with
    the message's tag code) if all of them fit where they are; None, having changed nothing,
    otherwise. Every record has its STORETIMESTAMP at ``ts_pos`` (one sender's batch)."""
    segments = commitlog.segments
    if not segments or not prepared:
        return None
    tail = segments[-1]
    total = sum(len(p[0]) for p in prepared)
    pos = tail.wrote
    if tail.size - pos < total + END_FILE_MIN_BLANK_LENGTH or pos + total > tail.reserved:
        return None
    unit_file = None
    if queue is not None:
        files = queue.files
        if not files:
            return None
        unit_file = files[-1]
        unit_end = unit_file.wrote + len(prepared) * UNIT_SIZE
        if unit_end > unit_file.size or unit_end > unit_file.reserved:
            return None
    offsets = []
    queue_offsets = []
    for p in prepared:
        record = p[0]
        queue_offset = (unit_file.start + unit_file.wrote) // UNIT_SIZE if unit_file is not None else 0
        phys = commitlog.write_at(tail, record, queue_offset, store_timestamp, ts_pos)
        if unit_file is not None:
            ConsumeQueue.write_unit(unit_file, phys, len(record), p[4])
        offsets.append(phys)
        queue_offsets.append(queue_offset)
    return (tuple(offsets), tuple(len(p[0]) for p in prepared), tuple(queue_offsets),
            tuple(f"{msg_id_prefix}{phys:016X}" for phys in offsets))

"""The append of one record when nothing has to be rolled or reserved: one call, no branches out.

Almost every single-message put finds the CommitLog's last segment with room for the record
and its blocks already allocated (``MappedFile.reserve`` works a window ahead), and the
queue's last file likewise for one unit. Then the whole append is four stores into two maps:
the record's bytes, its QUEUEOFFSET and PHYSICALOFFSET, its STORETIMESTAMP, and the
ConsumeQueue unit; and three counters moved. ``append_in_place`` does exactly that, or
nothing at all and returns None when any precondition fails (no segment or queue file yet, a
roll due, blocks to reserve): the caller then takes the general path (``CommitLog.append``,
``ConsumeQueue.append``), which rolls, reserves and can fail with ENOSPC.

Nothing here can fail half-way: every condition is checked before the first byte is written.

This Python function is the reference; ``native/inplace.c`` is its C twin (the same checks,
the same bytes, the same counters), used unless ``ROCKETQ_NATIVE=0``
(``rocketq.protocol.nativecodecs``). tests/store/test_append_paths.py compares the two.
"""

from __future__ import annotations

from rocketq.protocol import nativecodecs
from rocketq.store.commitlog import END_FILE_MIN_BLANK_LENGTH, CommitLog
from rocketq.store.consumequeue import UNIT_SIZE, ConsumeQueue


@nativecodecs.accelerated
def append_in_place(commitlog: CommitLog, queue: ConsumeQueue | None, record: bytes, store_timestamp: int,
                    ts_pos: int, tag_code: int) -> tuple[int, int] | None:
    """Append ``record`` (and its unit in ``queue``, unless None) if both fit where they are.

    Returns (CommitLog offset, queue offset; 0 without a queue), or None having changed nothing.
    """
    segments = commitlog.segments
    if not segments:
        return None
    tail = segments[-1]
    size = len(record)
    pos = tail.wrote
    if tail.size - pos < size + END_FILE_MIN_BLANK_LENGTH or pos + size > tail.reserved:
        return None
    queue_offset = 0
    if queue is not None:
        files = queue.files
        if not files:
            return None
        unit_file = files[-1]
        unit_pos = unit_file.wrote
        if unit_pos >= unit_file.size or unit_pos + UNIT_SIZE > unit_file.reserved:
            return None
        queue_offset = (unit_file.start + unit_pos) // UNIT_SIZE
    phys = commitlog.write_at(tail, record, queue_offset, store_timestamp, ts_pos)
    if queue is not None:
        queue.write_unit(unit_file, phys, size, tag_code)
    return phys, queue_offset

"""The append of a group of one-message puts in one call: records, units, index entries, results.

The broker's commonest store work is a read of single sends (one message per put), or a lone
send. Each such put goes to the CommitLog, its queue's ConsumeQueue and, for a message with
keys, the IndexFile, and gets its own ``PutResult``. When the CommitLog's last segment, the
queue's last file and the last index file all have room with their blocks already allocated
(as they almost always have: ``MappedFile.reserve`` works a window ahead), a put is only
stores into three maps. ``append_singles`` does that for the puts of a group from ``start``
on, one after another, and stops at the first one that needs anything else: a segment roll,
a queue or index file to create or blocks to allocate, a delayed message (its unit's tag is a
delivery time), a transaction half (no unit), anything unusual. The caller (``MessageStore``)
appends that one by the existing path (``_append_one``: it rolls, reserves, can fail with
ENOSPC and rolls back) and calls again for the rest, so the puts keep their order in the log
and each keeps its own result and failure.

Every check of a put comes before its first byte is written, so nothing here can fail
half-way; the bytes, counters and results are those the existing path gives.

This Python function is the reference; ``native/groupappend.c`` is its C twin (the same
checks, bytes, counters and results; it also declines keys with a lone surrogate, which the C
index code leaves to Python),
used unless ``ROCKETQ_NATIVE=0`` (``rocketq.protocol.nativecodecs``).
tests/store/test_group_append.py compares both with the existing path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rocketq.protocol import nativecodecs
from rocketq.store import inplace
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import ConsumeQueue
from rocketq.store.index import IndexService
from rocketq.store.putting import PreparedMessage
from rocketq.store.results import PutResult, PutStatus, new_put_result

_in_place = nativecodecs.pure(inplace.append_in_place)
MAX_INDEX_KEYS: Final = 32
"""A message with more index entries goes the existing way (native/indexput.c's limit)."""


@nativecodecs.accelerated_with(new_put_result, PutStatus.PUT_OK)
def append_singles(commitlog: CommitLog, index: IndexService | None, prepared: Sequence[PreparedMessage],
                   start: int, store_timestamp: int, msg_id_prefix: str, results: list[PutResult],
                   touched: dict[int, ConsumeQueue]) -> int:
    """Append ``prepared[start:]`` (each message a put of its own) while each fits in place;
    each one's result goes to ``results`` and its queue to ``touched`` (by ``id``). Returns the
    position of the first put not appended (``len(prepared)`` when all were)."""
    at = start
    for record, ts_pos, cq, unit, tag, uniq, keys, delay in prepared[start:]:
        if not unit or delay is not None:
            break
        indexed = index if index is not None and (uniq or keys) else None
        if indexed is not None:
            entries = indexed.entry_count(uniq, keys)
            if entries > MAX_INDEX_KEYS or not indexed.has_room(entries):
                break
        placed = _in_place(commitlog, cq, record, store_timestamp, ts_pos, tag)
        if placed is None:
            break
        phys, queue_offset = placed
        if indexed is not None:
            indexed.add(cq.topic, uniq, keys, phys, store_timestamp)
        touched[id(cq)] = cq
        results.append(new_put_result(PutStatus.PUT_OK, store_timestamp, (phys,), (len(record),), (queue_offset,),
                                      (f"{msg_id_prefix}{phys:016X}",), "", 0))
        at += 1
    return at

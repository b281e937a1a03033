"""The pull read path against a unit-by-unit reference, across CommitLog segment ends.

``reading._read_queue`` slices the records of a pull out of the CommitLog segment it last
used and asks the log only at a segment change; the reference below asks the log for every
unit, as the code did before. Both must give the same GetResult for any offset, count, byte
limit and tag filter."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from store_helpers import StoreFactory, request

from rocketq.protocol import javahash
from rocketq.store import reading
from rocketq.store.consumequeue import BLANK_UNIT_SIZE, UNIT, UNIT_SIZE
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import GetResult, GetStatus


def reference(store: MessageStore, queue_id: int, offset: int, max_nums: int, max_bytes: int,
              tag_filter: reading.TagFilter | None) -> tuple[object, ...]:
    """What a pull answers, read one unit at a time through ``CommitLog.read``."""
    commitlog, cq = store.commitlog, store.queues.find("T", queue_id)
    assert cq is not None
    if not cq.min_offset <= offset < cq.max_offset:
        return ("outside",)
    status, views, offsets, tags, total, scanned = GetStatus.NO_MATCHED_MESSAGE, [], [], [], 0, 0
    for phys, size, tag in cq.units(offset, max(reading.MAX_FILTER_SCAN_UNITS, max_nums)):
        if views and (len(views) >= max_nums or total + size > max_bytes):
            break
        scanned += 1
        if size == BLANK_UNIT_SIZE or (tag_filter is not None and not tag_filter(tag)):
            continue
        view = commitlog.read(phys, size) if phys >= commitlog.min_offset else None
        if view is None:
            if not views:
                status = GetStatus.MESSAGE_WAS_REMOVING
            continue
        views.append(bytes(view))
        offsets.append(offset + scanned - 1)
        tags.append(tag)
        total += size
        status = GetStatus.FOUND
    return status, offset + scanned, views, offsets, tags, total


def answered(result: GetResult) -> tuple[object, ...]:
    return (result.status, result.next_begin_offset, [bytes(v) for v in result.buffers], result.queue_offsets,
            result.tag_codes, result.buffer_total_size)


async def test_pulls_match_the_unit_by_unit_reference(make_store: StoreFactory) -> None:
    store = await make_store()  # 64 KiB CommitLog segments: the records below span several
    rnd = random.Random(7)
    for i in range(160):
        body = bytes([i % 251]) * rnd.randrange(1, 3000)
        result = await store.put(request(queue_id=i % 2, body=body, properties={"TAGS": "ab"[i % 3 % 2]}))
        assert result.ok
    assert len(store.commitlog.segments) > 3
    wanted = javahash.tag_hash("a")
    filters = [None, lambda code: code == wanted]
    for _ in range(400):
        queue_id, offset = rnd.randrange(2), rnd.randrange(80)
        max_nums, max_bytes = rnd.choice([1, 3, 32, 100]), rnd.choice([1, 2_000, 9_000, 256 * 1024])
        tag_filter = rnd.choice(filters)
        got = store.get_messages("T", queue_id, offset, max_nums, max_bytes=max_bytes, tag_filter=tag_filter)
        assert answered(got) == reference(store, queue_id, offset, max_nums, max_bytes, tag_filter)


def walk_reference(chunk: bytes, pos: int, seg_view: memoryview, seg_start: int, seg_end: int, first: int,
                   scanned: int, found: int, total: int, last_phys: int, max_nums: int, max_bytes: int,
                   lists: tuple[list[Any], list[Any], list[Any]]) -> tuple[object, ...]:
    """``_read_queue``'s loop without filters, for units inside one segment; stops where the
    native walk hands a unit back."""
    while pos <= len(chunk) - UNIT_SIZE:
        phys, size, tag = UNIT.unpack_from(chunk, pos)
        if found and (found >= max_nums or total + size > max_bytes):
            return pos, scanned, found, total, last_phys, True
        if size == BLANK_UNIT_SIZE:
            scanned, pos = scanned + 1, pos + UNIT_SIZE
            continue
        if not (seg_start <= phys and phys + size <= seg_end and size > 0):
            break
        lists[0].append(seg_view[phys - seg_start:phys - seg_start + size])
        lists[1].append(first + scanned)
        lists[2].append(tag)
        scanned, found, total, last_phys, pos = scanned + 1, found + 1, total + size, phys, pos + UNIT_SIZE
    return pos, scanned, found, total, last_phys, False


_units = st.lists(st.tuples(st.integers(-5, 140), st.sampled_from([BLANK_UNIT_SIZE, 0, -3, 1, 7, 30, 2**31 - 2]),
                            st.integers(-2**63, 2**63 - 1)), max_size=40)


@pytest.mark.skipif(reading._native is None, reason="the native codecs are not built")
@given(_units, st.integers(0, 100), st.integers(0, 60), st.integers(0, 3), st.integers(0, 3), st.integers(0, 50),
       st.integers(1, 40), st.integers(1, 200), st.integers(0, 5))
def test_native_unit_walk_matches_the_loop(units: list[tuple[int, int, int]], seg_start: int, seg_len: int,
                                           scanned: int, found: int, total: int, max_nums: int, max_bytes: int,
                                           tail: int) -> None:
    chunk = b"".join(UNIT.pack(*u) for u in units) + b"\x01" * tail  # a partial unit is never read
    seg_view = memoryview(bytes(range(256)) * 2)[:seg_len]
    native_lists: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
    pure_lists: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
    args = (seg_view, seg_start, seg_start + seg_len, 1000, scanned, found, total, -1, max_nums, max_bytes)
    got = reading._native.read_units(chunk, 0, *args, *native_lists)
    assert got == walk_reference(chunk, 0, *args, pure_lists)
    assert [bytes(v) for v in native_lists[0]] == [bytes(v) for v in pure_lists[0]]
    assert native_lists[1:] == pure_lists[1:]
    if got[0] < len(chunk) - tail:  # the walk resumes where it stopped, as _read_queue calls it
        again = reading._native.read_units(chunk, got[0], *args, *native_lists)
        assert again == walk_reference(chunk, got[0], *args, pure_lists)

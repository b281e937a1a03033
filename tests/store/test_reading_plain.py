"""The common pull's read (``_native.read_plain``: no filter, one C call from the queue's bounds
to the records) against the general loop (``reading._read_queue``) and the store's pure code.

Where the one call answers, the GetResult and the statistics counted must be the general
loop's; where it declines (an offset out of bounds, a blank or removed first unit, a pull
crossing into another ConsumeQueue file or CommitLog segment, a filter) it must count nothing,
and the store's answer is the loop's. The store has 64 KiB segments and 50-unit ConsumeQueue
files, so pulls cross both."""

from __future__ import annotations

import random
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import StoreFactory, request

from rocketq.store import reading
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import GetResult
from rocketq.store.stats import StoreStats

pytestmark = pytest.mark.skipif(reading._native is None, reason="the plain read is the native walk's")


def answered(result: GetResult) -> tuple[object, ...]:
    values = [getattr(result, f.name) for f in fields(result)]
    return tuple([bytes(v) for v in value] if isinstance(value, list) and value and isinstance(value[0], memoryview)
                 else value for value in values)


def counted(stats: StoreStats) -> tuple[int, int, int]:
    return stats.get_message_times_found, stats.get_message_times_miss, stats.get_message_transferred


async def _filled(make_store: StoreFactory, seed: int) -> MessageStore:
    store = await make_store()
    rnd = random.Random(seed)
    for i in range(220):
        body = bytes([i % 251]) * rnd.randrange(1, 2500)
        assert (await store.put(request(queue_id=i % 2, body=body))).ok
    assert len(store.commitlog.segments) > 3 and len(store.queues.find("T", 0).files) > 1  # type: ignore[union-attr]
    return store


_pulls = st.tuples(st.integers(0, 1), st.integers(0, 115), st.sampled_from([1, 2, 3, 32, 100, 1024]),
                   st.sampled_from([1, 1500, 2_600, 9_000, 256 * 1024]))


async def test_plain_read_matches_the_loop(make_store: StoreFactory) -> None:
    store = await _filled(make_store, 11)
    answers = []

    @settings(max_examples=300, deadline=None)
    @given(_pulls)
    def check(pull: tuple[int, int, int, int]) -> None:
        queue_id, offset, max_nums, max_bytes = pull
        cq = store.queues.find("T", queue_id)
        assert cq is not None
        if not cq.min_offset <= offset < cq.max_offset:
            return
        plain_stats, loop_stats = StoreStats(), StoreStats()
        if reading._read_plain_native(cq, store.commitlog, offset, max_nums, max_bytes,  # type: ignore[misc]
                                      reading.MAX_FILTER_SCAN_UNITS) is not None:
            answers.append(pull)
        plain = reading.get_messages(store.commitlog, cq, offset, max_nums, max_bytes, None, None, plain_stats)
        loop = reading._read_queue(store.commitlog, cq, offset, max_nums, max_bytes, None, None, loop_stats)
        assert answered(plain) == answered(loop)
        assert counted(plain_stats) == counted(loop_stats)
        got = store.get_messages("T", queue_id, offset, max_nums, max_bytes=max_bytes)
        assert answered(got) == answered(loop)

    check()
    assert answers  # the plain read did answer some


_FILE_ENDS = st.sampled_from([0, 48, 49, 50, 98, 99, 100, 108, 109, 110, 111])
"""Offsets at the queue's 50-unit file ends and its own (110 messages a queue)."""
_any_pulls = st.tuples(st.integers(0, 1), st.one_of(_FILE_ENDS, st.integers(-3, 125)),
                       st.sampled_from([-1, 0, 1, 2, 3, 32, 100, 1024]),
                       st.sampled_from([0, 1, 1500, 2_600, 9_000, 256 * 1024]), st.sampled_from([None, None, 0, 1]))


async def test_the_one_call_read_answers_as_the_pure_read(make_store: StoreFactory,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``get_messages`` with ``_native.read_plain`` (and the walk) against the store's pure code:
    any offset (before, in and past the queue), batch and byte limits (a record over the limit
    still goes alone), with and without a tag filter (which the one call never takes); pulls
    cross 50-unit ConsumeQueue files and 64 KiB segments. Where the one call answers, it counts
    what the pure read counts; where it declines, nothing."""
    store = await _filled(make_store, 5)
    taken = []

    def pure(queue_id: int, offset: int, max_nums: int, max_bytes: int, tag: int | None) -> tuple[object, ...]:
        with monkeypatch.context() as patched:
            patched.setattr(reading, "_native", None)
            patched.setattr(reading, "_read_plain_native", None)
            stats = StoreStats()
            got = reading.get_messages(store.commitlog, store.queues.find("T", queue_id), offset, max_nums, max_bytes,
                                       None if tag is None else (lambda code: code % 2 == tag), None, stats)
            return answered(got), counted(stats)

    @settings(max_examples=400, deadline=None)
    @given(_any_pulls)
    def check(pull: tuple[int, int, int, int, int | None]) -> None:
        queue_id, offset, max_nums, max_bytes, tag = pull
        cq = store.queues.find("T", queue_id)
        assert cq is not None
        one_call = StoreStats()
        read = reading._read_plain_native(cq, store.commitlog, offset, max_nums, max_bytes,  # type: ignore[misc]
                                          reading.MAX_FILTER_SCAN_UNITS)
        if read is not None:
            taken.append(pull)
        stats = StoreStats()
        got = reading.get_messages(store.commitlog, cq, offset, max_nums, max_bytes,
                                   None if tag is None else (lambda code: code % 2 == tag), None, stats)
        assert (answered(got), counted(stats)) == pure(queue_id, offset, max_nums, max_bytes, tag)
        assert counted(one_call) == (0, 0, 0)

    check()
    assert taken  # the one call did answer some


async def test_the_one_call_read_declines_file_ends(make_store: StoreFactory) -> None:
    store = await _filled(make_store, 3)
    cq = store.queues.find("T", 0)
    assert cq is not None
    per_file = cq.file_size // 20
    read = reading._read_plain_native
    assert read is not None
    # from the last unit of a ConsumeQueue file, for more: the loop reads on in the next file
    assert read(cq, store.commitlog, per_file - 1, 32, 256 * 1024, reading.MAX_FILTER_SCAN_UNITS) is None
    # ... and for one (the loop looks at the next file's first unit to see the pull is full); one
    # unit before, it answers; at or past the end, or before the start, it declines
    assert read(cq, store.commitlog, per_file - 1, 1, 256 * 1024, reading.MAX_FILTER_SCAN_UNITS) is None
    assert read(cq, store.commitlog, per_file - 2, 1, 256 * 1024, reading.MAX_FILTER_SCAN_UNITS) is not None
    assert read(cq, store.commitlog, cq.max_offset, 1, 256 * 1024, reading.MAX_FILTER_SCAN_UNITS) is None
    assert read(cq, store.commitlog, -1, 1, 256 * 1024, reading.MAX_FILTER_SCAN_UNITS) is None
    # a record in a segment that was closed: the general read's (CommitLog.read decides)
    buffers, *_rest = read(cq, store.commitlog, 0, 1, 256 * 1024, reading.MAX_FILTER_SCAN_UNITS)
    segment = store.commitlog.segment_for(int.from_bytes(cq.files[0].view[0:8], "big"))
    assert segment is not None and len(buffers) == 1
    segment.closed = True
    try:
        assert read(cq, store.commitlog, 0, 1, 256 * 1024, reading.MAX_FILTER_SCAN_UNITS) is None
    finally:
        segment.closed = False

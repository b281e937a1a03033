"""The common pull's read (``reading._read_plain``: no filter, one C walk from the first unit)
against the general loop (``reading._read_queue``).

Where the plain read answers, its GetResult and the statistics it counts must be the general
loop's; where it declines (a blank or removed first unit, a pull crossing into another
ConsumeQueue file or CommitLog segment) it must count nothing, and the store's answer is the
loop's. The store has 64 KiB segments and 50-unit ConsumeQueue files, so pulls cross both."""

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
        plain = reading._read_plain(store.commitlog, cq, offset, cq.max_offset, max_nums, max_bytes, plain_stats)
        loop = reading._read_queue(store.commitlog, cq, offset, max_nums, max_bytes, None, None, loop_stats)
        if plain is None:
            assert counted(plain_stats) == (0, 0, 0)
        else:
            answers.append(pull)
            assert answered(plain) == answered(loop)
            assert counted(plain_stats) == counted(loop_stats)
        got = store.get_messages("T", queue_id, offset, max_nums, max_bytes=max_bytes)
        assert answered(got) == answered(loop)

    check()
    assert answers  # the plain read did answer some


async def test_the_plain_read_declines_what_it_does_not_take(make_store: StoreFactory) -> None:
    store = await _filled(make_store, 3)
    cq = store.queues.find("T", 0)
    assert cq is not None
    per_file = cq.file_size // 20
    # a pull from the last unit of a ConsumeQueue file, for more: the loop reads on in the next file
    assert reading._read_plain(store.commitlog, cq, per_file - 1, cq.max_offset, 32, 256 * 1024, StoreStats()) is None
    # within one file and segment it answers
    assert reading._read_plain(store.commitlog, cq, 0, cq.max_offset, 1, 256 * 1024, StoreStats()) is not None

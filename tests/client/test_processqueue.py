"""ProcessQueue accounting: counts, sizes, span, and the commit point."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import processqueue
from rocketq.client.processqueue import ProcessQueue
from rocketq.protocol import storedrecords
from rocketq.protocol.messagetypes import MessageExt


def ext(offset: int, body: bytes = b"xx") -> MessageExt:
    record = storedrecords.encode_stored_record(topic="T", queue_id=0, body=body, queue_offset=offset)
    return storedrecords.decode_stored_record(record)


def test_commit_point_is_the_smallest_offset_left_or_max_plus_one() -> None:
    pq = ProcessQueue()
    msgs = [ext(o) for o in (10, 11, 12, 13)]
    assert pq.put(msgs) == 4 and pq.msg_count == 4 and pq.msg_size == 8 and pq.max_span() == 3
    assert pq.remove([msgs[1], msgs[2]]) == 10
    assert pq.remove([msgs[0]]) == 13
    assert pq.remove([msgs[3]]) == 14
    assert pq.msg_count == 0 and pq.msg_size == 0 and pq.max_span() == 0
    assert pq.remove([msgs[3]]) == -1


def test_duplicates_are_ignored_and_sizes_follow_bodies() -> None:
    pq = ProcessQueue()
    assert pq.put([ext(5, b"a" * 100)]) == 1
    assert pq.put([ext(5, b"a" * 100), ext(6, b"b")]) == 1
    assert pq.msg_count == 2 and pq.msg_size == 101 and 5 in pq and 7 not in pq
    assert pq.remove([ext(99)]) == 5


def test_size_in_mib_and_clear() -> None:
    pq = ProcessQueue()
    pq.put([ext(i, b"z" * 600_000) for i in range(4)])
    assert pq.msg_size_mib == 2
    pq.clear()
    assert pq.msg_count == 0 and pq.msg_size_mib == 0


@given(st.lists(st.integers(0, 200), min_size=1, max_size=40, unique=True), st.randoms(use_true_random=False))
def test_commit_point_never_passes_an_unconsumed_message(offsets: list[int], rnd) -> None:
    pq = ProcessQueue()
    msgs = [ext(o) for o in offsets]
    pq.put(msgs)
    rnd.shuffle(msgs)
    remaining = set(offsets)
    for m in msgs:
        remaining.discard(m.queue_offset)
        point = pq.remove([m])
        assert point == (min(remaining) if remaining else max(offsets) + 1)


_OFFSETS = st.lists(st.integers(0, 60), max_size=8)
_RUNS = st.builds(lambda start, n: list(range(start, start + n)), st.integers(0, 60), st.integers(1, 8))
"""Ascending runs as a pull answers them (the put's fast path), beside arbitrary lists."""


def _body(offset: int) -> bytes:
    return b"x" * (offset % 7)


@given(st.lists(st.tuples(st.booleans(), st.one_of(_OFFSETS, _OFFSETS.map(sorted), _RUNS)), max_size=30))
def test_cache_agrees_with_a_sorted_model_under_any_puts_and_removes(steps: list[tuple[bool, list[int]]]) -> None:
    """Puts in or out of order, runs, duplicates, removes of cached or unknown offsets: the
    count, size, span, oldest-first order and commit point are those of a plain sorted model."""
    pq, model, top = ProcessQueue(), set[int](), -1
    for is_put, offsets in steps:
        msgs = [ext(o, _body(o)) for o in offsets]
        if is_put:
            assert pq.put(msgs) == len(set(offsets) - model)
            model |= set(offsets)
            top = max([top, *offsets])
        else:
            had = bool(model)
            model -= set(offsets)
            expected = (min(model) if model else top + 1) if had else -1
            assert pq.remove(msgs) == expected
        ordered = sorted(model)
        assert pq.msg_count == len(model) and pq.msg_size == sum(len(_body(o)) for o in model)
        assert pq.max_span() == (ordered[-1] - ordered[0] if ordered else 0)
        assert [m.queue_offset for m in pq.first(5)] == ordered[:5]


class _Other:
    """A message of another class: the C loops read its fields by getattr."""

    def __init__(self, queue_offset: object, body: object) -> None:
        self.queue_offset, self.body = queue_offset, body


def _message(kind: int, offset: int, size: int) -> object:
    """0: a decoded MessageExt, 1: another class, 2: a body without len()."""
    if kind == 0:
        return ext(offset, b"m" * size)
    if kind == 1:
        return _Other(offset, b"o" * size)
    return _Other(offset, None)  # no len(): both loops raise TypeError, at the same message


_native = processqueue._native


@pytest.mark.skipif(_native is None, reason="the native codecs are not built")
@given(st.lists(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 40), st.integers(0, 70)), max_size=12),
                max_size=8),
       st.lists(st.lists(st.integers(0, 45), max_size=10), max_size=8), st.integers(-1, 20))
def test_native_put_and_remove_loops_match_the_pure_ones(puts: list[list[tuple[int, int, int]]],
                                                         removes: list[list[int]], top: int) -> None:
    native_cache: dict[int, object] = {}
    pure_cache: dict[int, object] = {}
    for batch, offsets in itertools.zip_longest(puts, removes, fillvalue=[]):
        messages = [_message(0 if kind < 4 else 1 if kind < 6 else 2, offset, size) for kind, offset, size in batch]
        assert (_outcome(_native.cache_put, native_cache, messages, top)
                == _outcome(processqueue._put_each, pure_cache, messages, top))
        assert list(native_cache.items()) == list(pure_cache.items())
        gone = [ext(o) if o % 2 else _Other(o, b"") for o in offsets]
        assert _outcome(_native.cache_remove, native_cache, gone) == _outcome(processqueue._remove_each, pure_cache,
                                                                             gone)
        assert list(native_cache.items()) == list(pure_cache.items())


def _outcome(loop: Any, *args: Any) -> object:
    """What a loop returns, or the type of what it raises (a body without len())."""
    try:
        return loop(*args)
    except TypeError as exc:
        return type(exc)


@pytest.mark.skipif(_native is None, reason="the native codecs are not built")
def test_native_loops_raise_what_the_pure_ones_raise() -> None:
    class NoOffset:
        body = b"x"

    for loop, args in ((_native.cache_put, (-1,)), (processqueue._put_each, (-1,)),
                       (_native.cache_remove, ()), (processqueue._remove_each, ())):
        with pytest.raises(AttributeError):
            loop({1: ext(1)}, [NoOffset()], *args)
    unset = MessageExt.__new__(MessageExt)  # the learned class with its slots left empty
    with pytest.raises(AttributeError):
        _native.cache_put({}, [unset], -1)


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 3 * processqueue.MIB)), max_size=20),
       st.integers(0, 25), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 600)))
def test_within_is_the_three_flow_control_checks(cached: list[tuple[int, int]], count: int, size_mib: int,
                                                  span: int | None) -> None:
    """The pull loop's one call agrees with the checks it stands for (the limits' edges included)."""
    pq = ProcessQueue()
    pq.put([ext(offset, b"x" * size) for offset, size in cached])
    over = (pq.msg_count > count or pq.msg_size_mib > size_mib
            or (span is not None and pq.max_span() > span))
    assert pq.within(count, size_mib, span) is not over

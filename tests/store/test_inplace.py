"""``inplace.append_in_place``: the C twin writes what the pure reference writes, or declines alike.

Two identical stores' CommitLog and ConsumeQueue files are put in the same random states (write
positions, reserved marks, records of any size near a segment's end) and given the same
appends, one store through the C routine and one through the Python reference: every return
value, every counter and every byte of every map must agree, and an append that does not fit
(None) must change nothing at all.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import appends_seen, log_and_queue, map_states, maps_snapshot

from rocketq.protocol import nativecodecs
from rocketq.store import inplace
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import UNIT_SIZE, ConsumeQueue
from rocketq.store.mappedfile import MappedFile, file_name

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

SEGMENT = 4096
QUEUE_FILE = 20 * UNIT_SIZE
_RECORD_TS_POS = 56  # where an IPv4 record's STORETIMESTAMP lies (any position inside works)

_state = map_states(SEGMENT, QUEUE_FILE)
_append = st.tuples(st.binary(min_size=64, max_size=1200), st.integers(0, 2**63 - 1), st.booleans(),
                    st.integers(-2**63, 2**63 - 1))


def _store(root: Path, state: dict[str, int]) -> tuple[CommitLog, ConsumeQueue]:
    return log_and_queue(root, state, SEGMENT, QUEUE_FILE)


_snapshot = maps_snapshot


def _run(append: Callable[..., Any], root: Path, state: dict[str, int],
         appends: list[tuple[bytes, int, bool, int]]) -> list[Any]:
    log, queue = _store(root, state)
    return appends_seen(log, queue, (functools.partial(append, log, queue if with_unit else None, record, stamp,
                                                       _RECORD_TS_POS, tag)
                                     for record, stamp, with_unit, tag in appends))


@needs_native
@settings(max_examples=150, deadline=None)
@given(state=_state, appends=st.lists(_append, min_size=1, max_size=6))
def test_native_append_writes_what_the_pure_one_writes(state: dict[str, int],
                                                        appends: list[tuple[bytes, int, bool, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        native = _run(inplace.append_in_place, Path(tmp) / "native", state, appends)
        pure = _run(nativecodecs.pure(inplace.append_in_place), Path(tmp) / "pure", state, appends)
    assert native == pure


@needs_native
def test_unusual_input_goes_to_the_pure_function(tmp_path: Path) -> None:
    """A stamp outside the record is not the C routine's to judge: the pure code decides."""
    state = {"log_wrote": 0, "log_reserved": SEGMENT, "log_start": 0, "unit_wrote": 0,
             "unit_reserved": QUEUE_FILE, "unit_start": 0}
    appends = [(b"r" * 100, 5, True, 1)]
    native_log, native_queue = _store(tmp_path / "native", state)
    pure_log, pure_queue = _store(tmp_path / "pure", state)
    try:
        for log, queue, append in ((native_log, native_queue, inplace.append_in_place),
                                   (pure_log, pure_queue, nativecodecs.pure(inplace.append_in_place))):
            for record, stamp, _unit, tag in appends:
                assert append(log, queue, record, stamp, len(record), tag) == (0, 0)  # the stamp lands past it
        assert _snapshot(native_log, native_queue) == _snapshot(pure_log, pure_queue)
    finally:
        for closing in (native_log, native_queue, pure_log, pure_queue):
            closing.close()


def test_declines_without_files(tmp_path: Path) -> None:
    """No segment or no queue file yet: None, the general path creates them."""
    log = CommitLog(tmp_path / "commitlog", SEGMENT)
    queue = ConsumeQueue(tmp_path / "cq", "T", 0, QUEUE_FILE)
    assert inplace.append_in_place(log, None, b"r" * 100, 1, _RECORD_TS_POS, 0) is None
    log.directory.mkdir(parents=True)
    log.segments.append(MappedFile(log.directory / file_name(0), SEGMENT, create=True))
    log.segments[0].reserved = SEGMENT
    try:
        assert inplace.append_in_place(log, queue, b"r" * 100, 1, _RECORD_TS_POS, 0) is None
        assert log.max_offset == 0
        assert inplace.append_in_place(log, None, b"r" * 100, 1, _RECORD_TS_POS, 0) == (0, 0)
        assert log.max_offset == 100 and log.last_store_timestamp == 1
    finally:
        log.close()

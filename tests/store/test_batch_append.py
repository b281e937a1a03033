"""``batchappend.append_batch_in_place`` and the store's batch path (``MessageStore._append_batch``).

Two checks, both byte for byte:

* the C twin against the pure reference: two identical CommitLog and ConsumeQueue file sets in
  the same random states (write positions, reserved marks, batches near a segment's end) given
  the same batches must agree in every return value, counter and byte of every map, and a
  batch that does not fit (None) must change nothing;
* the whole store: batches (``BatchPutRequest``, as the broker's SEND_BATCH_MESSAGE gives them)
  stored through the batch path, native and pure, leave the same CommitLog, ConsumeQueue and
  IndexFile files and give the same results as the general path (``_append_prepared``),
  across segment rolls, transaction halves (no unit), SCHEDULE_TOPIC_XXXX and index keys.
"""

from __future__ import annotations

import functools
import itertools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from store_helpers import (
    STORE_HOST,
    appends_seen,
    log_and_queue,
    map_states,
    put_properties,
    put_summary,
    running_store,
    small_settings,
    store_files,
)

from rocketq.protocol import javahash, messageproperties, nativecodecs
from rocketq.protocol.codes import SCHEDULE_TOPIC
from rocketq.protocol.messagetypes import MessageSysFlag
from rocketq.store import batchappend, messagestore
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import UNIT_SIZE, ConsumeQueue
from rocketq.store.messagestore import MessageStore, PutResult
from rocketq.store.results import BatchMessage, BatchPutRequest

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

SEGMENT = 4096
QUEUE_FILE = 20 * UNIT_SIZE
_RECORD_TS_POS = 56  # where an IPv4 record's STORETIMESTAMP lies (any position inside works)
_PREFIX = "7F00000100002A9F"
_CLOCK_S = 1_700_000_000.0

_state = map_states(SEGMENT, QUEUE_FILE)
_batch = st.tuples(st.lists(st.tuples(st.binary(min_size=64, max_size=900), st.integers(-2**63, 2**63 - 1)),
                            min_size=0, max_size=6),
                   st.integers(0, 2**63 - 1), st.booleans())


def _files_at(root: Path, state: dict[str, int]) -> tuple[CommitLog, ConsumeQueue]:
    return log_and_queue(root, state, SEGMENT, QUEUE_FILE)


def _prepared(records: list[tuple[bytes, int]], queue: ConsumeQueue) -> list[Any]:
    return [(record, _RECORD_TS_POS, queue, True, tag, None, None, None) for record, tag in records]


def _run(append: Callable[..., Any], root: Path, state: dict[str, int],
         batches: list[tuple[list[tuple[bytes, int]], int, bool]]) -> list[Any]:
    log, queue = _files_at(root, state)
    return appends_seen(log, queue, (functools.partial(append, log, queue if with_units else None,
                                                       _prepared(records, queue), stamp, _RECORD_TS_POS, _PREFIX)
                                     for records, stamp, with_units in batches))


@needs_native
@settings(max_examples=150, deadline=None)
@given(state=_state, batches=st.lists(_batch, min_size=1, max_size=4))
@example(state={"log_wrote": 8, "log_reserved": 1200, "log_start": 0, "unit_wrote": 20, "unit_reserved": 100,
                "unit_start": 0},
         batches=[([(b"r" * 300, 1), (b"s" * 400, -2)], 5, True), ([(b"t" * 64, 3)], 6, False)])
def test_native_batch_append_writes_what_the_pure_one_writes(
        state: dict[str, int], batches: list[tuple[list[tuple[bytes, int]], int, bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        native = _run(batchappend.append_batch_in_place, Path(tmp) / "native", state, batches)
        pure = _run(nativecodecs.pure(batchappend.append_batch_in_place), Path(tmp) / "pure", state, batches)
    assert native == pure


def test_a_batch_that_fits_is_placed_back_to_back(tmp_path: Path) -> None:
    state = {"log_wrote": 100, "log_reserved": SEGMENT, "log_start": SEGMENT, "unit_wrote": 2 * UNIT_SIZE,
             "unit_reserved": QUEUE_FILE, "unit_start": 0}
    log, queue = _files_at(tmp_path, state)
    try:
        placed = batchappend.append_batch_in_place(
            log, queue, _prepared([(b"a" * 100, 5), (b"b" * 200, 6)], queue), 9, _RECORD_TS_POS, _PREFIX)
        assert placed == ((SEGMENT + 100, SEGMENT + 200), (100, 200), (2, 3),
                          (f"{_PREFIX}{SEGMENT + 100:016X}", f"{_PREFIX}{SEGMENT + 200:016X}"))
        assert log.segments[0].wrote == 400 and queue.files[0].wrote == 4 * UNIT_SIZE
        assert log.last_store_timestamp == 9
        assert queue.max_offset == 4
    finally:
        log.close()
        queue.close()


def test_declines_what_needs_a_roll_or_reservation(tmp_path: Path) -> None:
    """Not room for the whole batch in the segment or queue file: None, nothing written."""
    state = {"log_wrote": SEGMENT - 300, "log_reserved": SEGMENT, "log_start": 0, "unit_wrote": QUEUE_FILE - 20,
             "unit_reserved": QUEUE_FILE, "unit_start": 0}
    log, queue = _files_at(tmp_path, state)
    try:
        two = _prepared([(b"a" * 100, 0), (b"b" * 100, 0)], queue)
        assert batchappend.append_batch_in_place(log, queue, two, 1, _RECORD_TS_POS, _PREFIX) is None  # 2 units
        assert batchappend.append_batch_in_place(log, None, two, 1, _RECORD_TS_POS, _PREFIX) is not None
        three = _prepared([(b"c" * 100, 0)] * 3, queue)  # 300 bytes leave no END_OF_FILE blank
        assert batchappend.append_batch_in_place(log, None, three, 1, _RECORD_TS_POS, _PREFIX) is None
        assert batchappend.append_batch_in_place(log, None, [], 1, _RECORD_TS_POS, _PREFIX) is None
    finally:
        log.close()
        queue.close()


# --- the whole store ------------------------------------------------------------------------

_batches = st.lists(
    st.tuples(
        st.sampled_from(["T", "U", SCHEDULE_TOPIC]),
        st.integers(0, 2),
        st.sampled_from([0, MessageSysFlag.TRANSACTION_PREPARED_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE]),
        st.lists(st.tuples(st.integers(1, 9000), st.sampled_from([None, "k1", "k1 k2", " k3 "]),
                           st.sampled_from([None, "UNIQ1", "UNIQ2"]), st.sampled_from(["", "1", "3"])),
                 min_size=1, max_size=5),
    ),
    min_size=1, max_size=10)

BatchSpec = tuple[str, int, int, list[tuple[int, str | None, str | None, str]]]


def _batch_request(topic: str, queue_id: int, sys_flag: int,
                   messages: list[tuple[int, str | None, str | None, str]]) -> BatchPutRequest:
    out: list[BatchMessage] = []
    for size, keys, uniq, delay in messages:
        props = put_properties(topic, keys, uniq, delay, SCHEDULE_TOPIC)
        out.append((b"b" * size, 0, messageproperties.encode_properties(props), javahash.tag_hash("t"), uniq, keys))
    return BatchPutRequest(topic, queue_id, sys_flag, 7, ("10.0.0.9", 4321), 0, out)


async def _store_all(root: Path, puts: list[BatchPutRequest], *, general: bool) -> list[PutResult]:
    store = MessageStore(small_settings(root), STORE_HOST, clock=lambda: _CLOCK_S, fsync=lambda fd: None)
    if general:  # every batch through the per-record path
        store._append_batch = store._append_prepared  # type: ignore[assignment, method-assign]
    store.open()
    await store.start()
    try:
        results: list[PutResult] = []
        for group in (puts[i:i + 3] for i in range(0, len(puts), 3)):
            results += store.put_group_now(group)
    finally:
        await store.close()
    return results


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=_batches)
@example(plan=[("T", 0, 0, [(3000, "k1 k2", "UNIQ1", "")] * 5), (SCHEDULE_TOPIC, 1, 0, [(900, "k1", None, "3")] * 3),
               ("U", 2, MessageSysFlag.TRANSACTION_PREPARED_TYPE, [(5, None, "UNIQ2", "")] * 2)] * 4)
async def test_batches_leave_the_same_bytes_as_the_general_path(plan: list[BatchSpec],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    puts = [_batch_request(*spec) for spec in plan]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("general", "batch", "pure"):
            ticks = itertools.count(1_700_000_000_000, 700)
            monkeypatch.setattr(messagestore, "_now_ms", lambda ticks=ticks: next(ticks))
            if name == "pure":
                monkeypatch.setattr(batchappend, "append_batch_in_place",
                                    nativecodecs.pure(batchappend.append_batch_in_place))
            root = Path(tmp) / name
            results = await _store_all(root, puts, general=name == "general")
            runs[name] = (put_summary(results), store_files(root))
    assert runs["batch"] == runs["general"]
    assert runs["pure"] == runs["general"]
    assert any(name.startswith("commitlog/") for name in runs["batch"][1])


async def test_index_failure_rolls_the_whole_batch_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk met by an index add after the records went in: none of the batch stays."""
    async with running_store(tmp_path) as store:
        first = store.put_group_now([_batch_request("T", 0, 0, [(100, "k1", None, "")])])[0]
        assert first.ok
        end, queue_end = store.commitlog.max_offset, store.get_max_offset("T", 0)

        def full(*_args: object) -> None:
            raise OSError(28, "No space left on device")

        assert store.index is not None
        monkeypatch.setattr(store.index, "add", full)
        failed = store.put_group_now([_batch_request("T", 0, 0, [(100, "k1", None, "")] * 3)])[0]
        assert not failed.ok
        assert store.commitlog.max_offset == end and store.get_max_offset("T", 0) == queue_end


@needs_native
async def test_a_failed_write_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    """The C twin's pwrite failing (an I/O error; here a read-only descriptor): the put fails,
    no counter moved, and the next batch goes where this one would have gone."""
    store = MessageStore(small_settings(tmp_path), STORE_HOST, clock=lambda: _CLOCK_S, fsync=lambda fd: None)
    store.open()
    await store.start()
    try:
        assert store.put_group_now([_batch_request("T", 0, 0, [(100, None, None, "")])])[0].ok
        end, queue_end = store.commitlog.max_offset, store.get_max_offset("T", 0)
        segment = store.commitlog.segments[-1]
        writable = segment._fd
        segment._fd = os.open(segment.path, os.O_RDONLY)
        try:
            failed = store.put_group_now([_batch_request("T", 0, 0, [(100, "k1", None, "")] * 3)])[0]
        finally:
            os.close(segment._fd)
            segment._fd = writable
        assert not failed.ok and failed.error
        assert store.commitlog.max_offset == end and store.get_max_offset("T", 0) == queue_end
        again = store.put_group_now([_batch_request("T", 0, 0, [(100, None, None, "")] * 2)])[0]
        assert again.ok and again.wrote_offsets[0] == end and again.queue_offsets[0] == queue_end
    finally:
        await store.close()

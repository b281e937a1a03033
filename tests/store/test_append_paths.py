"""The one-message append (``MessageStore._append_one``) against the general one.

A put of one message takes a shorter path than a batch (no per-message lists); both must
leave byte-identical CommitLog, ConsumeQueue and IndexFile files and give the same results,
including across segment rolls, hidden transaction halves, delay levels and index keys.
``put_group_now`` (the broker's path under ASYNC_FLUSH) must store exactly what ``put_group``
stores, and so must the one-message path with the pure-Python ``inplace.append_in_place`` in
place of its C twin (the runs "one" and "now" use the C one when the native codecs are built),
and ``put_one_now`` (a lone send's put), with the same statistics. The general run appends
nothing through ``groupappend.append_singles`` (which takes plain single puts ahead of
``_append_one``; tests/store/test_group_append.py compares it with this path).
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from store_helpers import STORE_HOST, put_properties, put_stats, put_summary, small_settings, store_files

from rocketq.protocol import nativecodecs
from rocketq.protocol.codes import SCHEDULE_TOPIC
from rocketq.protocol.messagetypes import MessageSysFlag
from rocketq.store import groupappend, inplace, messagestore
from rocketq.store.messagestore import MessageStore, PutRequest, PutResult, PutStatus

_CLOCK_S = 1_700_000_000.0
TOO_LARGE = 70_000
"""A body no 64 KiB CommitLog segment holds: that put fails alone, MESSAGE_ILLEGAL."""

_puts = st.lists(
    st.lists(
        st.builds(
            lambda topic, queue_id, size, keys, uniq, sys_flag, delay: (topic, queue_id, size, keys, uniq, sys_flag,
                                                                        delay),
            st.sampled_from(["T", "U", SCHEDULE_TOPIC]),
            st.integers(0, 2),
            st.one_of(st.integers(0, 9000), st.just(TOO_LARGE)),
            st.sampled_from([None, "k1", "k1 k2", " k3 "]),
            st.sampled_from([None, "UNIQ1", "UNIQ2"]),
            st.sampled_from([0, MessageSysFlag.TRANSACTION_PREPARED_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE]),
            st.sampled_from(["", "1", "3", "99"]),
        ),
        min_size=1, max_size=3),
    min_size=1, max_size=12)


def _request(topic: str, queue_id: int, size: int, keys: str | None, uniq: str | None, sys_flag: int,
             delay: str) -> PutRequest:
    props = put_properties(topic, keys, uniq, delay, SCHEDULE_TOPIC)
    return PutRequest(topic, queue_id, b"b" * size, properties=props, sys_flag=sys_flag, born_timestamp=7)


_APPEND_SINGLES = groupappend.append_singles


def _decline_all(*args: object) -> object:
    """``append_singles`` that appends nothing: every put goes by ``_append_one``."""
    return args[3]


_files = store_files
_summary = put_summary


async def _store_all(root: Path, puts: list[list[PutRequest]], *, general: bool, now: bool,
                     alone: str = "") -> tuple[list[PutResult], tuple[int, ...]]:
    store = MessageStore(small_settings(root), STORE_HOST, clock=lambda: _CLOCK_S, fsync=lambda fd: None)
    if general:  # every put through the batch path
        store._append_one = lambda p, when, notify: store._append_prepared([p], when, notify)  # type: ignore[method-assign]
    store.open()
    await store.start()
    try:
        results: list[PutResult] = []
        for put in puts if alone else ():  # each put alone ("lone": one message through put_one_now)
            lone = alone == "lone" and len(put) == 1
            results.append(store.put_one_now(put[0]) if lone else store.put_group_now([put])[0])
        for group in () if alone else (puts[i:i + 3] for i in range(0, len(puts), 3)):
            results += store.put_group_now(group) if now else await store.put_group(group)
    finally:
        await store.close()
    return results, put_stats(store)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=_puts)
@example(plan=[[("T", 0, 10, "k1 k2", "UNIQ1", 0, "")], [(SCHEDULE_TOPIC, 1, 9000, "k1", None, 0, "3")] * 3,
               [("U", 2, 5, None, "UNIQ2", MessageSysFlag.TRANSACTION_PREPARED_TYPE, "")]] * 4)
@example(plan=[[("T", 0, 10, "k1", None, 0, "")], [("U", 1, TOO_LARGE, None, "UNIQ1", 0, "")],
               [("T", 2, 20, None, None, 0, "")]] * 2)  # groups of single puts, one of them illegal
async def test_one_message_puts_leave_the_same_bytes_as_the_general_path(
        plan: list[list[tuple[str, int, int, str | None, str | None, int, str]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    puts = [[_request(*spec) for spec in put] for put in plan]
    illegal = any(spec[2] == TOO_LARGE for put in plan for spec in put)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, general, now in (("general", True, False), ("one", False, False), ("now", False, True),
                                   ("pure", False, True), ("alone", False, True), ("lone", False, True)):
            ticks = itertools.count(1_700_000_000_000, 700)
            if name in ("alone", "lone") and illegal:  # a refused put_one_now reads no clock, put_group_now
                ticks = itertools.repeat(1_700_000_000_000)  # does: the same time for every put
            monkeypatch.setattr(messagestore, "_now_ms", lambda ticks=ticks: next(ticks))
            if name == "pure":
                monkeypatch.setattr(inplace, "append_in_place", nativecodecs.pure(inplace.append_in_place))
            # "general": no group append either (it would take the plain puts before _append_one)
            monkeypatch.setattr(groupappend, "append_singles",
                                _decline_all if name == "general" else _APPEND_SINGLES)
            root = Path(tmp) / name
            alone = name if name in ("alone", "lone") else ""
            results, stats = await _store_all(root, puts, general=general, now=now, alone=alone)
            runs[name] = (_summary(results), _files(root), stats)
    assert runs["one"] == runs["general"]
    assert runs["now"] == runs["general"]
    assert runs["pure"] == runs["general"]
    assert runs["lone"] == runs["alone"]
    # a put fails in a group exactly when it fails alone (an illegal one fails no other put)
    assert [row[0] for row in runs["now"][0]] == [row[0] for row in runs["alone"][0]]
    stored = [put for put, row in zip(plan, runs["one"][0], strict=True) if row[0] is PutStatus.PUT_OK]
    if not stored:  # every put was illegal
        return
    assert any(name.startswith("commitlog/") for name in runs["one"][1])
    if any(spec[3] or spec[4] for put in stored for spec in put):
        assert any(name.startswith("index/") for name in runs["one"][1])


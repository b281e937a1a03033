"""``groupappend.append_singles``: a group of one-message puts in one call, against the existing path.

The same groups of single puts (``put_group_now``, as the broker gives a read of single sends,
and ``put_one_now``, a lone send) are stored four ways: with the C ``append_singles``, with its
pure reference, with neither (every put by ``_append_one``, the path before it) and with the
general path (``_append_prepared``). The small files of ``small_settings`` make CommitLog
segments, ConsumeQueue files and index files roll inside groups; delayed messages, transaction
halves, illegal puts and messages with more keys than the C index code takes are mixed in.
All four must leave the same CommitLog, ConsumeQueue and IndexFile bytes, results and
statistics, and the C function must stop at the same puts as its reference.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from store_helpers import put_properties, put_stats, put_summary, running_store, store_files

from rocketq.protocol import javahash, messageproperties, nativecodecs
from rocketq.protocol.codes import SCHEDULE_TOPIC
from rocketq.protocol.messagetypes import MessageSysFlag
from rocketq.store import groupappend, messagestore, putting
from rocketq.store.messagestore import MessageStore, PutRequest, PutResult, PutStatus

TOO_LARGE = 70_000
"""A body no 64 KiB CommitLog segment holds: that put fails alone, MESSAGE_ILLEGAL."""
MANY_KEYS = " ".join(f"k{i}" for i in range(groupappend.MAX_INDEX_KEYS + 1))

Spec = tuple[str, int, int, str | None, str | None, int, str]

_put = st.tuples(
    st.sampled_from(["T", "T", "U", SCHEDULE_TOPIC]),
    st.integers(0, 3),
    st.one_of(st.integers(0, 6000), st.just(TOO_LARGE)),
    st.sampled_from([None, "k1", "k1 k2", " k3 ", " ", MANY_KEYS]),
    st.sampled_from([None, "UNIQ1", "UNIQ2"]),
    st.sampled_from([0, 0, MessageSysFlag.TRANSACTION_PREPARED_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE]),
    st.sampled_from(["", "1", "3"]),
)
_plans = st.lists(st.tuples(st.lists(_put, min_size=1, max_size=8), st.booleans()), min_size=1, max_size=10)
"""Groups of single puts; True: store each put of the group alone with ``put_one_now``."""


_APPEND_ONE = MessageStore._append_one
_NATIVE = groupappend.append_singles
"""The C function when the native codecs are built (else the reference again): taken once, as
the monkeypatch of one hypothesis example lasts into the next."""
_REFERENCE = nativecodecs.pure(groupappend.append_singles)
_PLAIN = putting.prepare_plain
_PLAIN_REFERENCE = nativecodecs.pure(putting.prepare_plain)


def _general(self: MessageStore, prepared: Any, now: int, notify: Any) -> PutResult:
    return self._append_prepared([prepared], now, notify)


def _request(topic: str, queue_id: int, size: int, keys: str | None, uniq: str | None, sys_flag: int,
             delay: str) -> PutRequest:
    """Queue 0's properties are a dict; the others' are encoded, as the broker's sends carry
    them (the plain case of ``putting.prepare_plain``), odd queues' with the broker's hints."""
    props = put_properties(topic, keys, uniq, delay, SCHEDULE_TOPIC)
    if queue_id == 0:
        return PutRequest(topic, queue_id, b"b" * size, properties=props, sys_flag=sys_flag, born_timestamp=7)
    hinted = queue_id % 2 == 1
    return PutRequest(topic, queue_id, b"b" * size, properties=messageproperties.encode_properties(props),
                      sys_flag=sys_flag, born_timestamp=7,
                      tags_code=javahash.tag_hash(props["TAGS"]) if hinted else None,
                      index_keys=(uniq, keys) if hinted else None)


def _recording(append: Callable[..., int], calls: list[tuple[int, int]]) -> Callable[..., int]:
    def recorded(*args: Any) -> int:
        stopped = append(*args)
        calls.append((args[3], stopped))
        return stopped
    return recorded


async def _store_all(root: Path, plan: list[tuple[list[PutRequest], bool]]) -> tuple[list[PutResult], tuple[int, ...]]:
    results: list[PutResult] = []
    async with running_store(root) as store:
        for group, alone in plan:
            if alone:
                results += [store.put_one_now(request) for request in group]
            else:
                results += store.put_group_now([[request] for request in group])
    return results, put_stats(store)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=_plans)
@example(plan=[([("T", i % 4, 3000, "k1 k2", "UNIQ1", 0, "") for i in range(8)], False)] * 6)  # rolls mid-group
@example(plan=[([("T", 0, 10, "k1", None, 0, ""), (SCHEDULE_TOPIC, 1, 90, "k1", None, 0, "3"),
                 ("U", 2, 5, None, "UNIQ2", MessageSysFlag.TRANSACTION_PREPARED_TYPE, ""),
                 ("T", 1, 20, MANY_KEYS, "UNIQ1", 0, ""), ("T", 3, 20, " ", None, 0, "")], False),
               ([("T", 0, 10, "k1", None, 0, ""), ("U", 1, TOO_LARGE, None, None, 0, "")], False),
               ([("T", 2, 40, None, "UNIQ2", 0, "")] * 3, True)])
async def test_group_appends_leave_the_bytes_and_results_of_the_existing_path(
        plan: list[tuple[list[Spec], bool]], monkeypatch: pytest.MonkeyPatch) -> None:
    puts = [([_request(*spec) for spec in group], alone) for group, alone in plan]
    calls: dict[str, list[tuple[int, int]]] = {"native": [], "pure": []}
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("existing", "general", "native", "pure"):
            ticks = itertools.count(1_700_000_000_000, 700)
            monkeypatch.setattr(messagestore, "_now_ms", lambda ticks=ticks: next(ticks))
            if name in ("existing", "general"):  # every put by _append_one (and it by _append_prepared)
                monkeypatch.setattr(groupappend, "append_singles", lambda *args: args[3])
                monkeypatch.setattr(putting, "prepare_plain", lambda *args: None)  # and prepared by Preparer's loop
            else:
                monkeypatch.setattr(putting, "prepare_plain", _PLAIN if name == "native" else _PLAIN_REFERENCE)
                monkeypatch.setattr(groupappend, "append_singles",
                                    _recording(_NATIVE if name == "native" else _REFERENCE, calls[name]))
            monkeypatch.setattr(MessageStore, "_append_one", _general if name == "general" else _APPEND_ONE)
            root = Path(tmp) / name
            results, stats = await _store_all(root, puts)
            runs[name] = (put_summary(results), store_files(root), stats)
    assert runs["existing"] == runs["general"]
    assert runs["native"] == runs["existing"]
    assert runs["pure"] == runs["existing"]
    assert calls["native"] == calls["pure"]  # the C function stops exactly where its reference does
    stored = [row for row in runs["native"][0] if row[0] is PutStatus.PUT_OK]
    if stored:
        assert any(name.startswith("commitlog/") for name in runs["native"][1])


async def test_a_plain_group_goes_in_with_one_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Single sends to existing queues with room: one call appends them all, none by ``_append_one``."""
    async with running_store(tmp_path) as store:
        warm = [[_request("T", q, 100, "k1", "UNIQ1", 0, "")] for q in range(4)]
        assert all(r.ok for r in store.put_group_now(warm))  # creates the queue and index files
        calls: list[tuple[int, int]] = []
        monkeypatch.setattr(groupappend, "append_singles", _recording(_NATIVE, calls))
        monkeypatch.setattr(MessageStore, "_append_one", lambda *args: pytest.fail("took the existing path"))
        results = store.put_group_now(warm)
        assert calls == [(0, 4)]
        assert [r.queue_offsets for r in results] == [(1,), (1,), (1,), (1,)]
        assert results[1].wrote_offsets[0] == results[0].wrote_offsets[0] + results[0].wrote_sizes[0]
        assert store.query_message("T", "k1", 64, 0, 1 << 62).buffers  # the index entries are there


@pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")
async def test_a_failed_pwrite_stores_the_group_through_the_map(tmp_path: Path) -> None:
    """The C function writes a group's records with one pwrite; when that fails (an I/O error;
    here a read-only descriptor) it copies them through the map instead, as a lone put is
    stored: every put succeeds and the files are those of a store whose pwrite worked."""
    group = [[_request("T", q % 2, 300, "k1", None, 0, "")] for q in range(5)]
    stored = {}
    for name in ("failing", "working"):
        ticks = itertools.count(1_700_000_000_000, 700)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(messagestore, "_now_ms", lambda ticks=ticks: next(ticks))
            async with running_store(tmp_path / name) as store:
                assert all(r.ok for r in store.put_group_now(group[:2]))
                segment = store.commitlog.segments[-1]
                writable = segment._fd
                if name == "failing":
                    segment._fd = os.open(segment.path, os.O_RDONLY)
                try:
                    results = store.put_group_now(group)
                finally:
                    if segment._fd != writable:
                        os.close(segment._fd)
                        segment._fd = writable
                assert all(r.ok for r in results)
        stored[name] = (put_summary(results), store_files(tmp_path / name))
    assert stored["failing"] == stored["working"]

"""``IndexService.add``: the C twin (native/indexput.c) writes the entries the pure method writes.

Two index directories get the same messages (topics and keys of any text: astral characters,
repeated and empty KEYS pieces, no key at all; offsets and store times in any order), one
through the C routine and one through the pure method. Small files make rolls frequent (the C
routine leaves those to the pure method). Every file's bytes and every file's counters must
agree, and lookups must find the same offsets.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import nativecodecs
from rocketq.store.index import HEADER, IndexService

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

_key_text = st.text(alphabet=st.sampled_from(["a", "b", " ", "é", "漢", "\U0001F600", "#"]), max_size=8)
_message = st.tuples(st.sampled_from(["T", "Topic-é", "漢字"]), st.none() | _key_text, st.none() | _key_text,
                     st.integers(0, 2**40), st.integers(-2**40, 2**45))
_ATTRIBUTES = ("index_count", "hash_slot_count", "begin_timestamp", "end_timestamp", "begin_phy_offset",
               "end_phy_offset", "header_dirty", "flushed")


def _run(add: Callable[..., Any], root: Path, messages: list[tuple[str, str | None, str | None, int, int]],
         index_num: int) -> tuple[Any, ...]:
    clock = iter(range(1_700_000_000_000, 1_800_000_000_000, 1000))
    service = IndexService(root, 7, index_num, lambda: next(clock))
    service.load()
    try:
        for message in messages:
            add(service, *message)
        service.commit()
        counters = [tuple(getattr(f, name) for name in _ATTRIBUTES) for f in service.files]
        found = [service.query(topic, key, 64, -2**62, 2**62)[0] for topic, key, *_ in messages if key]
        data = [bytes(f.buf) for f in service.files]
    finally:
        service.close()
    return counters, found, data, sorted(p.name for p in root.iterdir())


@needs_native
@settings(max_examples=150, deadline=None)
@given(messages=st.lists(_message, min_size=1, max_size=25), index_num=st.integers(2, 12))
def test_native_add_writes_what_the_pure_one_writes(messages: list[tuple[str, str | None, str | None, int, int]],
                                                    index_num: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        native = _run(IndexService.add, Path(tmp) / "native", messages, index_num)
        pure = _run(nativecodecs.pure(IndexService.add), Path(tmp) / "pure", messages, index_num)
    assert native == pure


@needs_native
def test_a_lone_surrogate_goes_to_the_pure_method(tmp_path: Path) -> None:
    """Java's hashCode of a lone surrogate is the pure code's to judge (it raises)."""
    service = IndexService(tmp_path, 7, 10, lambda: 1_700_000_000_000)
    service.load()
    try:
        service.add("T", "ok", None, 1, 1000)
        with pytest.raises(UnicodeEncodeError):
            service.add("T", "bad\ud800", None, 2, 1000)
    finally:
        service.close()


@pytest.mark.parametrize("add", [IndexService.add, nativecodecs.pure(IndexService.add)], ids=["native", "pure"])
@settings(max_examples=60, deadline=None)
@given(messages=st.lists(_message, min_size=1, max_size=25), index_num=st.integers(2, 12))
def test_every_add_leaves_the_header_written(add: Callable[..., Any],
                                             messages: list[tuple[str, str | None, str | None, int, int]],
                                             index_num: int) -> None:
    """No commit between puts: after each add, every file's header in the map already holds its
    counters, as recovery after a kill -9 reads them (the put path no longer commits)."""
    clock = iter(range(1_700_000_000_000, 1_800_000_000_000, 1000))
    with tempfile.TemporaryDirectory() as tmp:
        service = IndexService(Path(tmp), 7, index_num, lambda: next(clock))
        service.load()
        try:
            for message in messages:
                add(service, *message)
                for f in service.files:
                    assert not f.header_dirty
                    assert HEADER.unpack_from(f.buf, 0) == (
                        f.begin_timestamp, f.end_timestamp, f.begin_phy_offset, f.end_phy_offset,
                        f.hash_slot_count, f.index_count)
        finally:
            service.close()

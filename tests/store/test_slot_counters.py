"""The C appends read and move the store files' counters as Python does.

``MappedFile`` and ``IndexFile`` keep their fields in ``__slots__``, and native/attributes.c
reads and writes an attribute at its slot when the object's type holds it as one. A subclass
whose attribute reads or writes otherwise (a property over the slot) must be read and written
through that property, as by the pure-Python appends: the C function and its reference then
make the same decision (in place or not) and the same counter moves.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import pytest
from store_helpers import running_store

from rocketq.protocol import nativecodecs
from rocketq.store import groupappend, results
from rocketq.store.index import IndexFile
from rocketq.store.mappedfile import MappedFile
from rocketq.store.messagestore import MessageStore, PutRequest

_NATIVE = groupappend.append_singles
_REFERENCE = nativecodecs.pure(groupappend.append_singles)
_WROTE: Any = vars(MappedFile)["wrote"]
_RESERVED: Any = vars(MappedFile)["reserved"]
"""The slots' own member descriptors, which the subclasses below put their properties over."""


class _Unreserved(MappedFile):
    """A segment whose ``reserved`` reads 0 (no blocks allocated) whatever its slot holds."""

    __slots__ = ()

    @property
    def reserved(self) -> int:
        return 0

    @reserved.setter
    def reserved(self, value: int) -> None:
        _RESERVED.__set__(self, value)


class _Watched(MappedFile):
    """A segment whose every move of ``wrote`` is recorded."""

    __slots__ = ()
    moves: ClassVar[list[int]] = []

    @property
    def wrote(self) -> int:
        return int(_WROTE.__get__(self))

    @wrote.setter
    def wrote(self, value: int) -> None:
        _Watched.moves.append(value)
        _WROTE.__set__(self, value)


def test_the_store_files_have_no_instance_dict(tmp_path: Path) -> None:
    """Their fields are slots: a C read at the slot is what Python reads."""
    segment = MappedFile(tmp_path / f"{0:020d}", 4096, create=True)
    index = IndexFile(tmp_path / "index", 4, 4, create=True)
    try:
        for obj in (segment, index):
            assert not hasattr(obj, "__dict__")
            with pytest.raises(AttributeError):
                setattr(obj, "unknown", 1)  # noqa: B010 (no such slot)
    finally:
        segment.close()
        index.close()


async def _append(store: MessageStore, append: Any, segment_class: type[MappedFile]) -> tuple[int, int]:
    """One put by ``append`` with the log's last segment of ``segment_class``: where it stopped, and
    the segment's write position after."""
    segment = store.commitlog.segments[-1]
    segment.__class__ = segment_class
    try:
        prepared = store._preparer.prepare([PutRequest("T", 0, b"body", properties="KEYS\x01k1\x02")])
        results: list[Any] = []
        at = append(store.commitlog, store.index, prepared, 0, 1_700_000_000_000, store._msg_id_prefix, results, {})
        return at, int(_WROTE.__get__(segment))
    finally:
        segment.__class__ = MappedFile


@pytest.mark.parametrize("append", [_NATIVE, _REFERENCE], ids=["native", "pure"])
async def test_counters_are_read_and_moved_through_a_property(tmp_path: Path, append: Any) -> None:
    async with running_store(tmp_path) as store:
        assert store.put_one_now(PutRequest("T", 0, b"warm", properties="KEYS\x01k1\x02")).ok  # the files exist
        wrote = store.commitlog.segments[-1].wrote
        assert await _append(store, append, _Unreserved) == (0, wrote)  # "no blocks": not in place
        _Watched.moves.clear()
        at, moved = await _append(store, append, _Watched)
        assert at == 1 and moved > wrote
        assert _Watched.moves == [moved]  # the move went through the property's setter
        at, after = await _append(store, append, MappedFile)
        assert at == 1 and after > moved  # and the plain class, at its slots


class _Later(MappedFile):
    """A segment class that gets a property over ``reserved`` only after appends used its slot."""

    __slots__ = ()


@pytest.mark.parametrize("append", [_NATIVE, _REFERENCE], ids=["native", "pure"])
async def test_a_class_changed_after_appends_is_read_as_it_now_is(tmp_path: Path, append: Any) -> None:
    """The C appends remember where a class keeps each counter (native/attributes.c's cache of
    slot offsets); a property set on the class afterwards must be seen by the next append."""
    async with running_store(tmp_path) as store:
        assert store.put_one_now(PutRequest("T", 0, b"warm", properties="KEYS\x01k1\x02")).ok
        wrote = store.commitlog.segments[-1].wrote
        at, moved = await _append(store, append, _Later)  # its slots, remembered
        assert at == 1 and moved > wrote
        _Later.reserved = property(lambda self: 0, _RESERVED.__set__)  # type: ignore[assignment]
        try:
            assert await _append(store, append, _Later) == (0, moved)  # "no blocks": not in place
        finally:
            _Later.reserved = _RESERVED


@dataclasses.dataclass(frozen=True, slots=True)
class _Pair:
    a: int
    b: int


def test_a_frozen_class_changed_after_use_is_set_as_it_now_is() -> None:
    """The C ``frozen_new`` (``results._all_fields``) remembers where a class keeps each field;
    a property set on the class afterwards must take the next values, as ``__init__``'s
    ``object.__setattr__`` gives them to it."""
    make = results._all_fields(_Pair)
    assert (make(1, 2).a, make(1, 2).b) == (1, 2)
    slot: Any = vars(_Pair)["b"]
    _Pair.b = property(lambda self: slot.__get__(self) * 10, lambda self, v: slot.__set__(self, v + 1))  # type: ignore[assignment]
    try:
        assert make(1, 2).b == _Pair(1, 2).b == 30
    finally:
        _Pair.b = slot
    assert make(1, 2).b == 2

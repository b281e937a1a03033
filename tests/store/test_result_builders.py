"""``results.new_put_request``/``new_put_result``: the native twin builds what the class does.

The C routine fills a frozen dataclass's slots from all its fields (native/headers.c,
``frozen_new``); it must give an object equal to ``cls(*values)``, holding the very same
values, and any other call (too few or too many values) must behave as the class's own call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import nativecodecs
from rocketq.store import results

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

anything = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.binary(max_size=5),
                     st.tuples(st.integers(), st.text(max_size=3)), st.sampled_from(list(results.PutStatus)))
BUILDERS = [(results.new_put_request, results.PutRequest), (results.new_put_result, results.PutResult)]


def _outcome(build: Callable[..., Any], values: list[Any]) -> tuple[Any, ...]:
    try:
        made = build(*values)
    except Exception as exc:  # the comparison is the point: any type, as long as both agree
        return ("error", type(exc), str(exc))
    return ("ok", type(made), [id(getattr(made, f.name)) for f in dataclasses.fields(made)])


@needs_native
@settings(max_examples=200, deadline=None)
@given(which=st.sampled_from(BUILDERS), data=st.data())
def test_native_builder_makes_what_the_class_makes(which: tuple[Callable[..., Any], type], data: st.DataObject) -> None:
    build, cls = which
    assert build is not nativecodecs.pure(build), "the native builder is not in use"
    count = len(dataclasses.fields(cls))
    values = data.draw(st.lists(anything, min_size=count - 2, max_size=count + 1))
    got, expected = _outcome(build, values), _outcome(cls, values)
    assert got == expected
    if len(values) == count:
        assert build(*values) == cls(*values)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(build(*values), dataclasses.fields(cls)[0].name, "changed")


@dataclasses.dataclass(frozen=True)
class _WithDict:  # no slots: the fields live in the instance's __dict__
    a: Any
    b: Any


@dataclasses.dataclass(frozen=True, slots=True)
class _Slots:
    a: Any
    b: Any


class _Borrowed:
    """A slot descriptor of another class: object.__setattr__ refuses it (its layout is not this one's)."""

    __slots__ = ()
    a = _Slots.__dict__["a"]
    b = _Slots.__dict__["b"]


@needs_native
@pytest.mark.parametrize("cls", [_WithDict, _Slots, _Borrowed])
def test_frozen_new_fills_fields_as_object_setattr_does(cls: type) -> None:
    """The C twin writes a plain slot directly and leaves every other kind of field to
    ``object.__setattr__``: the same object, or the same error (never a write into memory
    that is not the slot)."""
    assert nativecodecs.native is not None

    def pure(*values: Any) -> Any:
        made = object.__new__(cls)
        for name, value in zip(("a", "b"), values, strict=True):
            object.__setattr__(made, name, value)
        return made

    native = nativecodecs.native.accelerate("frozen_new", pure, cls, ("a", "b"))
    values = [object(), "x"]

    def outcome(build: Callable[..., Any]) -> tuple[Any, ...]:
        try:
            made = build(*values)
        except Exception as exc:
            return ("error", type(exc), str(exc))
        return ("ok", type(made), made.a is values[0], made.b is values[1])

    assert outcome(native) == outcome(pure)

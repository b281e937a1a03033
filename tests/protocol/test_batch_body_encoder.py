"""``batchbodies.encode_batch_entries``: the C twin (native/batchbodies.c) gives the pure
encoder's bytes, or its error, for any list of (body, flag, properties) entries: flags just
outside i32, properties at and over PROPLEN's limit, lone surrogates, other body types."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_native_codecs import needs_native, same, texts, wide_ints

from rocketq.protocol import batchbodies
from rocketq.protocol.messageproperties import MAX_PROPERTIES_LENGTH

bodies = st.one_of(st.binary(max_size=200), st.binary(max_size=20).map(bytearray))
entries = st.lists(st.tuples(bodies, wide_ints, texts), max_size=6)


@needs_native
@settings(max_examples=300, deadline=None)
@given(entries=entries)
def test_native_encoder_gives_the_pure_bytes_or_error(entries: list[tuple[Any, int, str]]) -> None:
    same(batchbodies.encode_batch_entries, entries)


@needs_native
@pytest.mark.parametrize("length", [0, MAX_PROPERTIES_LENGTH - 1, MAX_PROPERTIES_LENGTH, MAX_PROPERTIES_LENGTH + 1])
def test_properties_at_the_limit(length: int) -> None:
    same(batchbodies.encode_batch_entries, [(b"body", 1, "a" * length)])
    same(batchbodies.encode_batch_entries, [(b"body", 1, "é" * (length // 2 + 1))])


@needs_native
def test_a_body_round_trips_through_the_walker() -> None:
    encoded = batchbodies.encode_batch_entries([(b"one", 7, "A\x01b\x02"), (b"", -1, "")])
    assert [(b, f, t) for b, f, _props, t in batchbodies.batch_entries(encoded)] == [(b"one", 7, "A\x01b\x02"),
                                                                                    (b"", -1, "")]

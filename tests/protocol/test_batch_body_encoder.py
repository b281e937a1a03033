"""``batchbodies.encode_batch_entries``: the C twin (native/batchbodies.c) gives the pure
encoder's bytes, or its error, for any list of (body, flag, properties) entries: flags just
outside i32, properties at and over PROPLEN's limit, lone surrogates, other body types."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_native_codecs import needs_native, same, texts, wide_ints

from rocketq.protocol import batchbodies, javahash
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


# --- the broker's plain walk -----------------------------------------------------------------

_HEAD = struct.Struct(">iiiii")
_names = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "TRAN_MSG", "DELAY", "CLUSTER", "WAIT", "x", "é", ""])
_values = st.text(st.sampled_from(["a", " ", "\x01", "\x02", "é", "\U0001f600"]), max_size=4)
_props_text = st.lists(st.tuples(_names, _values, st.sampled_from(["\x02", "\x02", "", "\x02\x02"])),
                       max_size=4).map(lambda entries: "".join(f"{n}\x01{v}{end}" for n, v, end in entries))
_raw_props = st.one_of(_props_text.map(str.encode), _props_text.map(str.encode),
                       st.binary(max_size=12))  # not UTF-8, or no separators at all


def _framed(items: list[tuple[bytes, int, bytes]]) -> bytes:
    return b"".join(_HEAD.pack(_HEAD.size + len(body) + 2 + len(props), 0, 0, flag, len(body)) + body
                    + struct.pack(">h", len(props)) + props for body, flag, props in items)


@needs_native
@settings(max_examples=400, deadline=None)
@given(items=st.lists(st.tuples(st.binary(max_size=30), st.integers(-(2**31), 2**31 - 1), _raw_props), max_size=5),
       cluster=st.sampled_from(["CLUSTER\x01DefaultCluster\x02", ""]), cut=st.integers(0, 3))
def test_plain_walk_gives_the_pure_result(items: list[tuple[bytes, int, bytes]], cluster: str, cut: int) -> None:
    body = _framed(items)
    same(batchbodies.plain_batch_messages, body, cluster)
    if body and cut:
        same(batchbodies.plain_batch_messages, body[:-cut], cluster)  # truncated: the walker's error


@needs_native
def test_plain_walk_reads_the_index_hints() -> None:
    text = "TAGS\x01t\x02UNIQ_KEY\x01U\x02KEYS\x01k1 k2\x02"
    body = batchbodies.encode_batch_entries([(b"a", 3, text), (b"b", 0, "")])
    got = batchbodies.plain_batch_messages(body, "CLUSTER\x01c\x02")
    assert got == [(b"a", 3, "TAGS\x01t\x02UNIQ_KEY\x01U\x02KEYS\x01k1 k2\x02CLUSTER\x01c\x02",
                    javahash.tag_hash("t"), "U", "k1 k2"), (b"b", 0, "CLUSTER\x01c\x02", 0, None, None)]
    assert batchbodies.plain_batch_messages(batchbodies.encode_batch_entries([(b"a", 0, "DELAY\x011\x02")]), "") is None

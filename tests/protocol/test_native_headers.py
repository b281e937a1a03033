"""The native header parser (native/headers.c) against the compiled pure ``from_ext``.

Every header class's ``from_ext`` has a C twin that reads the same field table. For random
extFields — well-formed values, numbers at and past the digits a Java int or long can hold,
signs, Unicode digits, booleans in any case, empty strings, nulls, other types, unknown and
missing keys — both must build the same header (same field values of the same types) or raise
the same HeaderError.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.protocol import headers, nativecodecs

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

CLASSES = [headers.SendMessageRequestHeader, headers.PullMessageRequestHeader, headers.SendMessageResponseHeader,
           headers.ConsumerSendMsgBackRequestHeader, headers.QueryConsumerOffsetRequestHeader]

values = st.one_of(
    st.integers(0, 10**20).map(str),
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(["", "0", "007", "+5", "-1", "2147483647", "2147483648", "9" * 18, "9" * 19, "١٢٣", "1_0",
                     " 1", "true", "false", "TRUE", "True", "yes", "1", "x"]),
    st.text(max_size=12),
    st.none(),
    st.integers(-5, 5),
)


def _parsers(cls: type) -> tuple[Callable[[Mapping[str, Any]], Any], Callable[[Mapping[str, Any]], Any]]:
    compiled = headers._FROM_EXT.get(cls) or headers._compile_from_ext(cls, headers._wire_names(cls))
    return compiled, nativecodecs.pure(compiled)


def _outcome(parse: Callable[[Mapping[str, Any]], Any], ext: Mapping[str, Any]) -> tuple[Any, ...]:
    try:
        header = parse(ext)
    except Exception as exc:  # the comparison is the point: any type, as long as both agree
        return ("error", type(exc), str(exc))
    return ("ok", type(header), [(f.name, type(getattr(header, f.name)), getattr(header, f.name))
                                 for f in dataclasses.fields(header)])


@st.composite
def ext_fields(draw: st.DrawFn) -> tuple[type, dict[str, Any]]:
    cls = draw(st.sampled_from(CLASSES))
    keys = list(headers._wire_names(cls).values())
    ext = {key: draw(values) for key in draw(st.lists(st.sampled_from(keys), unique=True))}
    if draw(st.booleans()):
        ext[draw(st.text(max_size=6))] = draw(values)  # a key no field reads
    return cls, ext


@needs_native
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=ext_fields())
def test_native_and_pure_parse_alike(case: tuple[type, dict[str, Any]]) -> None:
    cls, ext = case
    native, pure = _parsers(cls)
    assert native is not pure, "the native parser is not in use"
    assert _outcome(native, ext) == _outcome(pure, ext)


REAL_SEND_V2: Final = {
    "a": "please_rename_unique_group_name", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "3", "f": "0",
    "g": "1700000000123", "h": "0", "i": "TAGS\x01TagA\x02KEYS\x01k1\x02WAIT\x01true\x02", "j": "0",
    "k": "false", "m": "false"}
"""A Java producer's SEND_MESSAGE_V2 extFields."""


@needs_native
def test_a_real_send_v2_header_takes_the_native_path_and_matches() -> None:
    ext = REAL_SEND_V2
    native, pure = headers._send_v2_from_ext, nativecodecs.pure(headers._send_v2_from_ext)
    assert native is not pure
    assert _outcome(native, ext) == _outcome(pure, ext)
    assert native(ext).born_timestamp == 1700000000123


@needs_native
def test_a_non_dict_mapping_goes_to_the_pure_parser() -> None:
    class Ext(dict[str, str]):
        pass

    native, pure = _parsers(headers.QueryConsumerOffsetRequestHeader)
    ext = Ext(consumerGroup="g", topic="t", queueId="1")
    assert _outcome(native, ext) == _outcome(pure, ext)


@st.composite
def send_v2_ext(draw: st.DrawFn) -> dict[str, Any]:
    """SEND_MESSAGE_V2 extFields: short names, sometimes with an ACL client's signature fields,
    a long name for the same field or a key no field reads (those the C twin leaves alone)."""
    short = list(headers.SEND_V2_ALIASES)
    ext = {**REAL_SEND_V2} if draw(st.booleans()) else {}  # mostly a whole header, some fields changed
    ext.update({key: draw(values) for key in draw(st.lists(st.sampled_from(short), unique=True, max_size=3))})
    for key in draw(st.lists(st.sampled_from(short), unique=True, max_size=2)):
        ext.pop(key, None)
    extra = draw(st.sampled_from(["", "AccessKey", "Signature", "topic", "queueId", "x"]))
    if extra:
        ext[extra] = draw(values)
    return ext


@needs_native
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ext=send_v2_ext())
def test_send_v2_native_and_pure_parse_alike(ext: dict[str, Any]) -> None:
    native, pure = headers.send_header_from_v2, nativecodecs.pure(headers.send_header_from_v2)
    assert native is not pure, "the native parser is not in use"
    assert _outcome(native, ext) == _outcome(pure, ext)

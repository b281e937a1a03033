"""Typed headers: wire names, V2 aliases, and validation errors that name the field."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import frames, headers
from rocketq.protocol.headers import HeaderError, PullMessageRequestHeader, SendMessageRequestHeader


def test_send_v2_aliases_round_trip() -> None:
    v2 = {"a": "pg", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "1700000000000",
          "h": "0", "i": "TAGS\x01a\x02", "j": "0", "k": "false", "m": "false"}
    header = headers.send_header_from_v2(v2)
    assert header.topic == "TopicTest" and header.queue_id == 3 and header.born_timestamp == 1700000000000
    assert header.unit_mode is False and header.properties == "TAGS\x01a\x02"
    assert headers.send_header_to_v2(header) == v2


def test_missing_required_field_is_named() -> None:
    with pytest.raises(HeaderError, match="consumerGroup"):
        PullMessageRequestHeader.from_ext({"topic": "t"})


@pytest.mark.parametrize("field, value", [("queueId", "x1"), ("unitMode", "yes"), ("queueId", "9" * 30)])
def test_malformed_values_are_refused(field: str, value: str) -> None:
    ext = {"producerGroup": "g", "topic": "t", field: value}
    with pytest.raises(HeaderError, match=field):
        SendMessageRequestHeader.from_ext(ext)


def test_optional_fields_absent_are_omitted_on_the_wire() -> None:
    ext = headers.QueryConsumerOffsetRequestHeader(consumer_group="g", topic="t", queue_id=1).to_ext()
    assert ext == {"consumerGroup": "g", "topic": "t", "queueId": "1"}


@given(st.dictionaries(st.sampled_from(["producerGroup", "topic", "queueId", "batch", "flag", "zzz"]), st.text()))
def test_random_ext_fields_give_a_header_or_header_error(ext: dict[str, str]) -> None:
    with contextlib.suppress(HeaderError):
        SendMessageRequestHeader.from_ext(ext)


# --- the compiled codecs against the plain loop ------------------------------------------------

HEADER_CLASSES = sorted(
    (cls for cls in vars(headers).values()
     if isinstance(cls, type) and issubclass(cls, headers.Header) and cls is not headers.Header),
    key=lambda cls: cls.__name__,
)
raw_values = st.sampled_from(["", " ", "0", "-1", "17", " 42 ", "true", "false", "TRUE", "x", "9" * 25, "1.5"])


def _outcome(parse: Any, ext: dict[str, str]) -> Any:
    try:
        return parse(ext)
    except HeaderError as exc:
        return ("HeaderError", str(exc))


@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=40)
@given(data=st.data())
def test_compiled_from_ext_matches_the_plain_loop(cls: type[headers.Header], data: st.DataObject) -> None:
    names = [wire_name for _name, wire_name, _kind, _required in headers._field_specs(cls)] + ["other"]
    ext = data.draw(st.dictionaries(st.sampled_from(names), raw_values | st.text(max_size=5)))
    assert _outcome(cls.from_ext, ext) == _outcome(lambda e: headers._generic_from_ext(cls, e), ext)


@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=40)
@given(data=st.data())
def test_compiled_to_ext_writes_what_java_would(cls: type[headers.Header], data: st.DataObject) -> None:
    names = [wire_name for _name, wire_name, _kind, _required in headers._field_specs(cls)]
    ext = data.draw(st.fixed_dictionaries({n: raw_values for n in names}))
    header = _outcome(cls.from_ext, ext)
    if isinstance(header, tuple):
        return
    expected = {wire_name: frames.java_string(getattr(header, name))
                for name, wire_name, _kind, _required in headers._field_specs(cls)
                if getattr(header, name) is not None}
    assert header.to_ext() == expected
    assert cls.from_ext(header.to_ext()) == header


@given(st.dictionaries(st.sampled_from([*sorted(headers.SEND_V2_ALIASES), "topic", "queueId", "zzz"]), raw_values))
def test_send_v2_parsing_matches_the_aliased_plain_loop(ext: dict[str, str]) -> None:
    aliased = {headers.SEND_V2_ALIASES.get(k, k): v for k, v in ext.items()}
    expected = _outcome(lambda e: headers._generic_from_ext(SendMessageRequestHeader, e), aliased)
    assert _outcome(headers.send_header_from_v2, ext) == expected

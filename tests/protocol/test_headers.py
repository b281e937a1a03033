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


@pytest.mark.parametrize("field, value", [
    ("queueId", "x1"), ("queueId", "9" * 30), ("queueId", " 4"), ("queueId", "1_0"), ("queueId", "2147483648"),
    ("bornTimestamp", "9223372036854775808"), ("flag", "+"), ("sysFlag", "1.0"), ("queueId", "0x10"),
])
def test_malformed_values_are_refused(field: str, value: str) -> None:
    ext = {"producerGroup": "g", "topic": "t", field: value}
    with pytest.raises(HeaderError, match=field):
        SendMessageRequestHeader.from_ext(ext)
    v2 = {headers._SEND_V2_SHORT[k]: v for k, v in ext.items()}
    with pytest.raises(HeaderError, match=field):
        headers.send_header_from_v2(v2)


def test_a_send_whose_unit_mode_is_a_digit_is_read_as_java_reads_it() -> None:
    """The C++ and Go clients send "0"/"1"; Java's Boolean.parseBoolean reads both as false."""
    for value in ("0", "1", "", "yes", "False", " true"):
        header = headers.send_header_from_v2({"a": "pg", "b": "T", "k": value, "m": value})
        assert header.unit_mode is False and header.batch is False
    header = headers.send_header_from_v2({"a": "pg", "b": "T", "k": "TRUE", "m": "True"})
    assert header.unit_mode is True and header.batch is True


# --- each encoding a client may use for a value reads as Java reads it ---------------------------

_NON_ASCII_DIGITS = "٠١٢٣٤٥٦٧٨٩"  # Arabic-Indic: Character.digit(c, 10) reads them, so does int()


def _spellings(n: int) -> st.SearchStrategy[str]:
    """``n`` as Java writes it, and the other texts Long.parseLong reads as ``n``."""
    sign = "-" if n < 0 else ""
    digits = str(abs(n))
    return st.sampled_from([
        str(n),
        ("+" if n >= 0 else "-") + digits,
        sign + "000" + digits,
        sign + digits.translate(str.maketrans("0123456789", _NON_ASCII_DIGITS)),
    ])


@given(st.data(), st.integers(-(1 << 31), (1 << 31) - 1), st.integers(-(1 << 63), (1 << 63) - 1))
def test_integer_spellings_read_as_java_reads_them(data: st.DataObject, small: int, big: int) -> None:
    ext = {"consumerGroup": "g", "topic": "t", "queueId": data.draw(_spellings(small)),
           "queueOffset": data.draw(_spellings(big)), "maxMsgNums": "1", "sysFlag": "0",
           "commitOffset": "0", "suspendTimeoutMillis": "0"}
    header = PullMessageRequestHeader.from_ext(ext)
    assert (header.queue_id, header.queue_offset) == (small, big)
    assert header == headers._generic_from_ext(PullMessageRequestHeader, ext)


@given(st.integers(1 << 31, 1 << 70) | st.integers(-(1 << 70), -(1 << 31) - 1))
def test_an_int_field_beyond_java_int_is_refused_and_a_long_field_beyond_long(n: int) -> None:
    base = {"consumerGroup": "g", "topic": "t", "queueOffset": "0", "maxMsgNums": "1", "sysFlag": "0",
            "commitOffset": "0", "suspendTimeoutMillis": "0", "queueId": "0"}
    with pytest.raises(HeaderError, match=r"queueId.*out of range"):
        PullMessageRequestHeader.from_ext({**base, "queueId": str(n)})
    outcome = _outcome(PullMessageRequestHeader.from_ext, {**base, "queueOffset": str(n)})
    if -(1 << 63) <= n < (1 << 63):
        assert outcome.queue_offset == n
    else:
        assert outcome[0] == "HeaderError" and "queueOffset" in outcome[1]


@given(st.text(max_size=8))
def test_any_text_is_a_boolean_and_only_true_in_any_case_is_true(raw: str) -> None:
    header = headers.QueryDataVersionResponseHeader.from_ext({"changed": raw})
    assert header.changed is (raw.lower() == "true" and len(raw) == 4)
    assert header == headers._generic_from_ext(headers.QueryDataVersionResponseHeader, {"changed": raw})


@given(st.sampled_from(["true", "TRUE", "True", "tRuE"]))
def test_true_in_any_case_is_true(raw: str) -> None:
    assert headers.QueryDataVersionResponseHeader.from_ext({"changed": raw}).changed is True


@given(st.text(max_size=12).filter(lambda t: not headers.JAVA_INTEGER.fullmatch(t) and t != ""))
def test_text_that_is_not_a_java_integer_is_a_header_error_naming_the_field(raw: str) -> None:
    for parse in (SendMessageRequestHeader.from_ext, lambda e: headers._generic_from_ext(SendMessageRequestHeader, e)):
        with pytest.raises(HeaderError, match="bornTimestamp"):
            parse({"producerGroup": "g", "topic": "t", "bornTimestamp": raw})


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
raw_values = st.sampled_from(["", " ", "0", "-1", "+3", "17", " 42 ", "1_0", "٤٢", "true", "false", "TRUE", "x",
                              "9" * 25, "1.5", "2147483648", "-2147483649", "999999999", "1000000000",
                              "999999999999999999", "9223372036854775807", "9223372036854775808"])


def _outcome(parse: Any, ext: dict[str, str]) -> Any:
    try:
        return parse(ext)
    except HeaderError as exc:
        return ("HeaderError", str(exc))


@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=40, deadline=None)  # the first example compiles the class's parser
@given(data=st.data())
def test_compiled_from_ext_matches_the_plain_loop(cls: type[headers.Header], data: st.DataObject) -> None:
    names = [wire_name for _name, wire_name, _kind, _required in headers._field_specs(cls)] + ["other"]
    ext = data.draw(st.dictionaries(st.sampled_from(names), raw_values | st.text(max_size=5)))
    assert _outcome(cls.from_ext, ext) == _outcome(lambda e: headers._generic_from_ext(cls, e), ext)


@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=40, deadline=None)  # the first example compiles the class's parser
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


def test_an_unsigned_body_crc32_is_read_for_the_name_server_to_check() -> None:
    ext = {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "c", "brokerId": "0", "bodyCrc32": "4294967295"}
    assert headers.RegisterBrokerRequestHeader.from_ext(ext).body_crc32 == 4294967295

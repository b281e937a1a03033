"""Typed headers: wire names, V2 aliases, and validation errors that name the field."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import headers
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

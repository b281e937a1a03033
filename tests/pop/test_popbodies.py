"""BATCH_ACK_MESSAGE's body: fastjson's base64 of BitSet.toByteArray, long and short field names,
and malformed bodies refused with BodyError."""

from __future__ import annotations

import contextlib

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import popbodies
from rocketq.protocol.popbodies import BatchAck
from rocketq.protocol.popinfo import TopicType
from rocketq.protocol.sharedbodies import BodyError


def test_bitset_is_javas_to_byte_array() -> None:
    assert popbodies.bitset_bytes([0]) == b"\x01"
    assert popbodies.bitset_bytes([0, 9]) == b"\x01\x02"
    assert popbodies.bitset_bytes([]) == b""
    assert popbodies.bitset_indexes(b"\x01\x02\x00") == [0, 9]


def test_body_as_the_java_client_writes_it() -> None:
    body = orjson.dumps({"brokerName": "broker-a", "acks": [
        {"c": "cg", "t": "T", "r": "1", "so": 10, "q": 0, "rq": 3, "pt": 1000, "it": 60000, "b": "BQ=="}]})
    broker, (ack,) = popbodies.decode_batch_ack_body(body)
    assert broker == "broker-a" and ack.offsets == (10, 12) and ack.topic_type is TopicType.RETRY_V1
    assert ack.revive_qid == 3 and ack.group == "cg"
    long_names = orjson.dumps({"acks": [{"consumerGroup": "cg", "topic": "T", "retry": "0", "startOffset": 1,
                                         "queueId": 2, "reviveQueueId": 999, "popTime": 5, "invisibleTime": 6,
                                         "bitSet": "AQ=="}]})
    assert popbodies.decode_batch_ack_body(long_names)[1][0].offsets == (1,)


@given(st.lists(st.integers(min_value=0, max_value=4000), min_size=1, max_size=32, unique=True))
def test_batch_acks_round_trip(diffs: list[int]) -> None:
    ack = BatchAck("cg", "T", TopicType.NORMAL, 100, 1, 2, 3, 4, tuple(sorted(100 + d for d in diffs)))
    assert popbodies.decode_batch_ack_body(popbodies.encode_batch_ack_body("b", [ack])) == ("b", [ack])


@pytest.mark.parametrize("body", [b"", b"[]", b'{"acks": 3}', b'{"acks": [{"c": "g"}]}',
                                  b'{"acks": [{"c": "g", "t": "T", "so": 1, "q": 0, "rq": 1, "pt": 1, "it": 1,'
                                  b' "b": "%%"}]}'])
def test_malformed_bodies_are_refused(body: bytes) -> None:
    with pytest.raises(BodyError):
        popbodies.decode_batch_ack_body(body)


@given(st.binary(max_size=300))
def test_any_bytes_decode_or_are_refused(body: bytes) -> None:
    with contextlib.suppress(BodyError):
        popbodies.decode_batch_ack_body(body)

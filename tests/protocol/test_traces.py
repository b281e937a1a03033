"""The trace codec against bodies laid out as RocketMQ's TraceDataEncoder writes them.

The Java bodies below are written field by field the way ``encoderFromContextBean`` appends them
(``\\x01`` between fields, ``\\x02`` after each record; missing tags/keys appended as ``null``),
so a trace a Java client stored in a rocketq broker decodes the same as one of ours.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import traces
from rocketq.protocol.traces import ContextCode, MessageType, TraceFormatError, TraceRecord, TraceType

C, F = "\x01", "\x02"


def java(*fields: object) -> str:
    return C.join(str(f) for f in fields) + F


JAVA_PUB = java("Pub", 1625883640000, "DefaultRegion", "ProducerGroup", "TopicA", "AC1415116D1418B4AAC217FE1B4E0000",
                "TagA", "OrderID001", "127.0.0.1:10911", 1024, 12, 0, "0A0B0C0D00002A9F0000000000000123", "true")
JAVA_SUB_BEFORE = java("SubBefore", 1625883640100, "DefaultRegion", "ConsumerGroup", "0A0B0C0D5E5A18B4AAC2",
                       "AC1415116D1418B4AAC217FE1B4E0000", 2, "OrderID001")
JAVA_SUB_AFTER = java("SubAfter", "0A0B0C0D5E5A18B4AAC2", "AC1415116D1418B4AAC217FE1B4E0000", 35, "false",
                      "OrderID001", 4, 1625883640135)
JAVA_END_TX = java("EndTransaction", 1625883640200, "DefaultRegion", "TxGroup", "TopicT", "MSGID-TX", "null", "null",
                   "127.0.0.1:10911", 1, "TXID-1", "COMMIT_MESSAGE", "false")


def test_java_bodies_decode_field_by_field() -> None:
    pub, before, after, end = traces.decode((JAVA_PUB + JAVA_SUB_BEFORE + JAVA_SUB_AFTER + JAVA_END_TX).encode())
    assert pub == TraceRecord(type=TraceType.PUB, timestamp=1625883640000, region_id="DefaultRegion",
                              group="ProducerGroup", topic="TopicA", msg_id="AC1415116D1418B4AAC217FE1B4E0000",
                              tags="TagA", keys="OrderID001", store_host="127.0.0.1:10911", body_length=1024,
                              cost_time=12, msg_type=MessageType.NORMAL,
                              offset_msg_id="0A0B0C0D00002A9F0000000000000123", success=True)
    assert (before.type, before.group, before.request_id, before.retry_times, before.timestamp) == (
        TraceType.SUB_BEFORE, "ConsumerGroup", "0A0B0C0D5E5A18B4AAC2", 2, 1625883640100)
    assert (after.type, after.request_id, after.cost_time, after.success, after.context_code, after.timestamp) == (
        TraceType.SUB_AFTER, "0A0B0C0D5E5A18B4AAC2", 35, False, ContextCode.FAILED, 1625883640135)
    assert (end.type, end.tags, end.keys, end.transaction_id, end.transaction_state, end.from_transaction_check) == (
        TraceType.END_TRANSACTION, "", "", "TXID-1", "COMMIT_MESSAGE", False)


def test_older_java_layouts_decode() -> None:
    old_pub = java("Pub", 1, "R", "G", "T", "M", "null", "null", "h:1", 3, 4, 3, "true")  # 13 fields: no offsetMsgId
    old_after = java("SubAfter", "REQ", "M", 7, "true")  # 5 fields: no keys, no code, no time
    pub, after = traces.decode(old_pub + old_after)
    assert (pub.offset_msg_id, pub.success, pub.msg_type, pub.tags) == ("", True, MessageType.DELAY, "")
    assert (after.cost_time, after.success, after.keys, after.context_code) == (7, True, "", ContextCode.SUCCESS)


def test_rocketmq5_fields_decode() -> None:
    pub = java("Pub", 1, "R", "G", "T", "M", "t", "k", "h:1", 3, 4, 0, "OFF", "true", "10.0.0.9")
    after = java("SubAfter", "REQ", "M", 7, "true", "k", 0, 99, "CG")
    p, a = traces.decode(pub + after)
    assert p.client_host == "10.0.0.9"
    assert (a.timestamp, a.group) == (99, "CG")


def test_our_encoding_is_the_java_layout() -> None:
    record = traces.decode(JAVA_PUB)[0]
    assert traces.encode(record) == JAVA_PUB
    before = traces.decode(JAVA_SUB_BEFORE)[0]
    assert traces.encode(before) == JAVA_SUB_BEFORE
    end = traces.decode(JAVA_END_TX)[0]
    assert traces.encode(end) == JAVA_END_TX


def test_missing_keys_are_written_as_java_writes_null() -> None:
    text = traces.encode(TraceRecord(type=TraceType.SUB_BEFORE, msg_id="M", request_id="R", group="G"))
    assert text.split(C)[-1] == "null" + F  # a trailing empty field would break Java's split-based decoder


def test_index_keys_are_msg_ids_and_keys_once() -> None:
    records = [TraceRecord(type=TraceType.PUB, msg_id="M1", keys="K"), TraceRecord(type=TraceType.SUB_BEFORE,
                                                                                 msg_id="M1", keys="K"),
               TraceRecord(type=TraceType.PUB, msg_id="M2")]
    assert traces.index_keys(records) == ["M1", "K", "M2"]


@pytest.mark.parametrize("body", [
    java("Pub", "notanumber", "R", "G", "T", "M", "t", "k", "h", 1, 1, 0, "O", "true"),
    java("Pub", 1, "R"),
    java("SubBefore", 1, "R", "G", "REQ", "M", "x", "k"),
    java("Nope", 1),
])
def test_bad_records_raise_when_strict_and_are_skipped_otherwise(body: str) -> None:
    with pytest.raises(TraceFormatError):
        traces.decode(body + JAVA_PUB)
    assert [r.msg_id for r in traces.decode(body + JAVA_PUB, strict=False)] == ["AC1415116D1418B4AAC217FE1B4E0000"]


def test_non_utf8_body() -> None:
    with pytest.raises(TraceFormatError):
        traces.decode(b"\xff\xfe" + JAVA_PUB.encode())
    assert len(traces.decode(b"\xff" + F.encode() + JAVA_PUB.encode(), strict=False)) == 1


def test_separator_inside_a_field_is_refused() -> None:
    with pytest.raises(TraceFormatError):
        traces.encode(TraceRecord(type=TraceType.PUB, msg_id="M", topic="a\x02b"))


field = st.text(alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=20)
nonempty = field.filter(lambda t: t not in ("", traces.NULL))


@st.composite
def records(draw: st.DrawFn) -> TraceRecord:
    kind = draw(st.sampled_from(list(TraceType)))
    common = {"msg_id": draw(nonempty), "keys": draw(st.one_of(st.just(""), nonempty))}
    ints = st.integers(0, 2**62)
    if kind is TraceType.PUB:
        return TraceRecord(type=kind, timestamp=draw(ints), region_id=draw(field), group=draw(field),
                           topic=draw(field), tags=draw(st.one_of(st.just(""), nonempty)), store_host=draw(field),
                           body_length=draw(ints), cost_time=draw(ints), msg_type=draw(st.sampled_from(MessageType)),
                           offset_msg_id=draw(field), success=draw(st.booleans()),
                           client_host=draw(st.one_of(st.just(""), nonempty)), **common)
    if kind is TraceType.SUB_BEFORE:
        return TraceRecord(type=kind, timestamp=draw(ints), region_id=draw(field), group=draw(field),
                           request_id=draw(field), retry_times=draw(st.integers(0, 16)), **common)
    if kind is TraceType.SUB_AFTER:
        return TraceRecord(type=kind, request_id=draw(field), cost_time=draw(ints), success=draw(st.booleans()),
                           context_code=draw(st.sampled_from(ContextCode)), timestamp=draw(ints),
                           group=draw(st.one_of(st.just(""), nonempty)), **common)
    return TraceRecord(type=kind, timestamp=draw(ints), region_id=draw(field), group=draw(field), topic=draw(field),
                       tags=draw(st.one_of(st.just(""), nonempty)), store_host=draw(field),
                       msg_type=draw(st.sampled_from(MessageType)), transaction_id=draw(field),
                       transaction_state=draw(nonempty), from_transaction_check=draw(st.booleans()), **common)


@given(st.lists(records(), max_size=5))
def test_round_trip(batch: list[TraceRecord]) -> None:
    assert traces.decode(traces.encode_batch(batch)) == batch


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash_the_lenient_decoder(body: bytes) -> None:
    for record in traces.decode(body, strict=False):
        assert isinstance(record, TraceRecord)

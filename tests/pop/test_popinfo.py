"""extraInfo and the POP offset infos: RocketMQ's exact texts, round trips, and garbage refused
with PopInfoError (never another exception)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import popinfo
from rocketq.protocol.popinfo import ExtraInfo, PopInfoError, TopicType

longs = st.integers(min_value=0, max_value=(1 << 63) - 1)
ints = st.integers(min_value=0, max_value=(1 << 31) - 1)
names = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF, exclude_characters=" ;"), min_size=1,
                max_size=20)
kinds = st.sampled_from(list(TopicType))


def test_extra_info_is_rocketmqs_eight_fields() -> None:
    extra = ExtraInfo(5, 1700000000000, 60000, 3, TopicType.RETRY_V1, "broker-a", 0, 7)
    assert extra.build() == "5 1700000000000 60000 3 1 broker-a 0 7"
    assert not extra.orderly and extra.next_visible_time == 1700000060000
    # the gRPC proxy's receipt handle appends the CommitLog offset: the first eight fields still parse
    assert ExtraInfo.parse(extra.build() + " 123456") == extra


@given(longs, longs, longs, ints, kinds, names, ints, longs)
def test_extra_info_round_trips(so: int, pt: int, it: int, rq: int, kind: TopicType, broker: str, qid: int,
                                offset: int) -> None:
    extra = ExtraInfo(so, pt, it, rq, kind, broker, qid, offset)
    assert ExtraInfo.parse(extra.build()) == extra


@given(st.text(max_size=200))
def test_any_text_parses_or_is_refused_cleanly(text: str) -> None:
    for parse in (ExtraInfo.parse, popinfo.parse_start_offset_info, popinfo.parse_msg_offset_info,
                  popinfo.parse_order_count_info):
        with contextlib.suppress(PopInfoError):
            parse(text)


@pytest.mark.parametrize("text", ["1 2 3 4 0 b 6", "1 2 3 4 9 b 6 7", "x 2 3 4 0 b 6 7", "1_0 2 3 4 0 b 6 7",
                                  " 1 2 3 4 0 b 6 7", "9223372036854775808 2 3 4 0 b 6 7"])
def test_malformed_extra_info_is_refused(text: str) -> None:
    with pytest.raises(PopInfoError):
        ExtraInfo.parse(text)


def test_retry_topic_names_and_types() -> None:
    assert popinfo.pop_retry_topic("Orders", "cg") == "%RETRY%cg_Orders"
    assert popinfo.pop_retry_topic("Orders", "cg", v2=True) == "%RETRY%cg+Orders"
    assert popinfo.topic_type("Orders") is TopicType.NORMAL
    assert popinfo.topic_type("%RETRY%cg_Orders") is TopicType.RETRY_V1
    assert popinfo.topic_type("%RETRY%cg+Orders") is TopicType.RETRY_V2
    assert popinfo.real_topic(TopicType.RETRY_V2, "Orders", "cg") == "%RETRY%cg+Orders"
    assert popinfo.real_topic(TopicType.NORMAL, "Orders", "cg") == "Orders"


def test_offset_infos_as_rocketmq_writes_them() -> None:
    assert popinfo.build_start_offset_info([("T", 0, 5), ("%RETRY%g_T", 0, 2)]) == "0 0 5;1 0 2"
    assert popinfo.build_msg_offset_info([("T", 3, [5, 6, 9])]) == "0 3 5,6,9"
    assert popinfo.build_order_count_info([("T", 1, 17, 2)]) == "0 qo1%17 2"
    assert popinfo.parse_order_count_info("0 qo1%17 2;0 4 1") == {(TopicType.NORMAL, 1, 17): 2,
                                                                   (TopicType.NORMAL, 4, None): 1}


@given(st.lists(st.tuples(kinds, ints, st.lists(longs, min_size=1, max_size=32)), max_size=8, unique_by=lambda e:
                (e[0], e[1])))
def test_offset_infos_round_trip(entries: list[tuple[TopicType, int, list[int]]]) -> None:
    topic = {TopicType.NORMAL: "T", TopicType.RETRY_V1: "%RETRY%g_T", TopicType.RETRY_V2: "%RETRY%g+T"}
    starts = [(topic[k], q, offsets[0]) for k, q, offsets in entries]
    msgs = [(topic[k], q, offsets) for k, q, offsets in entries]
    assert popinfo.parse_start_offset_info(popinfo.build_start_offset_info(starts)) == {
        (k, q): offsets[0] for k, q, offsets in entries}
    assert popinfo.parse_msg_offset_info(popinfo.build_msg_offset_info(msgs)) == {
        (k, q): offsets for k, q, offsets in entries}
    counts = [(topic[k], q, offsets[0], len(offsets)) for k, q, offsets in entries]
    assert popinfo.parse_order_count_info(popinfo.build_order_count_info(counts)) == {
        (k, q, offsets[0]): len(offsets) for k, q, offsets in entries}

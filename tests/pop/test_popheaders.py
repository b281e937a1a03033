"""POP request and response headers: RocketMQ's wire names, Java's lenient booleans and ints,
and any extFields either parsing or failing with HeaderError."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import popheaders
from rocketq.protocol.headers import HeaderError
from rocketq.protocol.popheaders import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)

JAVA_POP = {"consumerGroup": "cg", "topic": "T", "queueId": "-1", "maxMsgNums": "32", "invisibleTime": "60000",
            "pollTime": "20000", "bornTime": "1700000000000", "initMode": "1", "expType": "TAG", "exp": "*",
            "order": "false", "attemptId": "a-1"}


def test_pop_request_as_the_java_client_sends_it() -> None:
    header = PopMessageRequestHeader.from_ext(JAVA_POP)
    assert (header.queue_id, header.max_msg_nums, header.invisible_time, header.poll_time) == (-1, 32, 60000, 20000)
    assert header.init_mode == popheaders.INIT_MODE_MAX and header.order is False and header.attempt_id == "a-1"
    assert header.to_ext() == JAVA_POP


@pytest.mark.parametrize("value, expected", [("true", True), ("TRUE", True), ("1", False), ("", False)])
def test_order_is_read_as_javas_parse_boolean(value: str, expected: bool) -> None:
    assert PopMessageRequestHeader.from_ext({**JAVA_POP, "order": value}).order is expected


@pytest.mark.parametrize("field, value", [("queueId", "2147483648"), ("initMode", "x"), ("invisibleTime", "1.5"),
                                          ("maxMsgNums", " 3")])
def test_malformed_numbers_name_the_field(field: str, value: str) -> None:
    with pytest.raises(HeaderError, match=field):
        PopMessageRequestHeader.from_ext({**JAVA_POP, field: value})


def test_ack_and_change_invisible_headers() -> None:
    ack = {"consumerGroup": "cg", "topic": "%RETRY%cg_T", "queueId": "0", "extraInfo": "0 1 2 3 1 b 0 0",
           "offset": "0"}
    assert AckMessageRequestHeader.from_ext(ack).to_ext() == ack
    change = {**ack, "invisibleTime": "10000"}
    assert ChangeInvisibleTimeRequestHeader.from_ext(change).invisible_time == 10000
    with pytest.raises(HeaderError, match="extraInfo"):
        AckMessageRequestHeader.from_ext({k: v for k, v in ack.items() if k != "extraInfo"})
    answer = ChangeInvisibleTimeResponseHeader(pop_time=1, invisible_time=2, revive_qid=3).to_ext()
    assert answer == {"popTime": "1", "invisibleTime": "2", "reviveQid": "3"}


def test_pop_response_leaves_absent_infos_out() -> None:
    ext = PopMessageResponseHeader(pop_time=5, invisible_time=6, revive_qid=999, rest_num=0,
                                   start_offset_info="0 0 1").to_ext()
    assert ext == {"popTime": "5", "invisibleTime": "6", "reviveQid": "999", "restNum": "0",
                   "startOffsetInfo": "0 0 1"}


@given(st.dictionaries(st.sampled_from(sorted(JAVA_POP)), st.text(max_size=30)))
def test_any_ext_fields_parse_or_fail_with_header_error(ext: dict[str, str]) -> None:
    for kind in (PopMessageRequestHeader, AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader,
                 PopMessageResponseHeader):
        with contextlib.suppress(HeaderError):
            kind.from_ext({**JAVA_POP, **ext})

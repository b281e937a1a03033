"""A stored send's answer read straight into its SendResult (``sending.answer_result``).

The C twin (native/clientsend.c) must give what the pure function (``from_ext`` of the answer
header, then the result) gives for any extFields: the same result, field for field and type
for type, or the same HeaderError. ``send_result_at`` (the result read from the answer's frame,
C and pure) must give what that existing path gives for the extFields ``stored_answer_at``
reads from the same frame. ``send_answer`` must give what ``to_result(send_reply(...))``
gives, errors included.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client import sending, wire
from rocketq.client.errors import BrokerError, ProtocolError
from rocketq.client.queues import MessageQueue
from rocketq.protocol import nativecodecs
from rocketq.protocol.frames import RESPONSE_FLAG, RemotingCommand
from rocketq.protocol.headers import HeaderError
from rocketq.protocol.messagetypes import Message
from rocketq.protocol.requests import SendStatus
from rocketq.remoting import storedanswers

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

numbers = st.one_of(st.integers(0, 10**20).map(str), st.integers(-(10**10), 10**10).map(str),
                    st.sampled_from(["", "0", "3", "007", "+3", "-0", "2147483647", "2147483648", "9" * 18,
                                     "9" * 19, "\u0661", "1_0", " 1", "x"]),
                    st.none(), st.integers(0, 5))
texts = st.one_of(st.text(max_size=6), st.none(), st.integers(0, 3))
exts = st.fixed_dictionaries({}, optional={"msgId": texts, "queueId": numbers, "queueOffset": numbers,
                                          "MSG_REGION": texts, "transactionId": texts, "TRACE_ON": texts})
queues = st.builds(MessageQueue, st.just("T"), st.just("broker-a"), st.one_of(st.integers(0, 4), st.just(7)))


def _outcome(function: Any, ext: dict[str, Any], mq: MessageQueue) -> Any:
    try:
        result = function(ext, SendStatus.SEND_OK, "K", mq)
    except (HeaderError, AttributeError, TypeError) as exc:  # what from_ext raises for odd values
        return type(exc), str(exc)
    return [(name, value, type(value)) for name, value in
            ((f, getattr(result, f)) for f in ("status", "msg_id", "offset_msg_id", "message_queue",
                                               "queue_offset", "region_id"))]


@needs_native
@settings(max_examples=500, deadline=None)
@given(exts, queues)
def test_the_native_answer_is_the_pure_one(ext: dict[str, Any], mq: MessageQueue) -> None:
    pure = nativecodecs.pure(sending.answer_result)
    assert pure is not sending.answer_result
    assert _outcome(sending.answer_result, ext, mq) == _outcome(pure, ext, mq)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0, 10, 11, 12, 1, 17]), exts, queues)
def test_send_answer_is_send_reply_then_to_result(code: int, ext: dict[str, Any], mq: MessageQueue) -> None:
    response = RemotingCommand(code=code, flag=RESPONSE_FLAG, opaque=1, remark="why", ext_fields=ext)
    out = sending.prepare(Message("T", b"x"), sending.ProducerSettings())

    def outcome(function: Any) -> Any:
        try:
            return function()
        except (BrokerError, ProtocolError, AttributeError, TypeError) as exc:
            return type(exc), str(exc)

    assert (outcome(lambda: sending.send_answer(response, "a:1", out, mq))
            == outcome(lambda: sending.to_result(wire.send_reply(response, "a:1"), out, mq)))


def test_the_common_answer() -> None:
    mq = MessageQueue("T", "broker-a", 3)
    ext = {"msgId": "7F00000100002A9F0000000000000000", "queueId": "3", "queueOffset": "41",
           "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    result = sending.answer_result(ext, SendStatus.SEND_OK, "K", mq)
    assert (result.msg_id, result.offset_msg_id, result.message_queue, result.queue_offset, result.region_id) == (
        "K", "7F00000100002A9F0000000000000000", mq, 41, "DefaultRegion")
    moved = sending.answer_result({**ext, "queueId": "5"}, SendStatus.SEND_OK, "K", mq)
    assert moved.message_queue == MessageQueue("T", "broker-a", 5)


MAX_FRAME = 1 << 20
ANSWER_HEADERS = [  # the header a broker writes, then what it never writes: the pure reading decides
    b'{"code":0,"extFields":{"msgId":"AB","queueId":"3","queueOffset":"12","MSG_REGION":"R"},"flag":1,"opaque":5}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"A\\u0042","queueId":"3","queueOffset":"12"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"A\\"B","queueId":"3","queueOffset":"1"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB", "queueId":"3","queueOffset":"12"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","msgId":"CD","queueId":"3","queueOffset":"1"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueId":"3","queueId":"4","queueOffset":"1"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueId":3,"queueOffset":"12"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueId":"3","queueOffset":12}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":null,"queueId":"3","queueOffset":"12"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"queueId":"3","queueOffset":"12"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueOffset":"12"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueId":"3"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"","queueId":"","queueOffset":"12"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueId":"03","queueOffset":"+1"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueId":"3","queueOffset":"1","MSG_REGION":"\xc3\xa9"}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueId":"3","queueOffset":"1","MSG_REGION":null}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{"msgId":"AB","queueId":"3","queueOffset":"1"},"extFields":{}}',
    b'{"code":0,"flag":1,"opaque":5,"extFields":{}}',
]


def _frame_outcome(function: Any, data: bytes, pos: int, end: int, mq: MessageQueue) -> Any:
    return _outcome(lambda _ext, status, msg_id, queue: function(data, pos, end, status, msg_id, queue), {}, mq)


def _same_result_at(data: bytes, pos: int, mq: MessageQueue) -> None:
    """send_result_at (C and pure) on the answer at ``pos`` gives the existing path's outcome."""
    found = storedanswers.stored_answer_at(data, pos, MAX_FRAME)
    if found is None:
        return  # not a SUCCESS answer: the connection's general path, never send_result_at
    reference = _outcome(sending.answer_result, found[1], mq)
    assert storedanswers.answer_at(data, pos, MAX_FRAME) == (found[0], found[2])
    # the C answer_at leaves its reading for the send_result_at of that frame; a second call reads again
    assert _frame_outcome(sending.send_result_at, data, pos, found[2], mq) == reference
    assert _frame_outcome(sending.send_result_at, data, pos, found[2], mq) == reference
    assert _frame_outcome(nativecodecs.pure(sending.send_result_at), data, pos, found[2], mq) == reference


@settings(max_examples=500, deadline=None)
@given(exts, queues, st.binary(max_size=3))
def test_the_result_read_from_the_frame_is_the_existing_one(ext: dict[str, Any], mq: MessageQueue,
                                                           tail: bytes) -> None:
    frame = RemotingCommand(code=0, flag=RESPONSE_FLAG, opaque=5, ext_fields=ext).encode()
    _same_result_at(b"xy" + frame + tail, 2, mq)


@given(st.sampled_from(ANSWER_HEADERS), queues)
def test_unusual_answers_read_from_the_frame_as_the_existing_path(header: bytes, mq: MessageQueue) -> None:
    _same_result_at(struct.pack(">iI", 4 + len(header), len(header)) + header, 0, mq)


def test_a_broker_answer_read_from_its_frame() -> None:
    header = ANSWER_HEADERS[0]
    frame = struct.pack(">iI", 4 + len(header), len(header)) + header
    mq = MessageQueue("T", "broker-a", 3)
    result = sending.send_result_at(frame, 0, len(frame), SendStatus.SEND_OK, "K", mq)
    assert (result.offset_msg_id, result.message_queue, result.queue_offset, result.region_id) == ("AB", mq, 12, "R")
    other = sending.send_result_at(frame, 0, len(frame), SendStatus.SEND_OK, "K", MessageQueue("T", "broker-a", 1))
    assert other.message_queue == mq  # the broker's queue, as answer_result gives it
    with pytest.raises(HeaderError):
        sending.send_result_at(frame, 0, len(frame) - 1, SendStatus.SEND_OK, "K", mq)  # not the whole frame

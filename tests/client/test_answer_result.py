"""A stored send's answer read straight into its SendResult (``sending.answer_result``).

The C twin (native/clientsend.c) must give what the pure function (``from_ext`` of the answer
header, then the result) gives for any extFields: the same result, field for field and type
for type, or the same HeaderError. ``send_answer`` must give what ``to_result(send_reply(...))``
gives, errors included.
"""

from __future__ import annotations

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

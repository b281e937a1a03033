"""The pipelined send's short cuts give what the general path gives.

``sending.send_ext`` builds SEND_MESSAGE_V2's extFields without a header object; the frame it
makes must be byte-identical to ``wire.send_request(sending.header(...))``'s. The send-topic
check remembers valid names; invalid ones must still be refused every time.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import replies, sending, wire
from rocketq.client.errors import MessageError
from rocketq.client.messages import Message
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ProducerSettings
from rocketq.protocol import messageproperties
from rocketq.protocol.codes import AUTO_CREATE_TOPIC_KEY, RequestCode

SETTINGS = ProducerSettings(namesrv_addr="127.0.0.1:9876")
NAMES = st.text(alphabet="abcXYZ019_-%|", min_size=1, max_size=20)


@given(
    group=NAMES, topic=NAMES, queue_id=st.integers(0, 1023), sys_flag=st.integers(0, 255),
    flag=st.integers(-(1 << 31), (1 << 31) - 1), properties=st.text(max_size=40), batch=st.booleans(),
    create_topic_key=NAMES, queue_nums=st.integers(1, 64),
)
def test_send_ext_encodes_as_the_header_does(group: str, topic: str, queue_id: int, sys_flag: int, flag: int,
                                             properties: str, batch: bool, create_topic_key: str,
                                             queue_nums: int) -> None:
    settings = dataclasses.replace(SETTINGS, create_topic_key=create_topic_key,
                                   default_topic_queue_nums=queue_nums)
    out = sending.Outgoing(topic, b"body", sys_flag, flag, properties, "ID", batch=batch)
    mq = MessageQueue(topic, "broker-a", queue_id)
    ext = sending.send_ext(out, group, mq, settings)
    header = dataclasses.replace(sending.header(out, group, mq, settings), born_timestamp=int(ext["g"]))
    fast = wire.send_v2_request(ext, out.body, reply=False)
    general = wire.send_request(header, out.body, batch=batch)
    if batch:
        general.code = fast.code  # the batch code is send_request's; the fields must still agree
    assert list(fast.ext_fields.items()) == list(general.ext_fields.items())
    assert fast.encode() == general.encode()


def test_a_reply_message_is_sent_with_the_reply_code() -> None:
    msg = Message("T", b"answer")
    msg.properties[messageproperties.MSG_TYPE] = replies.REPLY_MESSAGE_FLAG
    out = sending.prepare(msg, SETTINGS)
    assert out.reply
    request = wire.send_v2_request(sending.send_ext(out, "g", MessageQueue("T", "b", 0), SETTINGS), out.body,
                                   reply=out.reply)
    assert request.code == RequestCode.SEND_REPLY_MESSAGE_V2
    assert not sending.prepare(Message("T", b"plain"), SETTINGS).reply


def test_a_remembered_topic_does_not_let_bad_topics_through() -> None:
    sending.prepare(Message("GoodTopic", b"x"), SETTINGS)
    sending.prepare(Message("GoodTopic", b"x"), SETTINGS)  # remembered: still fine
    for bad in ("bad topic", "", AUTO_CREATE_TOPIC_KEY, "x" * 200):
        for _ in range(2):  # refused, and not remembered as valid
            with pytest.raises(MessageError):
                sending.prepare(Message(bad, b"x"), SETTINGS)


def test_the_remembered_topics_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sending, "_checked_topics", set())
    for i in range(sending.MAX_CHECKED_TOPICS + 5):
        sending.check(Message(f"T{i}", b"x"), SETTINGS)
    assert len(sending._checked_topics) <= sending.MAX_CHECKED_TOPICS

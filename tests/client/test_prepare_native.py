"""A single message's ``Outgoing`` in one C call (``sending.prepare``'s native twin).

The C twin must give what the pure ``prepare`` gives for any message: the same ``Outgoing``
(the unique key aside: each call draws a new one, so the keys are compared by where they are),
the message's properties stamped the same way, or the same error with the message as it was.
Messages here are plain (the C path) and not (a key of the caller's, properties with
separators or of other types, bodies over the limit or to compress, odd flags, subclasses,
unchecked topics), so both the C path and its hand-over to the pure function are covered.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client import messages, replies, sending
from rocketq.client.settings import ProducerSettings
from rocketq.protocol import messageproperties, nativecodecs
from rocketq.protocol.messagetypes import Message

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

UNIQ = messageproperties.UNIQ_KEY
SETTINGS = ProducerSettings(max_message_size=64, compress_msg_body_over_howmuch=48)


class _OwnMessage(Message):
    __slots__ = ()


texts = st.one_of(st.text(max_size=6), st.sampled_from(["", "a\x01b", "c\x02", "é", "日本", "x" * 40]))
odd_maps = st.dictionaries(
    st.one_of(texts, st.sampled_from([UNIQ, messageproperties.MSG_TYPE, "TAGS"])),
    st.one_of(texts, st.just(replies.REPLY_MESSAGE_FLAG), st.just(""), st.integers(0, 2)), max_size=5)
plain_maps = st.dictionaries(st.sampled_from([messageproperties.MSG_TYPE, "TAGS", "KEYS", "é"]),
                             st.sampled_from([replies.REPLY_MESSAGE_FLAG, "t", "日本", "reply2"]), max_size=3)
prop_maps = st.one_of(plain_maps, odd_maps)
bodies = st.one_of(st.binary(max_size=80), st.builds(bytearray, st.binary(min_size=1, max_size=8)))
flags = st.one_of(st.integers(-(1 << 31), (1 << 31) - 1), st.sampled_from([1 << 31, -(1 << 31) - 1, 1 << 70]),
                  st.just(True))
topics = st.sampled_from(["TopicA", "TopicB", "bad topic!", "%RETRY%g"])
classes = st.sampled_from([Message, messages.Message, _OwnMessage])


def _outcome(prepare: Any, msg: Message) -> tuple[Any, dict[Any, Any]]:
    """What ``prepare`` made of ``msg`` with its new key written as ``<KEY>``, and the map after."""
    before = dict(msg.properties)
    try:
        out = prepare(msg, SETTINGS)
    except sending.MessageError as exc:
        return ("MessageError", str(exc)), msg.properties
    fields = dataclasses.asdict(out)
    key = msg.properties[UNIQ]
    if before.get(UNIQ) != key:  # a key drawn by this call: compared by where it is
        assert out.msg_id == key
        fields["msg_id"] = "<KEY>"
        fields["properties"] = out.properties.replace(key, "<KEY>")
        after = {name: "<KEY>" if name == UNIQ else value for name, value in msg.properties.items()}
        return fields, after
    return fields, msg.properties


def _message(cls: type[Message], topic: str, body: Any, flag: Any, props: dict[Any, Any]) -> Message:
    msg = Message.__new__(cls)
    msg.topic, msg.body, msg.flag, msg.properties = topic, body, flag, dict(props)
    return msg


@needs_native
@settings(max_examples=500, deadline=None)
@given(classes, topics, bodies, flags, prop_maps)
def test_the_native_prepare_is_the_pure_one(cls: type[Message], topic: str, body: Any, flag: Any,
                                            props: dict[Any, Any]) -> None:
    pure = nativecodecs.pure(sending.prepare)
    assert pure is not sending.prepare
    for checked in ("TopicA", "TopicB"):
        sending._check_send_topic(checked)  # "TopicA"/"TopicB" checked, the others each time
    native_result = _outcome(sending.prepare, _message(cls, topic, body, flag, props))
    pure_result = _outcome(pure, _message(cls, topic, body, flag, props))
    assert native_result == pure_result
    assert list(native_result[1]) == list(pure_result[1])  # the key's place in the map too


def test_a_plain_message_is_stamped_last_and_its_outgoing_complete() -> None:
    msg = messages.Message("TopicA", b"hello", tags="t")
    msg.properties[messageproperties.MSG_TYPE] = replies.REPLY_MESSAGE_FLAG
    out = sending.prepare(msg, SETTINGS)
    assert list(msg.properties) == [messageproperties.TAGS, messageproperties.MSG_TYPE, UNIQ]
    assert out == sending.Outgoing("TopicA", b"hello", 0, 0, messageproperties.encode_properties(msg.properties),
                                   msg.properties[UNIQ], False, True)
    assert sending.prepare(msg, SETTINGS).msg_id == out.msg_id  # a key of the caller's is kept


def test_keys_are_new_for_each_message() -> None:
    keys = {sending.prepare(Message("TopicA", b"x"), SETTINGS).msg_id for _ in range(100)}
    assert len(keys) == 100


@needs_native
@pytest.mark.parametrize("unset", ["topic", "body", "flag", "properties"])
def test_a_message_with_an_empty_slot_fails_as_the_pure_prepare_fails(unset: str) -> None:
    def outcome(prepare: Any) -> tuple[type[BaseException], str]:
        msg = _message(messages.Message, "TopicA", b"x", 0, {})
        delattr(msg, unset)
        with pytest.raises(Exception) as caught:
            prepare(msg, SETTINGS)
        return caught.type, str(caught.value)

    sending._check_send_topic("TopicA")
    assert outcome(sending.prepare) == outcome(nativecodecs.pure(sending.prepare))

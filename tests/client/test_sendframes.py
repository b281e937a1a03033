"""``wire.SendFrames`` makes the frames the general encoder makes, byte for byte.

The producer's single-message sends are encoded from a per-topic template; any difference
from ``send_v2_request(send_ext(...)).encode()`` would be a different wire format.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import sending, wire
from rocketq.client.errors import MessageError
from rocketq.client.messages import Message
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ProducerSettings
from rocketq.protocol import messageproperties, nativecodecs

SETTINGS = ProducerSettings(namesrv_addr="127.0.0.1:9876")
NAMES = st.text(alphabet="abcXYZ019_-%|", min_size=1, max_size=30)
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
INT64_EDGES = (-(1 << 63), -(1 << 63) + 1, (1 << 63) - 1, -1, 0, 9, 10, -10, 10**18, -(10**18))
"""Where a hand-written decimal writer goes wrong: the sign of the smallest long long, powers of ten."""


@given(
    group=NAMES, topic=NAMES, create_topic_key=NAMES, queue_nums=st.integers(1, 1 << 16),
    opaque=st.integers(0, (1 << 31) - 1), queue_id=st.integers(0, 1 << 16), sys_flag=INT32, flag=INT32,
    born=st.integers(0, 1 << 62), properties=st.text(max_size=60), body=st.binary(max_size=64),
)
def test_a_template_frame_is_the_general_frame(group: str, topic: str, create_topic_key: str, queue_nums: int,
                                               opaque: int, queue_id: int, sys_flag: int, flag: int, born: int,
                                               properties: str, body: bytes) -> None:
    settings = ProducerSettings(namesrv_addr="127.0.0.1:9876", create_topic_key=create_topic_key,
                                default_topic_queue_nums=queue_nums)
    out = sending.Outgoing(topic, body, sys_flag, flag, properties, "ID")
    ext = sending.send_ext(out, group, MessageQueue(topic, "broker-a", queue_id), settings)
    ext["g"] = str(born)
    request = wire.send_v2_request(ext, body, reply=False)
    request.opaque = opaque
    template = wire.SendFrames(group, topic, create_topic_key, queue_nums)
    assert template.frame(opaque, queue_id, sys_flag, born, flag, properties, body) == request.encode()


def test_the_template_is_the_header_path_too() -> None:
    settings = ProducerSettings(namesrv_addr="127.0.0.1:9876")
    out = sending.Outgoing("T%d", b"body", 0, 7, "UNIQ_KEY\x01K\x02", "K")
    mq = MessageQueue("T%d", "broker-a", 3)
    header = sending.header(out, "g%s", mq, settings)
    request = wire.send_request(dataclasses.replace(header, born_timestamp=99), out.body, batch=False)
    request.opaque = 5
    template = wire.SendFrames("g%s", "T%d", settings.create_topic_key, settings.default_topic_queue_nums)
    assert template.frame(5, 3, 0, 99, 7, out.properties, out.body) == request.encode()


PROPERTY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(properties=st.dictionaries(PROPERTY_TEXT, PROPERTY_TEXT, max_size=5), key=st.sampled_from([None, "", "K1"]))
def test_prepared_properties_are_the_stamped_map_encoded(properties: dict[str, str], key: str | None) -> None:
    """``prepare`` gives ``encode_properties`` of the message's final properties, or refuses
    them (MessageError) leaving the message as it was."""
    msg = Message("T", b"body", properties=dict(properties))
    if key is not None:
        msg.properties[messageproperties.UNIQ_KEY] = key
    before = dict(msg.properties)
    try:
        out = sending.prepare(msg, SETTINGS)
    except MessageError:
        assert msg.properties == before
        assert list(msg.properties) == list(before)
        return
    assert out.properties == messageproperties.encode_properties(msg.properties)
    assert out.msg_id == msg.properties[messageproperties.UNIQ_KEY]
    assert out.msg_id == (key or out.msg_id)
    if not key:
        assert out.msg_id and list(msg.properties) == [*before, *([] if key == "" else [messageproperties.UNIQ_KEY])]


def test_an_empty_unique_key_is_replaced_where_it_was() -> None:
    """Before, the new key was appended to the text after the empty entry: UNIQ_KEY twice."""
    msg = Message("T", b"body", properties={messageproperties.UNIQ_KEY: "", "A": "1"})
    out = sending.prepare(msg, SETTINGS)
    assert out.properties == f"UNIQ_KEY\x01{out.msg_id}\x02A\x011\x02"


@pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")
@given(opaque=st.one_of(INT32, st.integers(-(1 << 70), 1 << 70), st.booleans()),
       ints=st.lists(st.one_of(INT32, INT64, st.sampled_from(INT64_EDGES)), min_size=4, max_size=4),
       properties=st.one_of(st.text(max_size=40), st.text(alphabet="\x00\x01\x02\x1f\"\\\b\t\n\f\r\x7fa", max_size=20)),
       body=st.one_of(st.binary(max_size=32), st.just(bytearray(b"ba"))))
def test_the_native_frame_is_the_pure_one(opaque: int, ints: list[int], properties: str, body: bytes) -> None:
    """The C frame writer (native/clientsend.c) against the pure one: control characters, quotes
    and backslashes escaped as orjson escapes them, non-ASCII text, ints past 64 bits and at
    their edges, bools."""
    pieces = wire.SendFrames("g%", "T", "TBW102", 4).pieces
    pure = nativecodecs.pure(wire.send_frame_of)
    assert wire.send_frame_of(pieces, opaque, *ints, properties, body) == pure(pieces, opaque, *ints, properties, body)

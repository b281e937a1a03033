"""The producer's unique key and properties text in one call (``sending.stamp_unique_key``).

Its C twin (native/clientsend.c) must give what the pure function gives for any map: the same
text, the same map afterwards (the key where an entry was, else last), or the same MessageError
with the map as it was. Maps here have names and values with the separators, empty names,
non-ASCII text, other types, an existing (empty or set) UNIQ_KEY, and limits near the text's size.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client import sending
from rocketq.client.errors import MessageError
from rocketq.protocol import messageproperties, nativecodecs
from rocketq.protocol.messagetypes import Message

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

UNIQ = messageproperties.UNIQ_KEY
texts = st.one_of(st.text(max_size=8), st.sampled_from(["", "a\x01b", "c\x02", "é", "日本", "\U0001f600", "x" * 40]))
names = st.one_of(texts, st.just(UNIQ))
maps = st.dictionaries(names, st.one_of(texts, texts, st.integers(0, 3)), max_size=5)
keys = st.one_of(st.just("7F0000010000ABCDEF0123456789"), texts)
limits = st.one_of(st.integers(0, 120), st.just(messageproperties.MAX_PROPERTIES_LENGTH))


def _outcome(stamp: Any, props: dict[Any, Any], key: str, limit: int) -> tuple[Any, list[tuple[Any, Any]]]:
    try:
        result: Any = stamp(props, key, limit)
    except MessageError as exc:
        result = ("MessageError", str(exc))
    return result, list(props.items())


@needs_native
@settings(max_examples=400, deadline=None)
@given(maps, keys, limits)
def test_the_native_stamp_is_the_pure_one(props: dict[Any, Any], key: str, limit: int) -> None:
    pure = nativecodecs.pure(sending.stamp_unique_key)
    assert pure is not sending.stamp_unique_key
    assert _outcome(sending.stamp_unique_key, dict(props), key, limit) == _outcome(pure, dict(props), key, limit)


@given(st.dictionaries(st.text(min_size=1).filter(lambda t: "\x01" not in t and "\x02" not in t),
                       st.text().filter(lambda t: "\x01" not in t and "\x02" not in t), max_size=4))
def test_the_stamped_text_is_the_stamped_map_encoded(props: dict[str, str]) -> None:
    text = sending.stamp_unique_key(props, "K1", messageproperties.MAX_PROPERTIES_LENGTH)
    assert props[UNIQ] == "K1"
    assert text == messageproperties.encode_properties(props)


def test_a_refused_map_is_left_as_it_was() -> None:
    props = {"a": "x\x01y", UNIQ: ""}
    with pytest.raises(MessageError):
        sending.stamp_unique_key(props, "K1", messageproperties.MAX_PROPERTIES_LENGTH)
    assert list(props.items()) == [("a", "x\x01y"), (UNIQ, "")]


def test_non_ascii_text_is_measured_in_utf8_bytes() -> None:
    props = {"k": "日" * 10}  # 30 UTF-8 bytes, 10 characters
    text_length = len(f"k\x01{'日' * 10}\x02{UNIQ}\x01K\x02".encode())
    with pytest.raises(MessageError, match=f"exceed {text_length - 1} bytes"):
        sending.stamp_unique_key(props, "K", text_length - 1)
    assert props == {"k": "日" * 10}
    assert sending.stamp_unique_key(props, "K", text_length).endswith(f"{UNIQ}\x01K\x02")


def test_prepare_stamps_through_it() -> None:
    settings_ = sending.ProducerSettings()
    msg = Message("TopicA", b"x", properties={"TAGS": "t"})
    out = sending.prepare(msg, settings_)
    assert out.properties == f"TAGS\x01t\x02{UNIQ}\x01{out.msg_id}\x02"
    assert msg.properties[UNIQ] == out.msg_id

"""A FOUND pull answer read in place (native/pullanswer.c, ``pulling.found_at``) against the
general path it stands in for: the frame decoded into a command, ``wire.pull_header`` and
``pulling.found_messages``. For any frame the in-place reading takes, the general path reads
the same opaque, offsets, suggested broker and messages; everything else it leaves alone (None),
and the general path then reads or rejects the frame as it always did."""

from __future__ import annotations

import re
import string
import zlib
from typing import Any

import orjson
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from rocketq.client import pulling, wire
from rocketq.client.errors import ProtocolError
from rocketq.protocol import nativecodecs, storedrecords, subscription
from rocketq.protocol.frames import DEFAULT_MAX_FRAME_SIZE, RESPONSE_FLAG, FrameDecoder, RemotingCommand, SerializeType
from rocketq.protocol.messagetypes import MessageExt, MessageSysFlag
from rocketq.protocol.subscription import SubscriptionData

native = nativecodecs.native
pytestmark = pytest.mark.skipif(native is None, reason="the in-place reading needs the native codecs")

_ADDR = "127.0.0.1:10911"
_PULL_FIELDS = ("nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId")
_EDGES = (0, 1, -1, 9, 10, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**53, 10**18 - 1, 10**18, 2**63 - 1,
          -(2**63), 2**63, -(2**63) - 1, 10**19, -(10**19))
_ODD_LONGS = ("", "+5", "007", "-0", "00", " 1", "1 ", "1_0", "\u0661", "1e3", "1.0", "abc", "0x10", "-", "--1",
              "9" * 25)
_MAX_FRAMES = st.sampled_from((DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE, 300))
_SUBSCRIPTIONS = (subscription.build("T", "*"), subscription.build("T", "TagA || TagB"))


def _rarely(draw: st.DrawFn, common: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> Any:
    """Mostly ``common``, one time in sixteen ``odd`` (so that many answers have no odd part)."""
    return draw(odd if draw(st.integers(0, 15)) == 0 else common)


_LONG_TEXTS = st.one_of(st.sampled_from(_EDGES).map(str), st.integers().map(str), st.sampled_from(_ODD_LONGS))
_ASCII = st.text(string.ascii_letters + string.digits + "_-. ", max_size=12)
_PLAIN_LONGS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 1000)).map(str)


def _json_string(text: str, escaped: bool) -> bytes:
    """``text`` as a JSON string; ``escaped``: its first character as a \\u escape."""
    if escaped and text:
        return b'"\\u%04x' % ord(text[0]) + orjson.dumps(text[1:])[1:]
    return orjson.dumps(text)


@st.composite
def _ext_fields(draw: st.DrawFn) -> bytes:
    """An extFields object: the four fields (each maybe missing, twice, odd), extras, escapes."""
    pairs: list[tuple[bytes, bytes]] = []
    for name in _PULL_FIELDS:
        for _ in range(_rarely(draw, st.just(1), st.sampled_from((0, 2)))):
            value = _rarely(draw, _PLAIN_LONGS, _LONG_TEXTS)
            if draw(st.integers(0, 19)) == 0:  # not a string at all
                pairs.append((orjson.dumps(name), str(draw(st.integers())).encode()))
            else:
                pairs.append((_json_string(name, draw(st.integers(0, 29)) == 0),
                              _json_string(value, draw(st.integers(0, 29)) == 0)))
    extras = _rarely(draw, st.lists(st.tuples(_ASCII, _ASCII), max_size=3),
                     st.lists(st.tuples(st.text(max_size=8), st.text(max_size=8)), min_size=1, max_size=3))
    pairs += [(orjson.dumps(k), orjson.dumps(v)) for k, v in extras]
    pairs = draw(st.permutations(pairs))
    return b"{" + b",".join(k + b":" + v for k, v in pairs) + b"}"


_INT_TEXTS = st.one_of(st.sampled_from((0, 1, 2, 3, 19, 20, 21, 22, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1))
                       .map(lambda v: str(v).encode()),
                       st.integers(-(2**40), 2**40).map(lambda v: str(v).encode()),
                       st.sampled_from((b"-0", b"01", b"1.0", b"1e2", b'"0"', b"true", b"null", b"[]")))


@st.composite
def _json_header(draw: st.DrawFn, opaque: int) -> bytes:
    """A response header as JSON text: the members a broker writes, often changed."""
    members: list[tuple[bytes, bytes]] = [
        (b'"code"', _rarely(draw, st.just(b"0"), _INT_TEXTS)),
        (b'"flag"', _rarely(draw, st.sampled_from((b"1", b"3")), _INT_TEXTS)),
        (b'"language"', _rarely(draw, st.sampled_from((b'"JAVA"', b'"PYTHON"')),
                                st.sampled_from((b"5", b"null", b"true", b"[1]", b"{}")))),
        (b'"opaque"', _rarely(draw, st.just(str(opaque).encode()), _INT_TEXTS)),
        (b'"serializeTypeCurrentRPC"', b'"JSON"'),
        (b'"version"', _rarely(draw, st.sampled_from((b"317", b"0")), _INT_TEXTS)),
        (b'"extFields"', _rarely(draw, _ext_fields(), st.sampled_from((b"null", b"{}", b'"x"', b"[]")))),
    ]
    if draw(st.booleans()):
        members.append((b'"remark"', _rarely(draw, st.sampled_from((b"null", b'"ok"')),
                                             st.sampled_from((b'"a\\nb"', b"12", b"1.5", b'"\xc3\xa9"')))))
    members = _rarely(draw, st.just([]), st.lists(st.sampled_from(members), max_size=2)) + members  # twice
    if _rarely(draw, st.just(False), st.just(True)):  # one missing
        members.pop(draw(st.integers(0, len(members) - 1)))
    members = draw(st.permutations(members))
    space = _rarely(draw, st.just(b""), st.sampled_from((b" ", b"\n")))
    return b"{" + b",".join(k + b":" + space + v for k, v in members) + b"}"


@st.composite
def _body(draw: st.DrawFn) -> bytes:
    """Stored records (tags, compressed ones), random bytes, or a mix."""
    records = []
    for offset in range(draw(st.integers(0, 5))):
        tags = draw(st.sampled_from((None, "TagA", "TagB", "TagC")))
        props: dict[str, str] = {"TAGS": tags} if tags else {}
        if draw(st.booleans()):
            props["k"] = draw(st.text(max_size=6).filter(lambda t: "\x01" not in t and "\x02" not in t))
        body = draw(st.binary(min_size=1, max_size=40))
        flag = 0
        if draw(st.integers(0, 9)) == 0:
            body, flag = zlib.compress(body), MessageSysFlag.COMPRESSED
        records.append(storedrecords.encode_stored_record(topic="T", queue_id=1, body=body, properties=props,
                                                          queue_offset=offset, sys_flag=flag))
    data = b"".join(records)
    if draw(st.integers(0, 9)) == 0:
        data += draw(st.binary(max_size=20))  # trailing bytes: the general path's error
    return data


def _frame(header: bytes, body: bytes) -> bytes:
    return (4 + len(header) + len(body)).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header + body


def _general(frame: bytes, sub: SubscriptionData, max_frame: int) -> Any:
    """What the general path makes of the frame: the pull's values, or why it has none."""
    decoder = FrameDecoder(max_frame)
    commands = decoder.split(frame)
    if decoder.error is not None or not commands:
        return "bad frame"
    [cmd] = commands
    if cmd.code != 0 or not cmd.flag & RESPONSE_FLAG:
        return "another answer"
    try:
        header = wire.pull_header(cmd, _ADDR)
        messages = pulling.found_messages(cmd.body, header, sub)
    except ProtocolError:
        return "a pull error"
    return cmd.opaque, header.next_begin_offset, header.suggest_which_broker_id, messages


def _in_place(data: bytes, pos: int, sub: SubscriptionData, max_frame: int) -> Any:
    """What the in-place reading makes of the frame at ``pos``: None when it leaves it alone."""
    at = native.found_answer_at(data, pos, max_frame)
    if at is None:
        return None
    found = pulling.found_at(data, pos, at[1], sub)
    return None if found is None else (at[0], *found)


@settings(max_examples=700, deadline=None)
@given(st.data(), st.integers(-(2**31), 2**31 - 1), _body(), st.sampled_from(_SUBSCRIPTIONS),
       st.binary(max_size=12), st.binary(max_size=12), _MAX_FRAMES)
def test_the_in_place_reading_is_the_general_path_or_leaves_the_frame_to_it(
        data: st.DataObject, opaque: int, body: bytes, sub: SubscriptionData, before: bytes, after: bytes,
        max_frame: int) -> None:
    frame = _frame(data.draw(_json_header(opaque)), body)
    read = _in_place(before + frame + after, len(before), sub, max_frame)
    event("read in place" if read is not None else "left to the general path")
    if read is not None:
        assert read == _general(frame, sub, max_frame)
        assert native.found_answer_at(before + frame + after, len(before), max_frame)[1] == len(before) + len(frame)


_PLAIN_BODIES = st.lists(st.tuples(st.sampled_from((None, "TagA", "TagB")), st.binary(min_size=1, max_size=30)),
                         max_size=4).map(lambda records: b"".join(
    storedrecords.encode_stored_record(topic="T", queue_id=1, body=body, properties={"TAGS": tags} if tags else {},
                                       queue_offset=offset) for offset, (tags, body) in enumerate(records)))


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.lists(st.sampled_from(_EDGES), min_size=4, max_size=4), _PLAIN_BODIES,
       st.sampled_from(_SUBSCRIPTIONS), st.sampled_from(SerializeType))
def test_a_broker_s_answer_is_read_in_place_as_the_general_path_reads_it(
        opaque: int, values: list[int], body: bytes, sub: SubscriptionData, kind: SerializeType) -> None:
    """An answer as a broker encodes it (values at the edges of int and long, either header
    type): read in place exactly when it is a JSON one with a body and the general path reads
    it; the binary header and an answer without a body always go the general path."""
    ext = dict(zip(_PULL_FIELDS, map(str, values), strict=True))
    frame = RemotingCommand(0, opaque, RESPONSE_FLAG, None, ext, body, "JAVA", 317, kind).encode()
    general = _general(frame, sub, DEFAULT_MAX_FRAME_SIZE)
    read = _in_place(frame, 0, sub, DEFAULT_MAX_FRAME_SIZE)
    if kind is SerializeType.JSON and body and isinstance(general, tuple):
        assert read == general
    else:
        assert read is None


@pytest.mark.parametrize("name", _PULL_FIELDS)
@pytest.mark.parametrize("text", [*_ODD_LONGS, *map(str, _EDGES)])
def test_each_field_s_odd_text_reads_as_the_general_path_reads_it(name: str, text: str) -> None:
    ext = {"suggestWhichBrokerId": "0", "nextBeginOffset": "3", "minOffset": "0", "maxOffset": "7", name: text}
    body = storedrecords.encode_stored_record(topic="T", queue_id=1, body=b"m", queue_offset=0)
    frame = RemotingCommand(0, 9, RESPONSE_FLAG, None, ext, body, "JAVA").encode()
    general = _general(frame, _SUBSCRIPTIONS[0], DEFAULT_MAX_FRAME_SIZE)
    read = _in_place(frame, 0, _SUBSCRIPTIONS[0], DEFAULT_MAX_FRAME_SIZE)
    assert read is None or read == general
    if re.fullmatch("-?[0-9]+", text) and str(int(text)) == text and -(2**63) <= int(text) < 2**63:
        assert read == general  # a plain long: read in place


def test_the_plain_answer_a_broker_writes_is_taken() -> None:
    """The common answer is in fact read in place (the property tests above allow None)."""
    records = [storedrecords.encode_stored_record(topic="T", queue_id=1, body=b"m%d" % o, queue_offset=o,
                                                  properties={"TAGS": tag})
               for o, tag in enumerate(("TagA", "TagC", "TagB"))]
    ext = {"suggestWhichBrokerId": "1", "nextBeginOffset": "3", "minOffset": "0", "maxOffset": "9223372036854775807"}
    frame = RemotingCommand(0, 77, RESPONSE_FLAG, None, ext, b"".join(records), "JAVA").encode()
    read = _in_place(b"xx" + frame, 2, _SUBSCRIPTIONS[1], DEFAULT_MAX_FRAME_SIZE)
    assert read is not None and read == _general(frame, _SUBSCRIPTIONS[1], DEFAULT_MAX_FRAME_SIZE)
    opaque, next_begin, suggested, messages = read
    assert (opaque, next_begin, suggested) == (77, 3, 1)
    assert [m.queue_offset for m in messages] == [0, 2]
    assert messages[0].properties["MAX_OFFSET"] == "9223372036854775807"


@pytest.mark.parametrize("args", [
    (b"", 0, 10), (b"\x00" * 8, 0, 10), (b"x" * 20, 30, 10), (b"x" * 20, -1, 10), ("text", 0, 10), (b"x", 0, -1),
])
def test_odd_arguments_are_left_to_the_general_path(args: tuple[Any, ...]) -> None:
    assert native.found_answer_at(*args) is None
    assert native.found_pulled(*args, MessageExt) is None


def test_found_pulled_takes_only_the_whole_frame() -> None:
    ext = {"suggestWhichBrokerId": "0", "nextBeginOffset": "1", "minOffset": "0", "maxOffset": "1"}
    body = storedrecords.encode_stored_record(topic="T", queue_id=1, body=b"m", queue_offset=0)
    frame = RemotingCommand(0, 5, RESPONSE_FLAG, None, ext, body).encode()
    assert native.found_pulled(frame, 0, len(frame), MessageExt) is not None
    longer = frame + b"z"
    for end in (len(frame) - 1, len(frame) + 1, 3):
        assert native.found_pulled(longer, 0, end, MessageExt) is None
        assert native.found_answer_at(longer, 0, DEFAULT_MAX_FRAME_SIZE) == (5, len(frame))  # remembered
        assert native.found_pulled(longer, 0, end, MessageExt) is None  # not for another span
    assert native.found_answer_at(longer, 0, DEFAULT_MAX_FRAME_SIZE) is not None
    other = bytes(bytearray(longer))  # equal bytes, another object: read afresh
    assert native.found_pulled(other, 0, len(frame), MessageExt) == native.found_pulled(frame, 0, len(frame),
                                                                                        MessageExt)

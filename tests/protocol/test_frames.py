"""Frame codec: round trips in both header types, Java's JSON shape, and refusal of bad bytes."""

from __future__ import annotations

import contextlib
import struct

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import frames
from rocketq.protocol.codes import SerializeType
from rocketq.protocol.frames import FrameDecoder, FrameError, RemotingCommand

ext_values = st.dictionaries(st.text(min_size=1, max_size=20), st.text(max_size=40), max_size=8)
commands = st.builds(
    RemotingCommand,
    code=st.integers(-(1 << 15), (1 << 15) - 1),
    opaque=st.integers(0, (1 << 31) - 1),
    flag=st.integers(0, 3),
    remark=st.none() | st.text(min_size=1, max_size=50),
    ext_fields=ext_values,
    body=st.binary(max_size=300),
    serialize_type=st.sampled_from(list(SerializeType)),
)


@given(commands)
def test_round_trip_in_both_header_types(cmd: RemotingCommand) -> None:
    decoded = list(FrameDecoder().feed(cmd.encode()))
    assert decoded == [cmd]


@given(st.lists(commands, min_size=1, max_size=5), st.integers(1, 64))
def test_stream_cut_into_arbitrary_chunks(cmds: list[RemotingCommand], chunk: int) -> None:
    stream = b"".join(c.encode() for c in cmds)
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    for i in range(0, len(stream), chunk):
        out.extend(decoder.feed(stream[i : i + chunk]))
    assert out == cmds
    assert decoder.buffered == 0


def test_decodes_a_java_client_json_header() -> None:
    header = orjson.dumps({
        "code": 310, "extFields": {"a": "g", "b": "TopicTest", "e": 1, "k": False},
        "flag": 0, "language": "JAVA", "opaque": 7, "serializeTypeCurrentRPC": "JSON", "version": 399,
    })
    frame = struct.pack(">ii", 4 + len(header) + 2, len(header)) + header + b"hi"
    (cmd,) = FrameDecoder().feed(frame)
    assert cmd.code == 310 and cmd.opaque == 7 and cmd.language == "JAVA" and cmd.body == b"hi"
    # Java's toString of numbers and booleans, not Python's "False".
    assert cmd.ext_fields == {"a": "g", "b": "TopicTest", "e": "1", "k": "false"}


def test_response_keeps_opaque_and_sets_response_bit() -> None:
    req = RemotingCommand(code=11, opaque=42, serialize_type=SerializeType.ROCKETMQ)
    resp = req.response(19, "no message")
    assert resp.opaque == 42 and resp.is_response and not resp.is_oneway
    assert resp.serialize_type == SerializeType.ROCKETMQ


@pytest.mark.parametrize(
    "data, reason",
    [
        (struct.pack(">i", -5) + b"xxxx", "outside"),
        (struct.pack(">i", 2) + b"xx", "outside"),
        (struct.pack(">i", frames.DEFAULT_MAX_FRAME_SIZE + 1), "outside"),
        (struct.pack(">iI", 8, 100) + b"abcd", "header length"),
        (struct.pack(">iI", 8, 4) + b"{{{{", "undecodable JSON"),
        (struct.pack(">iI", 6, 2) + b"[]", "not an object"),
        (struct.pack(">iI", 6, (7 << 24) | 2) + b"{}", "serialize type"),
        (struct.pack(">iI", 7, 3) + b'{"a"', "JSON"),
        (struct.pack(">iI", 6, 2) + b"{}", "no code"),
        (struct.pack(">iI", 17, 13) + b'{"code":"10"}', "not an integer"),
        (struct.pack(">iI", 9, (1 << 24) | 5) + b"\x00\x0a\x00\x00\x01", "truncated"),
    ],
)
def test_bad_frames_raise_frame_error(data: bytes, reason: str) -> None:
    with pytest.raises(FrameError, match=reason):
        list(FrameDecoder().feed(data))


def test_frame_size_limit_is_configurable() -> None:
    big = RemotingCommand(code=10, body=b"x" * 2000).encode()
    with pytest.raises(FrameError):
        list(FrameDecoder(max_frame_size=1000).feed(big))
    assert len(list(FrameDecoder(max_frame_size=4000).feed(big))) == 1


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_random_bytes_never_raise_anything_but_frame_error(data: bytes) -> None:
    with contextlib.suppress(FrameError):
        list(FrameDecoder(max_frame_size=4096).feed(data))


@settings(max_examples=300)
@given(commands, st.data())
def test_mutated_frames_never_raise_anything_but_frame_error(cmd: RemotingCommand, data: st.DataObject) -> None:
    raw = bytearray(cmd.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    with contextlib.suppress(FrameError):
        list(FrameDecoder(max_frame_size=4096).feed(bytes(raw)))


def _fed(decoder: FrameDecoder, data: bytes) -> list[RemotingCommand] | type[FrameError]:
    try:
        return list(decoder.feed(data))
    except FrameError:
        return FrameError


@settings(max_examples=300)
@given(commands, st.data())
def test_a_whole_frame_is_what_feed_gives(cmd: RemotingCommand, data: st.DataObject) -> None:
    """``whole`` (a read of exactly one frame) decodes what ``feed`` does, or declines (None)
    and leaves the decoder as it was: on whole frames, mutated ones, several, partial ones."""
    raw = bytearray(cmd.encode())
    for _ in range(data.draw(st.integers(0, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    raw = raw[:data.draw(st.integers(0, len(raw)))] if data.draw(st.booleans()) else raw
    raw += cmd.encode() if data.draw(st.booleans()) else b""
    expected = _fed(FrameDecoder(max_frame_size=4096), bytes(raw))
    decoder = FrameDecoder(max_frame_size=4096)
    try:
        lone = decoder.whole(bytes(raw))
    except FrameError:
        assert expected is FrameError
        return
    if lone is None:  # declined: feed then does it all, as on a fresh decoder
        assert _fed(decoder, bytes(raw)) == expected
    else:
        assert [lone] == expected


def test_whole_declines_while_a_frame_is_buffered() -> None:
    data = RemotingCommand(code=1, opaque=2).encode()
    decoder = FrameDecoder()
    assert decoder.whole(data) is not None
    assert list(decoder.feed(data[:5])) == []
    assert decoder.whole(data) is None  # the buffered part comes first: feed's job

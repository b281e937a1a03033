"""Frame codec: round trips in both header types, Java's JSON shape, and refusal of bad bytes."""

from __future__ import annotations

import contextlib
import itertools
import struct
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import frames, nativecodecs
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


def _error(exc: FrameError | None) -> tuple[type, str] | None:
    return None if exc is None else (type(exc), str(exc))


def _split_both_ways(data: bytes, max_frame_size: int) -> tuple[Any, ...]:
    """``split_frames`` and its pure reference on the same bytes: the same outcome, compared
    as values (a FrameError by its type and message)."""
    outcomes = []
    for split in (frames.split_frames, nativecodecs.pure(frames.split_frames)):
        commands, pos, needed, error = split(data, max_frame_size)
        outcomes.append((commands, pos, needed, _error(error)))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


def _read_in_pieces(stream: bytes, cuts: list[int], split: Any) -> tuple[list[list[RemotingCommand]], Any]:
    """What a decoder using ``split`` gives for ``stream`` read in pieces ending at ``cuts``:
    the commands of each read, and the error that ended the stream (or None)."""
    decoder = FrameDecoder(max_frame_size=4096)
    reads = []
    with mock.patch.object(frames, "split_frames", split):
        for start, stop in itertools.pairwise([0, *sorted(set(cuts)), len(stream)]):
            reads.append(decoder.split(stream[start:stop]))
    return reads, _error(decoder.error)


garbage = st.binary(max_size=12) | st.sampled_from([
    struct.pack(">i", -1), struct.pack(">i", 2), struct.pack(">i", 5000), struct.pack(">iI", 6, 2) + b"[]",
    struct.pack(">iI", 8, 4) + b"{{{{", struct.pack(">iI", 6, (7 << 24) | 2) + b"{}"])
"""Bytes that break a stream: random ones, and bad lengths and headers the decoder names."""


@settings(max_examples=300)
@given(st.lists(commands.map(lambda c: c.encode()) | garbage, min_size=1, max_size=6), st.data())
def test_a_stream_cut_anywhere_splits_alike_natively_and_purely(pieces: list[bytes], data: st.DataObject) -> None:
    """Any byte stream (whole frames, garbage, oversized lengths), read in pieces cut at any
    points, gives the same frames in the same reads and the same error both ways; and the
    same frames and error as the stream read whole."""
    stream = b"".join(pieces)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=8))
    native = _read_in_pieces(stream, cuts, frames.split_frames)
    pure = _read_in_pieces(stream, cuts, nativecodecs.pure(frames.split_frames))
    assert native == pure
    whole = _read_in_pieces(stream, [], frames.split_frames)
    assert [cmd for read in native[0] for cmd in read] == whole[0][0]
    assert native[1] == whole[1]


@settings(max_examples=300)
@given(st.binary(max_size=200) | commands.map(lambda c: c.encode()), st.data(), st.integers(0, 5000))
def test_split_frames_is_its_pure_reference(raw: bytes, data: st.DataObject, max_frame_size: int) -> None:
    mutated = bytearray(raw)
    for _ in range(data.draw(st.integers(0, 3)) if mutated else 0):
        mutated[data.draw(st.integers(0, len(mutated) - 1))] = data.draw(st.integers(0, 255))
    _split_both_ways(bytes(mutated) + raw, max_frame_size)


def test_split_frames_stops_at_a_bad_frame_after_the_good_ones() -> None:
    good = RemotingCommand(code=1, opaque=2).encode()
    commands_, pos, needed, error = _split_both_ways(good + struct.pack(">i", 5000) + b"x" * 10, 4096)
    assert [c.opaque for c in commands_] == [2] and pos == len(good) and needed == 4
    assert error == (FrameError, "frame length 5000 outside [4, 4096]")
    *_, error = _split_both_ways(good + struct.pack(">iI", 8, 4) + b"{{{{", 4096)
    assert error is not None and "undecodable JSON" in error[1]
    assert _split_both_ways(good + good[:7], 4096)[1:3] == (len(good), len(good))


def test_a_bad_frame_ends_the_stream_after_the_frames_before_it() -> None:
    good = RemotingCommand(code=1, opaque=2).encode()
    decoder = FrameDecoder(max_frame_size=4096)
    assert [c.opaque for c in decoder.split(good + struct.pack(">i", -5) + good)] == [2]
    assert str(decoder.error) == "frame length -5 outside [4, 4096]"
    assert decoder.split(good) == [] and decoder.buffered == 0  # nothing after a bad frame is read
    with pytest.raises(FrameError, match="outside"):
        list(decoder.feed(b""))


def test_held_commands_come_first() -> None:
    first, second, third = (RemotingCommand(code=1, opaque=n) for n in (1, 2, 3))
    decoder = FrameDecoder()
    split = decoder.split(first.encode() + second.encode())
    decoder.hold(split[1:])
    assert decoder.buffered
    assert [c.opaque for c in decoder.split(third.encode()[:5])] == [2]
    assert [c.opaque for c in decoder.split(third.encode()[5:])] == [3]
    assert decoder.buffered == 0


class _JoiningDecoder:
    """The decoder before round 11, the reference for ``FrameDecoder.split``: a read after a
    partial frame is joined to the buffer (two copies of the read) and split from its start."""

    def __init__(self, max_frame_size: int) -> None:
        self._buffer, self._needed, self._max = bytearray(), 4, max_frame_size
        self.error: FrameError | None = None

    def split(self, data: bytes) -> list[RemotingCommand]:
        if self.error is not None:
            return []
        buf = self._buffer
        if buf:
            buf += data
            if len(buf) < self._needed:
                return []
            data = bytes(buf)
            buf.clear()
        commands, pos, self._needed, self.error = frames.split_frames(data, self._max)
        if pos < len(data) and self.error is None:
            buf += memoryview(data)[pos:]
        return commands


@settings(max_examples=400)
@given(st.lists(commands.map(lambda c: c.encode()) | garbage, min_size=1, max_size=6), st.data(),
       st.sampled_from([frames.split_frames, nativecodecs.pure(frames.split_frames)]))
def test_a_read_finishing_a_frame_splits_as_the_joined_read_did(pieces: list[bytes], data: st.DataObject,
                                                               split: Any) -> None:
    """A read that completes a buffered frame gives, read after read, the same frames, the
    same buffered bytes and the same error as joining it to the buffer did (the frame finished
    from the read's head, the rest split in place), natively and purely; cuts mostly fall
    inside frames, and a cut can leave a read of one byte or nothing."""
    stream = b"".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    decoder, reference = FrameDecoder(max_frame_size=4096), _JoiningDecoder(4096)
    with mock.patch.object(frames, "split_frames", split):
        for start, stop in itertools.pairwise([0, *cuts, len(stream)]):
            read = stream[start:stop]
            assert decoder.split(read) == reference.split(read)
            assert decoder.buffered == len(reference._buffer)
            assert _error(decoder.error) == _error(reference.error)


@settings(max_examples=300)
@given(st.lists(commands.map(lambda c: c.encode()) | garbage, max_size=4), st.data())
def test_split_frames_from_an_offset_is_its_pure_reference(pieces: list[bytes], data: st.DataObject) -> None:
    """``split_frames(data, max, start)`` natively and purely: the same commands, positions
    counted from the start of ``data``, and the split of ``data[start:]`` shifted by start."""
    stream = b"".join(pieces)
    start = data.draw(st.integers(0, len(stream)))
    outcomes = []
    for split in (frames.split_frames, nativecodecs.pure(frames.split_frames)):
        commands_, pos, needed, error = split(stream, 4096, start)
        outcomes.append((commands_, pos, needed, _error(error)))
    assert outcomes[0] == outcomes[1]
    commands_, pos, needed, error = _split_both_ways(stream[start:], 4096)
    assert outcomes[0] == (commands_, pos + start, needed, error)


@pytest.mark.parametrize("split", [frames.split_frames, nativecodecs.pure(frames.split_frames)])
def test_split_frames_refuses_a_start_outside_the_data(split: Any) -> None:
    with pytest.raises(ValueError, match="outside"):
        split(b"abc", 4096, 4)
    with pytest.raises(ValueError, match="outside"):
        split(b"abc", 4096, -1)

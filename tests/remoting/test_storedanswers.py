"""SUCCESS answers read without a RemotingCommand (``storedanswers``, ``ClientConnection``).

``stored_answer_at`` must give, for any bytes, what its pure reference gives (the general
decode of the frame, narrowed to a SUCCESS answer without a body): its C twin reads the header
in place and hands what it cannot read to the reference. ``answer_at`` (C and pure) must give
its ``(opaque, end)``. A client connection must tell every
waiter what the general read told it, in the order of the frames: a send in flight (a waiter
with ``stored``) its SUCCESS answer's frame, anything else the decoded command.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import nativecodecs
from rocketq.protocol.frames import RESPONSE_FLAG, FrameDecoder, RemotingCommand, SerializeType
from rocketq.remoting.connection import ClientConnection
from rocketq.remoting.storedanswers import answer_at, stored_answer_at

MAX_FRAME = 1 << 20
pure = nativecodecs.pure(stored_answer_at)
pure_at = nativecodecs.pure(answer_at)

ascii_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)
any_text = st.one_of(ascii_text, st.text(max_size=6), st.sampled_from(['a"b', "c\\d", "\x01", "é", ""]))
int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int16 = st.integers(-(1 << 15), (1 << 15) - 1)
"""code and version: the binary header's width"""
commands = st.builds(
    RemotingCommand,
    code=st.one_of(st.just(0), st.just(0), st.integers(-3, 30), int16),
    opaque=int32,
    flag=st.sampled_from([RESPONSE_FLAG, RESPONSE_FLAG, 0, 2, 3]),
    remark=st.one_of(st.none(), any_text),
    ext_fields=st.dictionaries(st.one_of(ascii_text, any_text), st.one_of(ascii_text, any_text), max_size=6),
    body=st.one_of(st.just(b""), st.just(b""), st.binary(max_size=4)),
    language=st.sampled_from(["JAVA", "PYTHON", "GO"]),
    version=st.one_of(st.just(399), int16),
    serialize_type=st.sampled_from([SerializeType.JSON, SerializeType.JSON, SerializeType.ROCKETMQ]),
)


def _json_frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), len(header)) + header + body


headers = st.sampled_from([
    b'{"code":0,"flag":1,"opaque":7,"extFields":{"msgId":"AB","queueId":"1","queueOffset":"2"}}',
    b'{"code":0, "flag":1,"opaque":7,"extFields":{}}',  # white space: the reference reads it
    b'{"code":0,"flag":1,"opaque":07,"extFields":{}}',  # a leading zero: not JSON
    b'{"code":0,"flag":1,"opaque":7.0,"extFields":{}}',
    b'{"code":0,"flag":1,"opaque":-0,"extFields":{}}',
    b'{"code":0,"flag":1,"opaque":2147483648,"extFields":{}}',
    b'{"code":0,"flag":1,"opaque":7,"extFields":{"a":"1"},"extFields":{"b":"2"}}',
    b'{"code":1,"code":0,"flag":1,"opaque":7,"extFields":{"a":"1"}}',
    b'{"code":0,"flag":1,"opaque":7,"extFields":{"a":1}}',
    b'{"code":0,"flag":1,"opaque":7,"extFields":null}',
    b'{"code":0,"flag":1,"opaque":7}',
    b'{"code":0,"flag":1,"opaque":7,"extFields":{"a":"\\u0041"}}',
    b'{"code":0,"flag":1,"opaque":7,"extFields":{"a":"1"}}x',
    b'{"code":0,"flag":1,"opaque":7,"version":"x","extFields":{"a":"1"}}',
    b'{"code":0,"flag":1,"opaque":7,"language":7,"remark":null,"x":[1],"extFields":{"a":"1"}}',
    b'{"code":0,"flag":1,"opaque":7,"remark":true,"extFields":{"a":"1"}}',
    b'{"flag":1,"opaque":7,"extFields":{"a":"1"}}',
    b'[]', b'{}', b'', b'{"code":0,"flag":1,"opaque":7,"extFields":{"a":"1"}',
])


def _same(data: bytes, pos: int = 0, max_frame: int = MAX_FRAME) -> Any:
    got = stored_answer_at(data, pos, max_frame)
    assert got == pure(data, pos, max_frame)
    # answer_at is the same reading without the extFields dict
    assert answer_at(data, pos, max_frame) == pure_at(data, pos, max_frame) == (
        None if got is None else (got[0], got[2]))
    return got


@settings(max_examples=500, deadline=None)
@given(commands, st.binary(max_size=3))
def test_the_reading_is_the_reference(cmd: RemotingCommand, tail: bytes) -> None:
    frame = cmd.encode()
    got = _same(frame + tail)
    plain = (cmd.code == 0 and cmd.flag & RESPONSE_FLAG and not cmd.body
             and cmd.serialize_type == SerializeType.JSON)
    if plain:  # what the general decode makes of it, narrowed
        (decoded,) = FrameDecoder(MAX_FRAME).split(frame)
        assert got == (decoded.opaque, decoded.ext_fields, len(frame))
    else:
        assert got is None
    _same(b"xy" + frame, 2)
    _same(frame, 0, len(frame) - 5)  # over the largest frame: the general path refuses it


@settings(max_examples=500, deadline=None)
@given(commands, st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3))
def test_mutated_frames_read_as_the_reference(cmd: RemotingCommand, edits: list[tuple[int, int]]) -> None:
    frame = bytearray(cmd.encode())
    for at, value in edits:
        frame[at % len(frame)] = value
    _same(bytes(frame))
    _same(bytes(frame[: len(frame) // 2]))


@given(headers, st.binary(max_size=2))
def test_unusual_headers_read_as_the_reference(header: bytes, body: bytes) -> None:
    _same(_json_frame(header, body))


plain_bytes = st.binary(max_size=30).map(lambda raw: bytes(0x20 + b % 0x5F for b in raw).replace(b'"', b"a")
                                          .replace(b"\\", b"b"))
"""printable ASCII without the quote and the backslash: what the C reading reads in place"""
odd_bytes = st.one_of(st.integers(0, 0x1F).map(lambda b: bytes([b])), st.integers(0x7F, 0xFF).map(lambda b: bytes([b])),
                      st.sampled_from([b'"', b"\\", b"\\n", b'\\"', b"\\u0041", "\u00e9".encode(), b"\x7f"]))


@settings(max_examples=400, deadline=None)
@given(plain_bytes, st.one_of(st.just(b""), odd_bytes), plain_bytes, st.sampled_from(["name", "value"]))
def test_strings_with_an_odd_byte_anywhere_read_as_the_reference(before: bytes, odd: bytes, after: bytes,
                                                                 where: str) -> None:
    """The C reading takes eight bytes of a string at a time: a quote, a backslash, a control,
    DEL or non-ASCII byte at any place in a long string must still be seen where it is."""
    text = before + odd + after
    field = b'"%s":"1"' % text if where == "name" else b'"msgId":"%s"' % text
    header = b'{"code":0,"flag":1,"opaque":7,"extFields":{%s,"queueId":"1","queueOffset":"2"}}' % field
    _same(_json_frame(header))
    _same(_json_frame(header) + b"tail", 0)


def test_a_broker_answer_is_read_in_place() -> None:
    ext = {"msgId": "7F00000100002A9F000000000001E240", "queueId": "3", "queueOffset": "12", "MSG_REGION": "R"}
    frame = RemotingCommand(code=0, opaque=41, flag=RESPONSE_FLAG, ext_fields=ext).encode()
    assert stored_answer_at(frame, 0, MAX_FRAME) == (41, ext, len(frame))
    assert stored_answer_at(frame[:-1], 0, MAX_FRAME) is None  # incomplete


# --- ClientConnection -------------------------------------------------------------------------------


class Flight:
    """A waiter as the producer's send in flight: told a SUCCESS answer's frame (noted here as
    its extFields)."""

    def __init__(self, told: list[Any]) -> None:
        self.told = told

    def __call__(self, response: RemotingCommand | None, error: BaseException | None) -> None:
        self.told.append(("answered", response.code if response is not None else error))

    def stored(self, data: bytes, pos: int, end: int) -> None:
        answer = stored_answer_at(data, pos, end - pos)
        assert answer is not None and answer[2] == end
        self.told.append(("stored", answer[1]))


class Transport:
    aborted = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1234) if name in ("peername", "sockname") else default

    def writelines(self, chunks: list[bytes]) -> None:
        pass

    def abort(self) -> None:
        self.aborted = True


def _answer(opaque: int, code: int = 0, **ext: str) -> bytes:
    return RemotingCommand(code=code, opaque=opaque, flag=RESPONSE_FLAG, ext_fields=ext).encode()


def _connection_keeping(requests: list[RemotingCommand]) -> ClientConnection:
    """A connected client connection whose handler of request code 99 keeps each request."""
    async def handler(conn: Any, req: RemotingCommand) -> None:
        requests.append(req)

    conn = ClientConnection({99: handler})
    conn.connection_made(Transport())  # type: ignore[arg-type]
    return conn


async def test_a_read_tells_each_waiter_in_order() -> None:
    requests: list[RemotingCommand] = []
    conn = _connection_keeping(requests)
    told: list[Any] = []
    for opaque in (1, 2, 4, 5):
        conn.send_frame(b"", opaque, 310, 30.0, Flight(told))
    plain = conn._loop.create_future()
    conn.send_frame(b"", 3, 310, 30.0, plain)
    last = _answer(5, queueId="5")
    read = (_answer(1, queueId="1") + _answer(2, code=14) + _answer(3) + _answer(4, queueId="4")
            + RemotingCommand(code=99, opaque=8).encode() + last[:10])
    conn.data_received(read)
    # the error answer and the future's answer take the general path alone; the reading goes on
    assert told == [("stored", {"queueId": "1"}), ("answered", 14), ("stored", {"queueId": "4"})]
    assert plain.done() and plain.result().opaque == 3
    assert [r.code for r in requests] == [99]
    conn.data_received(last[10:])  # completes a buffered frame: the general path
    assert told[-1] == ("answered", 0) and not conn._pending
    conn.send_frame(b"", 6, 310, 30.0, Flight(told))
    conn.data_received(_answer(6, queueId="6"))  # nothing buffered any more
    assert told[-1] == ("stored", {"queueId": "6"}) and not conn._pending


async def test_the_rest_of_a_buffered_frame_is_not_read_as_an_answer() -> None:
    """A read that ends inside a frame leaves it to the decoder; the next read completes it
    there even when its bytes would read as a whole answer of their own (here a request whose
    body is an answer frame, cut just before the body)."""
    requests: list[RemotingCommand] = []
    conn = _connection_keeping(requests)
    told: list[Any] = []
    conn.send_frame(b"", 7, 310, 30.0, Flight(told))
    inner = _answer(7, queueId="7")
    request = RemotingCommand(code=99, opaque=8, body=inner).encode()
    conn.data_received(request[:-len(inner)])
    conn.data_received(request[-len(inner):])
    assert [(r.code, r.body) for r in requests] == [(99, inner)]
    assert told == [] and 7 in conn._pending
    conn.data_received(inner)  # the real answer, read in place
    assert told == [("stored", {"queueId": "7"})] and not conn._pending


async def test_a_lone_answer_of_an_unknown_or_plain_waiter_takes_the_general_path() -> None:
    conn = ClientConnection({})
    conn.connection_made(Transport())  # type: ignore[arg-type]
    told: list[Any] = []
    conn.send_frame(b"", 1, 310, 30.0, Flight(told))
    conn.data_received(_answer(77))  # nobody waits for 77: dropped, as before
    conn.data_received(_answer(1, msgId="X"))
    assert told == [("stored", {"msgId": "X"})] and conn.active
    fut = conn._loop.create_future()
    conn.send_frame(b"", 2, 310, 30.0, fut)
    conn.data_received(_answer(2, msgId="Y"))
    assert (await asyncio.wait_for(fut, 5)).ext_fields == {"msgId": "Y"}


@pytest.mark.parametrize("raises", [ValueError("callback broke")])
async def test_a_failing_stored_callback_does_not_stop_the_read(raises: Exception) -> None:
    conn = ClientConnection({})
    conn.connection_made(Transport())  # type: ignore[arg-type]
    told: list[Any] = []

    class Broken(Flight):
        def stored(self, data: bytes, pos: int, end: int) -> None:
            raise raises

    conn.send_frame(b"", 1, 310, 30.0, Broken(told))
    conn.send_frame(b"", 2, 310, 30.0, Flight(told))
    conn.data_received(_answer(1) + _answer(2, queueId="2"))
    assert told == [("stored", {"queueId": "2"})] and not conn._pending


async def test_a_bad_frame_among_answers_ends_the_read() -> None:
    conn = ClientConnection({})
    transport = Transport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    told: list[Any] = []
    for opaque in (1, 2):
        conn.send_frame(b"", opaque, 310, 30.0, Flight(told))
    bad = struct.pack(">iI", 8, 4) + b"{no}"
    conn.data_received(_answer(1, queueId="1") + bad + _answer(2, queueId="2"))
    assert told == [("stored", {"queueId": "1"})]
    assert transport.aborted and conn._stats.bad_frames == 1 and 2 in conn._pending


class Recording(Transport):
    def __init__(self) -> None:
        self.writes: list[list[bytes]] = []

    def writelines(self, chunks: list[bytes]) -> None:
        self.writes.append(list(chunks))


async def test_requests_of_one_turn_are_queued_and_written_in_order() -> None:
    conn = ClientConnection({}, flush_after_frames=4)
    transport = Recording()
    conn.connection_made(transport)  # type: ignore[arg-type]
    told: list[Any] = []
    for opaque in range(1, 8):
        conn.send_frame(b"%d" % opaque, opaque, 310, 30.0, Flight(told))
    # the first at once (nothing in flight), then queued: four frames are written together,
    # the rest by the loop turn's flush
    assert transport.writes == [[b"1"], [b"2", b"3", b"4", b"5"]]
    await asyncio.sleep(0)
    assert transport.writes[2:] == [[b"6", b"7"]]
    assert sorted(conn._pending) == list(range(1, 8)) and all(e[2] == 310 for e in conn._pending.values())
    conn.data_received(b"".join(_answer(opaque, queueId=str(opaque)) for opaque in range(1, 8)))
    assert [ext["queueId"] for _what, ext in told] == [str(opaque) for opaque in range(1, 8)]

"""The peer protocol's frames: round trips, and every malformed frame refused with WireError."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from raftgroup import RaftGroup

from rocketq.dledger import transport, wire
from rocketq.dledger.contract import Entry

TERMS = st.integers(0, wire.MAX_INDEX)
IDS = st.from_regex(r"[A-Za-z0-9_]{1,64}", fullmatch=True)
GROUPS = st.text(min_size=1, max_size=60).filter(lambda g: len(g.encode()) <= wire.MAX_GROUP_BYTES)


@st.composite
def requests(draw: st.DrawFn) -> wire.Request:
    term = draw(TERMS)
    head = (term, draw(GROUPS), draw(IDS))
    kind = draw(st.sampled_from(["vote", "heartbeat", "push", "timeout"]))
    if kind == "vote":
        return wire.VoteRequest(*head, last_index=draw(TERMS), last_term=draw(st.integers(0, term)),
                                pre_vote=draw(st.booleans()), transfer=draw(st.booleans()))
    if kind == "heartbeat":
        return wire.Heartbeat(*head, commit_index=draw(TERMS))
    if kind == "timeout":
        return wire.TimeoutNow(*head)
    op = draw(st.sampled_from(wire.PushOp))
    index = draw(st.integers(0, 1 << 40))
    index_term = draw(st.integers(0, term))
    entries: list[Entry] = []
    if op is wire.PushOp.APPEND:
        entry_term = index_term
        for k, payload in enumerate(draw(st.lists(st.binary(max_size=64), max_size=5))):
            entry_term = draw(st.integers(entry_term, term))
            entries.append(Entry(index + 1 + k, entry_term, payload))
    return wire.Push(*head, op=op, index=index, index_term=index_term, commit_index=draw(TERMS),
                     entries=tuple(entries))


@st.composite
def answers(draw: st.DrawFn) -> wire.Answer:
    last = draw(TERMS)
    return wire.Answer(draw(st.sampled_from(wire.Status)), draw(TERMS), last, draw(st.integers(0, last)))


@given(st.integers(0, wire.MAX_REQUEST_ID), st.one_of(requests(), answers()))
def test_every_message_round_trips(request_id: int, msg: wire.Message) -> None:
    frame = wire.encode(request_id, msg)
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    assert wire.decode(frame[4:]) == (request_id, msg)


def _decodes_canonically_or_is_refused(body: bytes) -> None:
    """Either WireError, or a message whose encoding is exactly these bytes (nothing ignored)."""
    try:
        request_id, msg = wire.decode(body)
    except wire.WireError:
        return
    assert wire.encode(request_id, msg)[4:] == body


@given(st.binary(max_size=300))
def test_arbitrary_bytes_decode_or_raise_wire_error(body: bytes) -> None:
    _decodes_canonically_or_is_refused(body)


@given(st.one_of(requests(), answers()), st.data())
def test_a_damaged_frame_is_refused_or_read_exactly(msg: wire.Message, data: st.DataObject) -> None:
    body = bytearray(wire.encode(7, msg)[4:])
    position = data.draw(st.integers(0, len(body) - 1))
    body[position] = data.draw(st.integers(0, 255))
    _decodes_canonically_or_is_refused(bytes(body))


@given(st.one_of(requests(), answers()), st.data())
def test_a_cut_or_extended_frame_is_refused(msg: wire.Message, data: st.DataObject) -> None:
    body = wire.encode(1, msg)[4:]
    cut = data.draw(st.integers(0, len(body) - 1))
    with pytest.raises(wire.WireError):
        wire.decode(body[:cut])
    with pytest.raises(wire.WireError, match="after the message"):
        wire.decode(body + b"\0")


def _push_body(count: int, entries: bytes, *, op: int = wire.PushOp.APPEND, term: int = 5) -> bytes:
    return (struct.pack(">BIQ", wire.Kind.PUSH, 1, term) + b"\x01g" + b"\x02n0"
            + struct.pack(">BQQQI", op, 10, 4, 0, count) + entries)


@pytest.mark.parametrize(("body", "message"), [
    (b"\x09" + b"\0" * 8, "unknown message kind"),
    (struct.pack(">BIBQQQ", wire.Kind.ANSWER, 1, 99, 1, 1, 1), "unknown answer status"),
    (struct.pack(">BIBQQQ", wire.Kind.ANSWER, 1, 0, 1, 1, 2), "beyond its last index"),
    (struct.pack(">BIQ", wire.Kind.HEARTBEAT, 1, 1 << 63) + b"\x01g\x02n0" + bytes(8), "term .* out of range"),
    (struct.pack(">BIQ", wire.Kind.HEARTBEAT, 1, 1) + b"\x00\x02n0" + bytes(8), "empty group"),
    (struct.pack(">BIQ", wire.Kind.HEARTBEAT, 1, 1) + b"\x01g\x02n-" + bytes(8), "sender"),
    (struct.pack(">BIQ", wire.Kind.HEARTBEAT, 1, 1) + b"\x01\xff\x02n0" + bytes(8), "not UTF-8"),
    (struct.pack(">BIQ", wire.Kind.VOTE, 1, 3) + b"\x01g\x02n0" + struct.pack(">QQB", 1, 4, 0), "out of range"),
    (struct.pack(">BIQ", wire.Kind.VOTE, 1, 3) + b"\x01g\x02n0" + struct.pack(">QQB", 1, 1, 8), "out of range"),
    (_push_body(0, b"", op=9), "unknown push op"),
    (_push_body(1, struct.pack(">QI", 4, 0), op=wire.PushOp.COMPARE), "carries 1 entries"),
    (_push_body(1 << 30, b""), "more than the frame can hold"),
    (_push_body(1, struct.pack(">QI", 3, 0)), "term 3 after 4"),
    (_push_body(1, struct.pack(">QI", 6, 0)), "term 6 after 4"),
    (_push_body(1, struct.pack(">QI", 5, 100) + b"x"), "runs past the frame's end"),
])
def test_malformed_frames_say_why(body: bytes, message: str) -> None:
    with pytest.raises(wire.WireError, match=message):
        wire.decode(body)


def test_frame_length_is_checked_before_the_body_is_read() -> None:
    with pytest.raises(wire.WireError, match="frame length"):
        wire.check_length(wire.MAX_FRAME_BYTES + 1)
    with pytest.raises(wire.WireError, match="frame length"):
        wire.check_length(0)


async def test_a_bad_frame_closes_only_that_connection(tmp_path: Path) -> None:
    group = RaftGroup(tmp_path)
    try:
        await group.start("n0")
        node = group.nodes["n0"]
        me = node.group.me
        for garbage in (b"\xff\xff\xff\xff", struct.pack(">I", 9) + b"\x07" + bytes(8),
                        wire.encode(1, wire.Heartbeat(1, "other-group", "n0", 0)),
                        wire.encode(1, wire.Heartbeat(1, "g", "stranger", 0)),
                        wire.encode(1, wire.Answer(wire.Status.OK, 1, 1, 1))):
            reader, writer = await asyncio.open_connection(me.host, me.port)
            writer.write(garbage)
            assert await asyncio.wait_for(reader.read(), timeout=10) == b""  # closed, nothing answered
            writer.close()
        # A proper request on a new connection is still answered.
        client = transport.PeerClient(me.host, me.port)
        try:
            answer = await client.call(wire.VoteRequest(1, "g", "n1", 0, 0, pre_vote=True), timeout=5)
        finally:
            await client.close()
        assert answer.ok and answer.term == 0
    finally:
        await group.close()


async def test_a_members_older_connection_is_dropped_once_it_reconnects(tmp_path: Path) -> None:
    group = RaftGroup(tmp_path)
    try:
        await group.start("n0")
        me = group.nodes["n0"].group.me
        probe = wire.VoteRequest(1, "g", "n1", 0, 0, pre_vote=True)
        old_reader, old_writer = await asyncio.open_connection(me.host, me.port)
        old_writer.write(wire.encode(1, probe))
        assert wire.decode(await wire.read_frame(old_reader))[0] == 1
        new_reader, new_writer = await asyncio.open_connection(me.host, me.port)
        new_writer.write(wire.encode(2, probe))
        assert wire.decode(await wire.read_frame(new_reader))[0] == 2
        old_writer.write(wire.encode(3, probe))  # late: n1 has moved to a newer connection
        assert await asyncio.wait_for(old_reader.read(), timeout=10) == b""
        new_writer.write(wire.encode(4, probe))
        assert wire.decode(await wire.read_frame(new_reader))[0] == 4
        for writer in (old_writer, new_writer):
            writer.close()
    finally:
        await group.close()

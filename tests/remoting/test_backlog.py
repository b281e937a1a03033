"""A peer that sends requests but never reads the answers: what a server buffers for it is bounded.

Real sockets on 127.0.0.1: the peer writes a long pipeline of requests and pauses its own
reading, so the server's answers pile up in its transport. The server must stop reading that
peer near ``WRITE_HIGH_WATER`` instead of answering everything into memory, and must answer
every request once the peer reads again. Also here: a frame's body given as buffers
(``body_parts``, how pull answers carry the store's views) is written as the same bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol.codes import ResponseCode, SerializeType
from rocketq.protocol.frames import FrameDecoder, RemotingCommand
from rocketq.remoting import connection as connection_mod
from rocketq.remoting import server as server_mod
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingServer

BIG, VIEWS = 1, 2
ANSWER_SIZE = 64 * 1024
PIPELINED = 1000
"""64 MB of answers in all: sixteen times the high-water mark."""


class Peer(asyncio.Protocol):
    """Writes requests, reads nothing until told to, then collects every answer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.decoder = FrameDecoder()
        self.answers: dict[int, RemotingCommand] = {}
        self.all_answered = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.pause_reading()  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        for cmd in self.decoder.feed(data):
            self.answers[cmd.opaque] = cmd
        if len(self.answers) == PIPELINED and not self.all_answered.done():
            self.all_answered.set_result(None)


@pytest.fixture
async def server() -> AsyncIterator[tuple[RemotingServer, list[int]]]:
    handled: list[int] = []

    async def big(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        handled.append(req.opaque)
        return req.response(ResponseCode.SUCCESS, body=bytes(ANSWER_SIZE))

    srv = RemotingServer({BIG: big}, host="127.0.0.1")  # type: ignore[dict-item]
    await srv.start()
    yield srv, handled
    await srv.close()


async def _until(condition: object, timeout: float = 10) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.01)


async def test_a_peer_that_does_not_read_is_not_read_until_it_does(server) -> None:
    srv, handled = server
    loop = asyncio.get_running_loop()
    transport, peer = await loop.create_connection(Peer, "127.0.0.1", srv.port)
    try:
        transport.write(b"".join(RemotingCommand(code=BIG, opaque=i).encode() for i in range(PIPELINED)))
        (conn,) = srv.connections
        await _until(lambda: handled)
        await asyncio.sleep(0.5)  # whatever the server would still do, it does now
        assert len(handled) < PIPELINED // 4
        assert conn.reading_paused
        buffered = conn._transport.get_write_buffer_size()  # type: ignore[union-attr]
        assert buffered <= connection_mod.WRITE_HIGH_WATER + connection_mod.FLUSH_AFTER_FRAMES * (ANSWER_SIZE + 200)
        assert srv.stats.reads_paused >= 1

        transport.resume_reading()
        async with asyncio.timeout(20):
            await peer.all_answered
        assert sorted(peer.answers) == list(range(PIPELINED))
        assert all(len(a.body) == ANSWER_SIZE for a in peer.answers.values())
    finally:
        transport.abort()


async def test_closing_the_server_does_not_wait_forever_for_a_peer_that_reads_nothing(
    server, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server_mod, "CLOSE_GRACE_SECONDS", 0.2)
    srv, handled = server
    transport, _peer = await asyncio.get_running_loop().create_connection(Peer, "127.0.0.1", srv.port)
    try:
        transport.write(b"".join(RemotingCommand(code=BIG, opaque=i).encode() for i in range(PIPELINED)))
        await _until(lambda: handled)
        async with asyncio.timeout(5):
            await srv.close()
        assert not srv.connections
    finally:
        transport.abort()


async def test_body_parts_go_out_as_views_and_arrive_as_the_same_bytes(server) -> None:
    srv, _handled = server
    record = bytearray(b"stored record " * 100)
    parts = [memoryview(record)[i:i + 300] for i in range(0, len(record), 300)]

    async def views(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        answer = req.response(ResponseCode.SUCCESS, ext_fields={"nextBeginOffset": "7"})
        answer.body_parts = parts
        return answer

    srv._handlers[VIEWS] = views  # type: ignore[index]
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
    writer.write(RemotingCommand(code=VIEWS, opaque=5).encode())
    decoder = FrameDecoder()
    answers: list[RemotingCommand] = []
    async with asyncio.timeout(5):
        while not answers:
            answers += decoder.feed(await reader.read(65536))
    assert answers[0].body == bytes(record) and answers[0].ext_fields == {"nextBeginOffset": "7"}
    writer.close()


@given(
    parts=st.lists(st.binary(max_size=40), max_size=6),
    binary=st.booleans(),
    remark=st.none() | st.text(max_size=10),
)
def test_encode_buffers_are_the_bytes_of_encode(parts: list[bytes], binary: bool, remark: str | None) -> None:
    kind = SerializeType.ROCKETMQ if binary else SerializeType.JSON
    joined = RemotingCommand(code=11, opaque=3, remark=remark, ext_fields={"a": "1"}, body=b"".join(parts),
                             serialize_type=kind)
    scattered = RemotingCommand(code=11, opaque=3, remark=remark, ext_fields={"a": "1"},
                                body_parts=[memoryview(p) for p in parts], serialize_type=kind)
    expected = joined.encode()
    assert b"".join(scattered.encode_buffers()) == expected == scattered.encode()
    assert b"".join(joined.encode_buffers()) == expected

"""Server and client over real sockets on 127.0.0.1: RPC styles, errors, and hostile peers."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import HeaderError, TopicHeader
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection
from rocketq.remoting.errors import RemotingConnectError, RemotingSendError, RemotingTimeoutError
from rocketq.remoting.server import RemotingServer

ECHO, SLOW, STRICT, ONEWAY_SINK, CALL_BACK = 1, 2, 3, 4, 5


class Fixture:
    def __init__(self) -> None:
        self.oneway_seen: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.server_side: list[Connection] = []

    async def echo(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, ext_fields=dict(req.ext_fields), body=req.body)

    async def slow(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(10)
        return req.response(ResponseCode.SUCCESS)

    async def strict(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = TopicHeader.from_ext(req.ext_fields)
        return req.response(ResponseCode.SUCCESS, header.topic)

    async def sink(self, conn: Connection, req: RemotingCommand) -> None:
        await self.oneway_seen.put(req)

    async def call_back(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        # The server asks the client something on the same connection, as a broker does.
        answer = await conn.invoke(RemotingCommand(code=40, ext_fields={"consumerGroup": "g"}), 2)
        return req.response(ResponseCode.SUCCESS, answer.remark)

    def handlers(self) -> dict[int, object]:
        return {ECHO: self.echo, SLOW: self.slow, STRICT: self.strict, ONEWAY_SINK: self.sink,
                CALL_BACK: self.call_back}


@pytest.fixture
async def served() -> AsyncIterator[tuple[Fixture, RemotingServer, str]]:
    fx = Fixture()
    server = RemotingServer(fx.handlers(), host="127.0.0.1")  # type: ignore[arg-type]
    await server.start()
    yield fx, server, f"127.0.0.1:{server.port}"
    await server.close()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    async def notified(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, "notified " + req.ext_fields["consumerGroup"])

    c = RemotingClient({40: notified})
    yield c
    await c.close()


async def test_sync_rpc_and_connection_reuse(served, client) -> None:
    _fx, server, addr = served
    for i in range(5):
        resp = await client.invoke(addr, RemotingCommand(code=ECHO, ext_fields={"i": str(i)}, body=b"b"), 2)
        assert resp.code == 0 and resp.ext_fields == {"i": str(i)} and resp.body == b"b"
    assert len(server.connections) == 1


async def test_concurrent_requests_are_matched_by_opaque(served, client) -> None:
    _fx, _server, addr = served
    bodies = [str(i).encode() for i in range(300)]
    results = await asyncio.gather(*(client.invoke(addr, RemotingCommand(code=ECHO, body=b), 5) for b in bodies))
    assert [r.body for r in results] == bodies


async def test_async_rpc_with_callback(served, client) -> None:
    _fx, _server, addr = served
    seen: list[RemotingCommand] = []
    task = client.invoke_async(addr, RemotingCommand(code=ECHO, body=b"later"), 2,
                               callback=lambda t: seen.append(t.result()))
    response = await task
    await asyncio.sleep(0)
    assert response.body == b"later" and seen == [response]
    failing = client.invoke_async(addr, RemotingCommand(code=SLOW), 0.05)
    with pytest.raises(RemotingTimeoutError):
        await failing


class Outcomes:
    """What ``request_now`` callbacks were told, by name."""

    def __init__(self) -> None:
        self.told: dict[str, list[tuple[RemotingCommand | None, BaseException | None]]] = {}

    def callback(self, name: str) -> Callable[[RemotingCommand | None, BaseException | None], None]:
        return lambda response, error: self.told.setdefault(name, []).append((response, error))

    async def wait_for(self, name: str) -> tuple[RemotingCommand | None, BaseException | None]:
        for _ in range(500):
            if name in self.told:
                (outcome,) = self.told[name]  # told exactly once
                return outcome
            await asyncio.sleep(0.01)
        raise AssertionError(f"{name} never told")


async def test_request_now_needs_an_open_connection_and_ends_every_way(served, client) -> None:
    _fx, _server, addr = served
    seen = Outcomes()
    assert client.request_now(addr, RemotingCommand(code=ECHO), 2, seen.callback("early")) is None  # nothing sent
    conn = await client.connection(addr)
    for i in range(50):
        assert client.request_now(addr, RemotingCommand(code=ECHO, body=str(i).encode()), 2, seen.callback(str(i)))
    assert [(await seen.wait_for(str(i)))[0].body for i in range(50)] == [str(i).encode() for i in range(50)]  # type: ignore[union-attr]
    timed_out = RemotingCommand(code=SLOW)
    forgotten = RemotingCommand(code=SLOW)
    assert client.request_now(addr, timed_out, 0.05, seen.callback("timed out")) is conn
    assert client.request_now(addr, forgotten, 5, seen.callback("forgotten")) is conn
    assert len(conn._pending) == 2
    conn.forget(forgotten.opaque)
    assert isinstance((await seen.wait_for("timed out"))[1], RemotingTimeoutError)
    assert not conn._pending  # neither the timed-out nor the forgotten request stays behind
    assert client.request_now(addr, RemotingCommand(code=SLOW), 5, seen.callback("lost")) is conn
    conn.abort()
    assert isinstance((await seen.wait_for("lost"))[1], RemotingSendError)
    assert not conn._pending and "forgotten" not in seen.told and "early" not in seen.told


async def test_a_client_connection_is_ready_while_writable(served, client) -> None:
    """``ready`` (what a producer asks before writing a send itself) follows ``writable``: the
    peer slow to read (the transport over its high-water mark), then drained, then the loss."""
    _fx, _server, addr = served
    conn = await client.connection(addr)
    assert conn.ready and conn.writable and client.ready_connection(addr) is conn
    conn.pause_writing()
    assert not conn.ready and not conn.writable
    assert client.ready_connection(addr) is None
    assert client.request_now(addr, RemotingCommand(code=ECHO), 2, Outcomes().callback("paused")) is None
    conn.resume_writing()
    assert conn.ready and conn.writable and client.ready_connection(addr) is conn
    conn.abort()
    await conn.wait_closed()
    assert not conn.ready and not conn.writable
    assert client.ready_connection(addr) is None


async def test_unknown_code_is_not_supported(served, client) -> None:
    resp = await client.invoke(served[2], RemotingCommand(code=777), 2)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 777 not supported"


async def test_header_error_becomes_system_error(served, client) -> None:
    resp = await client.invoke(served[2], RemotingCommand(code=STRICT), 2)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "topic" in (resp.remark or "")


async def test_timeout(served, client) -> None:
    with pytest.raises(RemotingTimeoutError):
        await client.invoke(served[2], RemotingCommand(code=SLOW), 0.05)


async def test_oneway_gets_no_response(served, client) -> None:
    fx, _server, addr = served
    await client.invoke_oneway(addr, RemotingCommand(code=ONEWAY_SINK, body=b"fire"))
    seen = await asyncio.wait_for(fx.oneway_seen.get(), 2)
    assert seen.body == b"fire" and seen.is_oneway
    # the connection is still in step: the next RPC gets its own answer
    assert (await client.invoke(addr, RemotingCommand(code=ECHO, body=b"next"), 2)).body == b"next"


async def test_server_to_client_request(served, client) -> None:
    resp = await client.invoke(served[2], RemotingCommand(code=CALL_BACK), 3)
    assert resp.remark == "notified g"


async def test_connect_error() -> None:
    c = RemotingClient(connect_timeout=1)
    with pytest.raises(RemotingConnectError):
        await c.invoke("127.0.0.1:1", RemotingCommand(code=ECHO), 1)
    with pytest.raises(RemotingConnectError):
        await c.invoke("no-port", RemotingCommand(code=ECHO), 1)
    await c.close()


async def test_header_error_type_is_public() -> None:
    assert issubclass(HeaderError, ValueError)


async def _send_raw(addr: str, data: bytes) -> bool:
    """Send raw bytes; True if the server closed the connection."""
    host, port = addr.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(data)
    await writer.drain()
    try:
        rest = await asyncio.wait_for(reader.read(), 2)
        closed = True
        del rest
    except TimeoutError:
        closed = False
    writer.close()
    return closed


@pytest.mark.parametrize(
    "garbage",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        struct.pack(">i", -1) + b"\x00" * 8,
        struct.pack(">i", 1 << 30),
        struct.pack(">iI", 12, 8) + b"notjson!",
    ],
)
async def test_garbage_closes_only_that_connection(served, client, garbage: bytes) -> None:
    _fx, _server, addr = served
    assert (await client.invoke(addr, RemotingCommand(code=ECHO, body=b"1"), 2)).body == b"1"
    assert await _send_raw(addr, garbage)
    # the server and every other connection keep going
    assert (await client.invoke(addr, RemotingCommand(code=ECHO, body=b"2"), 2)).body == b"2"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.binary(min_size=1, max_size=64))
async def test_live_server_survives_random_bytes(served, payload: bytes) -> None:
    _fx, _server, addr = served
    host, port = addr.split(":")
    _reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(payload)
    await writer.drain()
    writer.close()
    c = RemotingClient()
    try:
        assert (await c.invoke(addr, RemotingCommand(code=ECHO, body=b"ok"), 2)).body == b"ok"
    finally:
        await c.close()

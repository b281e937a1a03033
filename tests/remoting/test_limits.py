"""A server's connection limits over real sockets: idle connections, the cap, bad frames, metrics.

Idle times here are fractions of a second so the tests stay fast; the server's sweep closes a
connection between one idle time and one idle time plus a sweep interval after its last byte.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from rocketq import ratelimit, settings
from rocketq.broker.settings import BrokerBehaviour
from rocketq.namesrv.settings import NamesrvSettings
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting import connection as connection_mod
from rocketq.remoting import limits
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection
from rocketq.remoting.limits import ConnectionLimits
from rocketq.remoting.server import RemotingServer
from rocketq.settings import SettingsError

ECHO, SLOW = 1, 2
IDLE = 0.3


async def _echo(conn: Connection, req: RemotingCommand) -> RemotingCommand:
    return req.response(ResponseCode.SUCCESS, body=req.body)


@pytest.fixture
async def idle_server() -> AsyncIterator[RemotingServer]:
    server = RemotingServer({ECHO: _echo}, host="127.0.0.1", name="test",
                            limits=ConnectionLimits(idle_seconds=IDLE))
    await server.start()
    yield server
    await server.close()


async def _closed_by_server(port: int, data: bytes = b"", timeout: float = 5) -> bool:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    try:
        async with asyncio.timeout(timeout):
            while await reader.read(65536):
                pass
        return True
    except TimeoutError:
        return False
    finally:
        writer.close()


async def test_a_silent_connection_is_closed_after_the_idle_time(idle_server: RemotingServer) -> None:
    assert await _closed_by_server(idle_server.port, timeout=IDLE * 10)
    assert idle_server.stats.idle_closed == 1


async def test_a_busy_connection_stays_and_a_client_reconnects_after_an_idle_close(
    idle_server: RemotingServer,
) -> None:
    addr = f"127.0.0.1:{idle_server.port}"
    client = RemotingClient()
    try:
        first = await client.connection(addr)
        for _ in range(int(IDLE * 3 / 0.05)):  # traffic every 50 ms for three idle times
            await client.invoke(addr, RemotingCommand(code=ECHO, body=b"x"), 2)
            await asyncio.sleep(0.05)
        assert not first.closed and idle_server.stats.idle_closed == 0
        async with asyncio.timeout(IDLE * 10):
            await first.wait_closed()
        answer = await client.invoke(addr, RemotingCommand(code=ECHO, body=b"again"), 2)
        assert answer.body == b"again" and (await client.connection(addr)) is not first
        assert idle_server.stats.idle_closed == 1
    finally:
        await client.close()


async def test_a_client_closes_its_idle_connections_but_not_one_waiting_for_an_answer() -> None:
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def slow(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await gate
        return req.response(ResponseCode.SUCCESS)

    server = RemotingServer({ECHO: _echo, SLOW: slow}, host="127.0.0.1", limits=ConnectionLimits(idle_seconds=0))
    await server.start()
    addr = f"127.0.0.1:{server.port}"
    client = RemotingClient(idle_seconds=IDLE)
    try:
        first = await client.connection(addr)
        waiting = asyncio.ensure_future(client.invoke(addr, RemotingCommand(code=SLOW), 10))
        await asyncio.sleep(IDLE * 4)  # silent all along, but a request is under way
        assert not first.closed
        gate.set_result(None)
        await waiting
        async with asyncio.timeout(IDLE * 10):
            await first.wait_closed()
        assert (await client.invoke(addr, RemotingCommand(code=ECHO, body=b"b"), 2)).body == b"b"
        assert (await client.connection(addr)) is not first
    finally:
        await client.close()
        await server.close()


async def test_connections_over_the_cap_are_closed_at_once(caplog: pytest.LogCaptureFixture) -> None:
    server = RemotingServer({ECHO: _echo}, host="127.0.0.1", name="test",
                            limits=ConnectionLimits(idle_seconds=0, max_connections=2))
    await server.start()
    held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(2)]
    try:
        caplog.set_level(logging.WARNING)
        refused = [await _closed_by_server(server.port, timeout=2) for _ in range(3)]
        assert refused == [True, True, True] and server.stats.refused == 3
        assert len([r for r in caplog.records if "refusing connection" in r.getMessage()]) == 1
        held[0][1].close()
        await asyncio.sleep(0.1)
        client = RemotingClient()
        try:  # a place came free: a new client is served
            assert (await client.invoke(f"127.0.0.1:{server.port}", RemotingCommand(code=ECHO, body=b"in"), 2)).body
        finally:
            await client.close()
    finally:
        for _reader, writer in held:
            writer.close()
        await server.close()


async def test_bad_frames_are_counted_and_logged_once_per_peer_host(
    idle_server: RemotingServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connection_mod, "_peer_log", ratelimit.LogLimiter(connection_mod.log))
    caplog.set_level(logging.WARNING)
    for _ in range(20):
        assert await _closed_by_server(idle_server.port, b"GET / HTTP/1.1\r\n\r\n")
    assert idle_server.stats.bad_frames == 20
    assert len([r for r in caplog.records if "bad frame" in r.getMessage()]) == 1
    registry = CollectorRegistry()
    registry.register(idle_server.collector())
    text = generate_latest(registry).decode()
    assert 'rocketmq_remoting_bad_frames_total{process="test"} 20.0' in text
    assert 'rocketmq_remoting_connections{process="test"}' in text


def test_the_reserve_keeps_descriptors_for_the_store_at_any_limit() -> None:
    assert limits.first_reserved_descriptor(256) == 256 - limits.MIN_DESCRIPTOR_RESERVE
    assert limits.first_reserved_descriptor(1 << 20) == (1 << 20) - (1 << 20) // limits.DESCRIPTOR_RESERVE_FRACTION
    assert limits.derived_max_connections(32) == 0  # too few descriptors to serve anyone safely
    with pytest.raises(SettingsError, match="serverChannelMaxIdleTimeSeconds"):
        ConnectionLimits(idle_seconds=-1)


@pytest.mark.parametrize("group", [BrokerBehaviour, NamesrvSettings])
def test_broker_and_name_server_read_their_limits_from_the_config_file(group: type) -> None:
    conf = {"serverChannelMaxIdleTimeSeconds": "30", "serverMaxConnections": "500"}
    assert settings.build(group, conf, environ={}).connection_limits == ConnectionLimits(30, 500)
    assert settings.build(group, {}, environ={}).connection_limits == ConnectionLimits(120, 0)
    with pytest.raises(SettingsError, match="serverMaxConnections=-1"):
        settings.build(group, {"serverMaxConnections": "-1"}, environ={})


def test_start_up_raises_the_soft_open_file_limit_to_the_hard_one() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 256:
        pytest.skip(f"needs a finite hard limit above 256 (hard is {hard})")

    def low_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    code = ("import resource; from rocketq.remoting import limits; "
            "print(limits.raise_nofile_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    out = subprocess.run([sys.executable, "-c", code], preexec_fn=low_soft_limit, capture_output=True,
                         text=True, check=True, timeout=30).stdout.split()
    assert out == [str(hard), str(hard)]

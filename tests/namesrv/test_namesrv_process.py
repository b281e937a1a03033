"""`rocketq namesrv` as a real process: register over the wire, expiry, close, SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest
from namesrv_fakes import free_port, register, route_query

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.client import RemotingClient

ROCKETQ = str(Path(sys.executable).with_name("rocketq"))
STARTUP_TIMEOUT = 60.0
"""Generous: the machine is shared; this bounds a hang, it measures nothing."""


@dataclass
class Process:
    proc: asyncio.subprocess.Process
    addr: str
    metrics_port: int
    ready_line: str


async def launch(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        ROCKETQ, "namesrv", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), STARTUP_TIMEOUT)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[Process]:
    port, metrics_port = free_port(), free_port()
    conf = tmp_path / "namesrv.conf"
    conf.write_text(
        f"bindAddress=127.0.0.1\nkvConfigPath={tmp_path / 'kv.json'}\nmetricsPort={metrics_port}\n"
        "scanNotActiveBrokerInterval=100\nbrokerChannelExpiredTime=1500\nrocketmqHome=/opt/rocketmq\n")
    proc = await launch("-c", str(conf), "-p", str(port))
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), STARTUP_TIMEOUT)).decode().strip()
        yield Process(proc, f"127.0.0.1:{port}", metrics_port, line)
    finally:
        await stop(proc)


async def eventually(check: Callable[[], Awaitable[bool]], attempts: int = 600) -> None:
    """Retry an async check until it holds; it is driven by the server's own timers."""
    for _ in range(attempts):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition never became true")


async def test_register_query_expire_close_and_sigterm(namesrv: Process) -> None:
    assert namesrv.ready_line == f"rocketq namesrv listening on {namesrv.addr}"
    client = RemotingClient()
    broker_a, broker_b = RemotingClient(), RemotingClient()
    try:
        resp = await broker_a.invoke(namesrv.addr, register(topics=("TopicTest",)), 5)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        route = await client.invoke(namesrv.addr, route_query("TopicTest"), 5)
        assert route.code == ResponseCode.SUCCESS
        assert orjson.loads(route.body)["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}
        info = await client.invoke(namesrv.addr, RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO), 5)
        assert orjson.loads(info.body)["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}

        # Closing the broker's connection removes its routes without waiting for expiry.
        await broker_a.close()

        async def gone(topic: str) -> bool:
            resp = await client.invoke(namesrv.addr, route_query(topic), 5)
            return resp.code == ResponseCode.TOPIC_NOT_EXIST

        await eventually(lambda: gone("TopicTest"))

        # A broker that stays connected but silent expires, and its connection is dropped.
        await broker_b.invoke(namesrv.addr, register(name="broker-b", addr="127.0.0.1:10921", topics=("Quiet",)), 5)
        conn = await broker_b.connection(namesrv.addr)
        assert not await gone("Quiet")
        await eventually(lambda: gone("Quiet"))

        async def dropped() -> bool:
            return conn.closed

        await eventually(dropped)

        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{namesrv.metrics_port}/health") as health:
                assert health.status == 200
            async with http.get(f"http://127.0.0.1:{namesrv.metrics_port}/metrics") as metrics:
                text = await metrics.text()
        assert 'rocketmq_namesrv_brokers_removed_total{reason="expired"} 1.0' in text
        assert 'rocketmq_namesrv_brokers_removed_total{reason="connection_closed"} 1.0' in text
    finally:
        await client.close()
        await broker_a.close()
        await broker_b.close()

    namesrv.proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(namesrv.proc.wait(), STARTUP_TIMEOUT) == 0
    assert namesrv.proc.stderr is not None
    stderr = (await namesrv.proc.stderr.read()).decode()
    assert "Traceback" not in stderr
    assert "ignoring config keys rocketq namesrv does not use: rocketmqHome" in stderr


async def test_invalid_config_exits_2_with_the_key_named(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text("listenPort=ninety\n")
    proc = await launch("-c", str(conf))
    try:
        _out, err = await asyncio.wait_for(proc.communicate(), STARTUP_TIMEOUT)
    finally:
        await stop(proc)
    assert proc.returncode == 2
    assert "listenPort='ninety'" in err.decode()
    assert "Traceback" not in err.decode()


async def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = blocker.sockets[0].getsockname()[1]
    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"bindAddress=127.0.0.1\nmetricsPort=0\nkvConfigPath={tmp_path / 'kv.json'}\n")
    try:
        proc = await launch("-c", str(conf), "-p", str(port))
        try:
            _out, err = await asyncio.wait_for(proc.communicate(), STARTUP_TIMEOUT)
        finally:
            await stop(proc)
    finally:
        blocker.close()
        await blocker.wait_closed()
    assert proc.returncode == 1
    assert "cannot start" in err.decode() and "Traceback" not in err.decode()

"""A broker or name server that cannot start says why in one line, with an exit code to act on.

2: the configuration (or the files it points at) must change before a start can succeed;
1: the machine is not ready (a port taken, the store locked by a running broker).
A secondary listener (/metrics) whose port is taken never stops a process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from clusterprocs import Proc, Processes

from rocketq.client.producer import Producer
from rocketq.local.ports import free_port
from rocketq.metrics import announcing
from rocketq.protocol.messagetypes import Message

ROCKETQ = [sys.executable, "-m", "rocketq"]
SEGMENT = 64 * 1024 * 1024


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ROCKETQ, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def broker_args(store: Path, *extra: str) -> list[str]:
    return ["broker", "-n", "127.0.0.1:1", "-p", str(free_port()), "--store-dir", str(store),
            "--set", f"haListenPort={free_port()}", "--set", "brokerIP1=127.0.0.1",
            "--set", f"mappedFileSizeCommitLog={SEGMENT}", *extra]


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int, *phrases: str) -> None:
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == code, result.stderr
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for phrase in phrases:
        assert phrase in errors[0], errors[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("where", ["file", "flag", "set"])
def test_a_port_out_of_range_is_refused_wherever_it_comes_from(where: str, tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-a\n" + ("listenPort=70000\n" if where == "file" else ""))
    args = ["broker", "-c", str(conf), "--store-dir", str(tmp_path / "store"), "-n", "127.0.0.1:1"]
    if where == "flag":
        args += ["-p", "70000"]
    elif where == "set":
        args += ["--set", "listenPort=70000"]
    result = run(*args, timeout=30)
    assert_one_line_error(result, 2, "listenPort=70000")
    assert not (tmp_path / "store").exists(), "nothing may be opened before the settings are checked"


@pytest.mark.parametrize("key, value", [
    ("metricsPort", "65536"), ("haListenPort", "-5"), ("namesrvAddr", "127.0.0.1:9876;127.0.0.1:99999"),
])
def test_every_port_setting_is_range_checked(key: str, value: str, tmp_path: Path) -> None:
    result = run("broker", "--store-dir", str(tmp_path / "store"), "--set", f"{key}={value}", timeout=30)
    assert_one_line_error(result, 2, key)


def test_a_namesrv_port_out_of_range_from_the_environment_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "NAMESRV_ADDR": "127.0.0.1:123456"}
    result = subprocess.run([*ROCKETQ, "broker", "--store-dir", str(tmp_path / "store")], capture_output=True,
                            text=True, timeout=30, env=env)
    assert_one_line_error(result, 2, "namesrvAddr")


def test_namesrv_port_out_of_range_is_refused(tmp_path: Path) -> None:
    result = run("namesrv", "-p", "70000", timeout=30)
    assert_one_line_error(result, 2, "listenPort=70000")


def test_bad_store_settings_are_refused_when_the_config_is_loaded(tmp_path: Path) -> None:
    result = run(*broker_args(tmp_path / "store", "--set", "deleteWhen=25"), timeout=30)
    assert_one_line_error(result, 2, "deleteWhen")
    assert not (tmp_path / "store").exists(), "the store must not be opened with settings it cannot use"


@pytest.mark.parametrize("content, message", [(None, "cannot read config file"),
                                              (b"brokerName=\xff\xfe\n", "cannot parse config file")])
def test_unreadable_config_file(content: bytes | None, message: str, tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    if content is not None:
        conf.write_bytes(content)
    result = run("broker", "-c", str(conf), timeout=30)
    assert_one_line_error(result, 2, message)


def test_store_locked_by_another_broker(processes: Processes, tmp_path: Path) -> None:
    store = tmp_path / "store"
    processes.broker("127.0.0.1:1", store=store)
    result = run(*broker_args(store))
    assert_one_line_error(result, 1, "is in use by pid")


async def test_changed_commitlog_file_size(processes: Processes, tmp_path: Path) -> None:
    store = tmp_path / "store"
    ns = processes.namesrv()
    broker = processes.broker(ns.address, store=store)
    async with Producer("startup-pg", namesrv_addr=ns.address) as producer:
        await producer.send(Message("StartupErrors", b"makes a CommitLog segment"))
    assert broker.stop() == 0
    result = run(*broker_args(store, "--set", f"mappedFileSizeCommitLog={SEGMENT // 2}"))
    assert_one_line_error(result, 2, "is mappedFileSizeCommitLog=")


def test_a_taken_listen_port_is_exit_1(taken_port: int, tmp_path: Path) -> None:
    args = broker_args(tmp_path / "store")
    args[args.index("-p") + 1] = str(taken_port)
    result = run(*args)
    assert_one_line_error(result, 1, f":{taken_port}", "Address already in use")


def test_a_taken_metrics_port_leaves_the_broker_serving(processes: Processes, taken_port: int) -> None:
    ns = processes.namesrv("--metrics-port", str(taken_port))
    broker = processes.broker(ns.address, extra=("--metrics-port", str(taken_port)))
    for proc in (ns, broker):
        text = proc.log.read_text()
        errors = [line for line in text.splitlines() if "ERROR" in line]
        assert len(errors) == 1 and f"cannot serve /metrics and /health on 0.0.0.0:{taken_port}" in errors[0], text
        assert proc.popen.poll() is None and "Traceback" not in text


def test_metrics_default_to_a_free_port_that_is_logged(processes: Processes, tmp_path: Path) -> None:
    """No metrics port given anywhere: a name server and two brokers on one host each get their own."""
    ns = processes.start(["namesrv", "-p", str(free_port())], "namesrv")
    brokers = [default_metrics_broker(processes, ns.address, name, tmp_path) for name in ("broker-a", "broker-b")]
    started = [ns, *brokers]
    ports = []
    for proc in started:
        port = announcing.find_port(proc.log.read_text())
        assert port is not None, proc.log.read_text()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as resp:
            assert resp.status == 200
        ports.append(port)
    assert len(set(ports)) == 3


def default_metrics_broker(processes: Processes, namesrv: str, name: str, tmp_path: Path) -> Proc:
    return processes.start(["broker", "-n", namesrv, "-p", str(free_port()), "--store-dir", str(tmp_path / name),
                            "--set", f"haListenPort={free_port()}", "--set", f"brokerName={name}",
                            "--set", f"mappedFileSizeCommitLog={SEGMENT}"], name)

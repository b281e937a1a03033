"""Real processes for integration tests: name servers and brokers on 127.0.0.1, free ports, tmp dirs.

Every fixture stops what it started, by PID, even when the test fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketq.localcluster import ClusterLayout, ClusterState, LocalCluster, free_port

READY = " listening on "


@dataclass
class Proc:
    """One rocketq process started by a test."""

    popen: subprocess.Popen[bytes]
    address: str
    log: Path

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode

    def kill9(self) -> None:
        self.stop(signal.SIGKILL)


def start_process(args: list[str], log: Path, timeout: float = 30, env: dict[str, str] | None = None) -> Proc:
    with open(log, "ab") as out:
        popen = subprocess.Popen(
            [sys.executable, "-m", "rocketq", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        lines = [line for line in text.splitlines() if READY in line]
        if lines:
            return Proc(popen, lines[-1].rsplit(READY, 1)[1].strip(), log)
        if popen.poll() is not None:
            raise RuntimeError(f"rocketq {args[0]} exited {popen.returncode}:\n{text[-3000:]}")
        time.sleep(0.05)
    popen.kill()
    popen.wait(5)
    raise RuntimeError(f"rocketq {args[0]} not ready in {timeout}s:\n{log.read_text(errors='replace')[-3000:]}")


class Processes:
    """Starts namesrv/broker processes for one test and stops all of them at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started: list[Proc] = []

    def namesrv(self, *extra: str) -> Proc:
        port = free_port()
        proc = start_process(
            ["namesrv", "-p", str(port), "--metrics-port", "0", *extra], self.tmp / f"namesrv-{port}.log"
        )
        self.started.append(proc)
        return proc

    def broker(
        self,
        namesrv: str,
        name: str = "broker-a",
        *,
        store: Path | None = None,
        port: int | None = None,
        config: dict[str, str] | None = None,
        extra: tuple[str, ...] = (),
    ) -> Proc:
        port = port or free_port()
        store = store or self.tmp / f"{name}-store"
        args = [
            "broker",
            "-n",
            namesrv,
            "-p",
            str(port),
            "--store-dir",
            str(store),
            "--metrics-port",
            "0",
            "--set",
            f"brokerName={name}",
            "--set",
            "brokerIP1=127.0.0.1",
            "--set",
            "registerNameServerPeriod=1000",
            "--set",
            "mappedFileSizeCommitLog=67108864",
        ]
        for key, value in (config or {}).items():
            args += ["--set", f"{key}={value}"]
        proc = start_process([*args, *extra], self.tmp / f"{name}-{port}.log")
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            proc.stop()


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    procs = Processes(tmp_path)
    try:
        yield procs
    finally:
        procs.stop_all()


@pytest.fixture
def local_cluster(tmp_path: Path) -> Iterator[ClusterState]:
    """One name server and two broker groups, as `rocketq local up` starts them."""
    cluster = LocalCluster(
        ClusterLayout.with_free_ports(
            tmp_path / "cluster",
            extra_broker_config=(
                ("registerNameServerPeriod", "1000"),
                ("mappedFileSizeCommitLog", str(64 * 1024 * 1024)),
            ),
        )
    )
    state = cluster.up()
    try:
        yield state
    finally:
        cluster.down()

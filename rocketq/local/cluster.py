"""A whole rocketq cluster as local processes: one name server and N broker groups.

``rocketq local up`` starts them detached (their own session, logs under the cluster
directory), waits until each prints its ready line, and records their PIDs and addresses in
``cluster.json``; ``down`` stops exactly those PIDs (SIGTERM, then SIGKILL after a grace
period); ``status`` reports which are alive. Metrics ports are the processes' own choice by
default (any free port); each logs the port it got, and that is what is recorded and shown.
The same class backs ``make run`` and the tests. It starts processes with this interpreter
(``python -m rocketq``), so it runs whatever rocketq is installed next to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

from rocketq.local.ports import free_port
from rocketq.metrics import announcing

READY_MARK: Final = " listening on "
START_TIMEOUT_S: Final = 30.0
STOP_GRACE_S: Final = 15.0


class LocalClusterError(RuntimeError):
    """A process did not start or the cluster directory is not usable."""


@dataclass
class ProcessRecord:
    name: str
    pid: int
    address: str
    metrics_port: int | None
    """The HTTP /metrics and /health port the process announced; None if it has none."""
    log: str


@dataclass
class ClusterState:
    namesrv: str
    processes: list[ProcessRecord] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"namesrv": self.namesrv, "processes": [asdict(p) for p in self.processes]}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> ClusterState:
        raw = json.loads(text)
        return cls(raw["namesrv"], [ProcessRecord(**p) for p in raw["processes"]])


@dataclass(frozen=True)
class ClusterLayout:
    base_dir: Path
    broker_groups: int = 2
    host: str = "127.0.0.1"
    namesrv_port: int = 9876
    broker_base_port: int = 10911
    metrics_base_port: int = 0
    """0: every process takes any free port; N: the name server N, brokers N+1, N+2, ..."""
    flush_disk_type: str = "ASYNC_FLUSH"
    extra_broker_config: tuple[tuple[str, str], ...] = ()

    @classmethod
    def with_free_ports(cls, base_dir: Path, **kwargs: object) -> ClusterLayout:
        return cls(base_dir, namesrv_port=0, broker_base_port=0, metrics_base_port=0, **kwargs)  # type: ignore[arg-type]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        done, _status = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


class LocalCluster:
    def __init__(self, layout: ClusterLayout) -> None:
        self.layout = layout
        self.state_file = layout.base_dir / "cluster.json"

    def _port(self, configured: int, offset: int) -> int:
        return free_port(self.layout.host) if configured == 0 else configured + offset

    def _metrics_port(self, offset: int) -> int:
        base = self.layout.metrics_base_port
        return 0 if base == 0 else base + offset

    def up(self) -> ClusterState:
        if self.state_file.exists() and any(_alive(p.pid) for p in self.state().processes):
            raise LocalClusterError(
                f"a cluster is already running from {self.layout.base_dir}; run `rocketq local down`"
            )
        self.layout.base_dir.mkdir(parents=True, exist_ok=True)
        ns_port = self._port(self.layout.namesrv_port, 0)
        namesrv_addr = f"{self.layout.host}:{ns_port}"
        state = ClusterState(namesrv_addr)
        try:
            metrics = self._metrics_port(0)
            state.processes.append(
                self._spawn("namesrv", ["namesrv", "-p", str(ns_port), "--metrics-port", str(metrics)])
            )
            for i in range(self.layout.broker_groups):
                name = f"broker-{chr(ord('a') + i)}" if i < 26 else f"broker-{i}"
                port = self._port(self.layout.broker_base_port, i * 10)
                metrics = self._metrics_port(i + 1)
                argv = [
                    "broker",
                    "-n",
                    namesrv_addr,
                    "-p",
                    str(port),
                    "--metrics-port",
                    str(metrics),
                    "--store-dir",
                    str(self.layout.base_dir / name / "store"),
                    "--set",
                    f"brokerName={name}",
                    "--set",
                    f"brokerIP1={self.layout.host}",
                    "--set",
                    f"flushDiskType={self.layout.flush_disk_type}",
                    "--set",
                    f"haListenPort={self._port(self.layout.broker_base_port, i * 10 + 1)}",  # a free one with port 0
                ]
                for key, value in self.layout.extra_broker_config:
                    argv += ["--set", f"{key}={value}"]
                state.processes.append(self._spawn(name, argv))
        except BaseException:
            self._stop(state)
            raise
        self.state_file.write_text(state.to_json())
        return state

    def _spawn(self, name: str, argv: list[str]) -> ProcessRecord:
        log_path = self.layout.base_dir / f"{name}.log"
        log_file = open(log_path, "wb")  # noqa: SIM115 - handed to the child, closed below
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rocketq", *argv],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log_file.close()
        address = self._wait_ready(proc, log_path, name)
        metrics_port = announcing.find_port(log_path.read_text(errors="replace"))
        return ProcessRecord(name, proc.pid, address, metrics_port, str(log_path))

    @staticmethod
    def _wait_ready(proc: subprocess.Popen[bytes], log_path: Path, name: str) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = log_path.read_text(errors="replace")
            for line in text.splitlines():
                if READY_MARK in line:
                    return line.rsplit(READY_MARK, 1)[1].strip()
            if proc.poll() is not None:
                raise LocalClusterError(f"{name} exited with {proc.returncode}:\n{text[-2000:]}")
            time.sleep(0.05)
        proc.kill()
        raise LocalClusterError(f"{name} did not become ready within {START_TIMEOUT_S:.0f}s (log: {log_path})")

    def state(self) -> ClusterState:
        try:
            return ClusterState.from_json(self.state_file.read_text())
        except FileNotFoundError:
            raise LocalClusterError(f"no cluster recorded in {self.layout.base_dir}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise LocalClusterError(f"{self.state_file} is unreadable: {exc}") from None

    def status(self) -> list[tuple[ProcessRecord, bool]]:
        return [(p, _alive(p.pid)) for p in self.state().processes]

    def down(self) -> list[ProcessRecord]:
        state = self.state()
        stopped = self._stop(state)
        self.state_file.unlink(missing_ok=True)
        return stopped

    @staticmethod
    def _stop(state: ClusterState) -> list[ProcessRecord]:
        # brokers first (they unregister from the name server), the name server last
        ordered = sorted(state.processes, key=lambda p: p.name == "namesrv")
        for record in ordered:
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for record in ordered:
            while _alive(record.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(record.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(record.pid, signal.SIGKILL)
        return ordered

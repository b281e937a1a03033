"""One rocketq server process per handle, on free ports: for tests and benchmark drivers.

``start`` runs ``rocketq ARGS`` (this interpreter's rocketq) with its output in a log file, so a
chatty process can never block on a full pipe and the log is what a failure shows; it returns
once the process prints its ready line (``... listening on HOST:PORT``). ``start_namesrv`` and
``start_broker`` build the usual command lines on 127.0.0.1: free ports (the HA port too, never
``listenPort + 1``, which may be taken), a store under the work directory, settings as
``KEY=VALUE`` strings.

A handle is stopped by its own PID (SIGTERM, wait, then SIGKILL), never by name. It also reads
the process's memory and CPU from ``/proc`` for benchmarks. ``rocketq.local.cluster`` starts
detached, recorded processes for ``rocketq local up``; this module is for the caller that owns
its processes and stops them itself.

The deadlines only bound how long a broken start or stop can hang the caller; nothing here
measures how fast anything is.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocketq.local.ports import free_port

HOST: Final = "127.0.0.1"
COMMAND: Final = (sys.executable, "-m", "rocketq")
READY: Final = re.compile(rb"listening on (\S+)")
START_DEADLINE_S: Final = 60.0
STOP_DEADLINE_S: Final = 20.0
POLL_S: Final = 0.05
LOG_TAIL: Final = 4000
"""Characters of the log an error shows."""
CLK_TCK: Final = os.sysconf("SC_CLK_TCK")


class StartError(RuntimeError):
    """The process exited or never printed its ready line; the message ends with its log."""


@dataclass
class ServerProcess:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int

    @property
    def addr(self) -> str:
        return f"{HOST}:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def rss_mb(self) -> float:
        """Resident memory, from /proc (Linux)."""
        for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def cpu_s(self) -> float:
        """User + system CPU seconds so far, from /proc (Linux)."""
        fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self, deadline: float = STOP_DEADLINE_S) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``deadline`` seconds. Idempotent."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(deadline)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def start(name: str, args: list[str], log: Path, port: int, *, deadline: float = START_DEADLINE_S,
          env: Mapping[str, str] | None = None) -> ServerProcess:
    """Start ``rocketq ARGS`` and wait for its ready line; stop it and raise StartError if it
    exits first or the line does not come within ``deadline`` seconds."""
    with log.open("wb") as sink:
        popen = subprocess.Popen([*COMMAND, *args], stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    proc = ServerProcess(name, popen, log, port)
    give_up = time.monotonic() + deadline
    while not READY.search(log.read_bytes()):
        if popen.poll() is not None or time.monotonic() > give_up:
            proc.stop()
            raise StartError(f"{name} did not start (exit {popen.returncode}):\n{proc.output()[-LOG_TAIL:]}")
        time.sleep(POLL_S)
    return proc


def start_namesrv(workdir: Path, *, port: int | None = None, metrics_port: int = 0) -> ServerProcess:
    """A name server logging to ``workdir/namesrv.log``."""
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    return start("namesrv", ["namesrv", "-p", str(port), "--metrics-port", str(metrics_port)],
                 workdir / "namesrv.log", port)


def start_broker(workdir: Path, namesrv_addr: str, broker_name: str, *settings: str, port: int | None = None,
                 ha_port: int | None = None, metrics_port: int = 0, log_name: str | None = None,
                 env: Mapping[str, str] | None = None) -> ServerProcess:
    """A broker named ``broker_name`` with its store in ``workdir/<log_name>`` (default: the
    broker name) and ``settings`` (``KEY=VALUE``) on top of the defaults. Pass the same
    ``port``/``ha_port`` to restart it on its old addresses."""
    port = port or free_port()
    log_name = log_name or broker_name
    store = workdir / log_name
    store.mkdir(parents=True, exist_ok=True)
    args = ["broker", "-n", namesrv_addr, "-p", str(port), "--store-dir", str(store),
            "--metrics-port", str(metrics_port), "--set", f"brokerName={broker_name}", "--set", f"brokerIP1={HOST}",
            "--set", f"haListenPort={ha_port or free_port()}"]
    for item in settings:
        args += ["--set", item]
    return start(f"broker {log_name}", args, workdir / f"{log_name}.log", port, env=env)

"""Real name server and broker processes for the admin integration tests (fixtures in conftest).

``rocketq namesrv`` and ``rocketq broker`` run as subprocesses on 127.0.0.1 with free ports and a
temporary store; each prints ``... listening on HOST:PORT`` once it serves. Their output goes to a
log file (so a chatty process can never block on a full pipe), which is also what a failing
test shows. Every process started here is stopped by its handle: SIGTERM, wait, then SIGKILL if
it does not exit.

The deadlines below only bound how long a broken start can hang the suite; nothing is asserted
about how fast anything is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from rocketq.admin.client import AdminClient
from rocketq.local.ports import free_port
from rocketq.remoting.errors import RemotingError

ROCKETQ: Final = str(Path(sys.executable).with_name("rocketq"))
START_DEADLINE: Final = 60.0
STOP_DEADLINE: Final = 20.0
READY: Final = re.compile(r"listening on (\S+)")


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def start(name: str, args: list[str], log: Path, port: int) -> Process:
    """Start ``rocketq <args>`` and wait for its ready line; stop it and fail if it never comes."""
    with log.open("wb") as sink:
        popen = subprocess.Popen([ROCKETQ, *args], stdout=sink, stderr=subprocess.STDOUT,
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})
    proc = Process(name, popen, log, port)
    deadline = time.monotonic() + START_DEADLINE
    while not READY.search(proc.output()):
        if popen.poll() is not None or time.monotonic() > deadline:
            proc.stop()
            pytest.fail(f"{name} did not start (exit {popen.returncode}):\n{proc.output()[-4000:]}")
        time.sleep(0.05)
    return proc


def start_namesrv(workdir: Path) -> Process:
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    return start("namesrv", ["namesrv", "-p", str(port), "--metrics-port", "0"], workdir / "namesrv.log", port)


def start_broker(workdir: Path, namesrv: Process, broker_name: str, *extra: str) -> Process:
    port = free_port()
    store = workdir / broker_name
    store.mkdir(parents=True, exist_ok=True)
    args = ["broker", "-n", namesrv.addr, "-p", str(port), "--store-dir", str(store), "--metrics-port", "0",
            "--set", f"brokerName={broker_name}", "--set", "registerNameServerPeriod=1000",
            "--set", "brokerIP1=127.0.0.1", "--set", f"haListenPort={free_port()}"]  # not listenPort + 1: may be taken
    for item in extra:
        args += ["--set", item]
    proc = start(f"broker {broker_name}", args, workdir / f"{broker_name}.log", port)
    try:
        asyncio.run(wait_registered(namesrv.addr, broker_name))
    except BaseException:
        proc.stop()
        raise
    return proc


async def wait_registered(namesrv_addr: str, broker_name: str) -> None:
    """Until the name server lists the broker group with a master."""
    deadline = time.monotonic() + START_DEADLINE
    async with AdminClient(namesrv_addr) as admin:
        while True:
            with contextlib.suppress(RemotingError):
                data = (await admin.cluster_info()).broker(broker_name)
                if data is not None and data.master_addr:
                    return
            if time.monotonic() > deadline:
                pytest.fail(f"broker {broker_name} never registered with {namesrv_addr}")
            await asyncio.sleep(0.1)


@dataclass
class Cluster:
    namesrv: Process
    brokers: dict[str, Process]

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.addr

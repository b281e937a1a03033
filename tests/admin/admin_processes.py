"""Real name server and broker processes for the admin integration tests (fixtures in conftest).

The processes themselves are ``rocketq.local.processes``' (free ports on 127.0.0.1, a temporary
store, output in a log file, stopped by PID); this module adds what the admin tests share: a
short registration period, waiting until the name server routes a new broker, and ``Cluster``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from rocketq.admin.client import AdminClient
from rocketq.local import processes
from rocketq.local.ports import free_port as free_port
from rocketq.local.processes import ServerProcess as Process
from rocketq.remoting.errors import RemotingError

ROCKETQ: Final = str(Path(sys.executable).with_name("rocketq"))
"""The ``rocketq`` command, for tests that run the CLI."""
START_DEADLINE: Final = processes.START_DEADLINE_S


def start_namesrv(workdir: Path) -> Process:
    return processes.start_namesrv(workdir)


def start_broker(workdir: Path, namesrv: Process, broker_name: str, *extra: str) -> Process:
    """A broker group's master (``extra``: more ``KEY=VALUE`` settings), once the name server routes it."""
    proc = processes.start_broker(workdir, namesrv.addr, broker_name, "registerNameServerPeriod=1000", *extra)
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

"""Apache RocketMQ's multi-broker config sets run on one host, every broker of a set at once.

Only what a test machine must change is overridden: the store paths (a temporary directory), the
name server's address, and the remoting and HA ports, which the files leave at RocketMQ's defaults
10911 and listenPort + 1 (a RocketMQ user running a set on one host must give them distinct ones
too; a test picks free ones, as listenPort + 1 of a free port may be taken). Nothing else, not
the metrics port: each process picks a free one, so they never collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest
from clusterprocs import Proc, Processes

from rocketq.admin.client import AdminClient
from rocketq.local.ports import free_port
from rocketq.metrics import announcing
from rocketq.remoting.errors import RemotingError

CONF = Path(__file__).resolve().parents[1] / "fixtures" / "rocketmq-conf"
REGISTER_DEADLINE_S = 60.0
"""Bounds a hang on a shared machine; nothing is measured."""

SETS = {
    "2m-noslave": ["broker-a", "broker-b", "broker-trace"],
    "2m-2s-async": ["broker-a", "broker-a-s", "broker-b", "broker-b-s"],
    "2m-2s-sync": ["broker-a", "broker-b"],
}


def start_broker(processes: Processes, conf: Path, namesrv: str, tmp: Path) -> Proc:
    store = tmp / conf.stem
    return processes.start(
        ["broker", "-c", str(conf), "-n", namesrv, "-p", str(free_port()), "--set", f"haListenPort={free_port()}",
         "--set", f"storePathRootDir={store}", "--set", f"storePathCommitLog={store / 'commitlog'}"],
        conf.stem,
    )


async def registered_members(namesrv: str) -> dict[str, set[int]]:
    """brokerName -> the brokerIds the name server lists, once every one has registered."""
    async with AdminClient(namesrv) as admin:
        with contextlib.suppress(RemotingError):
            info = await admin.cluster_info()
            return {data.broker_name: set(data.broker_addrs) for data in info.brokers}
    return {}


@pytest.mark.parametrize("conf_set", sorted(SETS))
async def test_a_whole_set_runs_on_one_host(conf_set: str, processes: Processes, tmp_path: Path) -> None:
    namesrv = processes.start(["namesrv", "-p", str(free_port())], "namesrv")
    brokers = [start_broker(processes, CONF / conf_set / f"{name}.properties", namesrv.address, tmp_path)
               for name in SETS[conf_set]]
    expected: dict[str, set[int]] = {}
    for name in SETS[conf_set]:
        expected.setdefault(name.removesuffix("-s"), set()).add(1 if name.endswith("-s") else 0)
    deadline = time.monotonic() + REGISTER_DEADLINE_S
    while (members := await registered_members(namesrv.address)) != expected:
        assert time.monotonic() < deadline, f"registered {members}, expected {expected}"
        await asyncio.sleep(0.1)
    metrics_ports = set()
    for proc in (namesrv, *brokers):
        text = proc.log.read_text()
        assert proc.popen.poll() is None and "ERROR" not in text and "Traceback" not in text, text
        metrics_ports.add(announcing.find_port(text))
    assert None not in metrics_ports and len(metrics_ports) == 1 + len(brokers), metrics_ports

"""Broker groups started from Apache RocketMQ's own 2m-2s config files, adapted to one host.

Only what must differ on one machine is overridden: ports (remoting, HA), paths, the advertised
IP, and a short registration period and heartbeat so a test does not wait RocketMQ's 30 s / 5 s.
Everything else (brokerName, brokerId, brokerRole, flushDiskType, ...) is the file's.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clusterprocs import Proc, Processes, start_process

from rocketq.admin.client import AdminClient
from rocketq.client.pullconsumer import PullConsumer
from rocketq.local.ports import free_port

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rocketmq-conf"
SEGMENT_SIZE = 1024 * 1024
"""Small CommitLog segments, so a test's messages cross segment ends (END_OF_FILE blanks)."""


@dataclass
class Broker:
    proc: Proc
    store: Path
    name: str
    conf: Path
    args: list[str]

    @property
    def address(self) -> str:
        return self.proc.address


def start_broker(procs: Processes, conf: Path, namesrv: str, store: Path, *extra: str,
                 metrics_port: int = 0) -> Broker:
    port, ha_port = free_port(), free_port()
    args = ["broker", "-c", str(conf), "-n", namesrv, "-p", str(port), "--store-dir", str(store),
            "--metrics-port", str(metrics_port),
            "--set", f"storePathCommitLog={store / 'commitlog'}", "--set", "brokerIP1=127.0.0.1",
            "--set", f"haListenPort={ha_port}", "--set", "registerNameServerPeriod=1000",
            "--set", f"mappedFileSizeCommitLog={SEGMENT_SIZE}", "--set", "haSendHeartbeatInterval=1000"]
    for item in extra:
        args += ["--set", item]
    proc = start_process(args, procs.tmp / f"{conf.parent.name}-{conf.stem}-{port}.log")
    procs.started.append(proc)
    return Broker(proc, store, conf.stem, conf, args)


def restart(procs: Processes, broker: Broker) -> None:
    """Start a stopped broker again on the same ports and store."""
    broker.proc = start_process(broker.args, broker.proc.log)
    procs.started.append(broker.proc)


def start_pair(procs: Processes, namesrv: str, *, metrics_port: int = 0) -> tuple[Broker, Broker]:
    """broker-a and its slave from Apache's 2m-2s-async files (the master's metrics on ``metrics_port``)."""
    conf = FIXTURES / "2m-2s-async"
    master = start_broker(procs, conf / "broker-a.properties", namesrv, procs.tmp / "a", metrics_port=metrics_port)
    slave = start_broker(procs, conf / "broker-a-s.properties", namesrv, procs.tmp / "a-s")
    return master, slave


def start_groups(procs: Processes, namesrv: str, masters: str, *extra: str) -> dict[str, Broker]:
    """broker-a, broker-a-s, broker-b, broker-b-s: masters from ``masters`` (2m-2s-async or
    2m-2s-sync), slaves from 2m-2s-async (the sync set has none of its own)."""
    brokers = {}
    for name in ("broker-a", "broker-b"):
        brokers[name] = start_broker(procs, FIXTURES / masters / f"{name}.properties", namesrv,
                                     procs.tmp / name, *extra)
        brokers[f"{name}-s"] = start_broker(procs, FIXTURES / "2m-2s-async" / f"{name}-s.properties", namesrv,
                                            procs.tmp / f"{name}-s", *extra)
    return brokers


async def runtime(addr: str) -> dict[str, str]:
    async with AdminClient("127.0.0.1:1") as admin:  # broker calls only: no name server needed
        return await admin.runtime_info(addr)


async def wait_replicated(master: Broker, slave: Broker, timeout: float = 20) -> dict[str, str]:
    """Until the slave's CommitLog ends where the master's does (and has it dispatched)."""
    deadline = time.monotonic() + timeout
    while True:
        m, s = await runtime(master.address), await runtime(slave.address)
        if m["commitLogMaxOffset"] == s["commitLogMaxOffset"] and int(m["commitLogMaxOffset"]) > 0:
            return s
        if time.monotonic() > deadline:
            raise AssertionError(f"slave {slave.address} at {s['commitLogMaxOffset']}, "
                                 f"master at {m['commitLogMaxOffset']}")
        await asyncio.sleep(0.1)


async def wait_slave_connected(master: Broker, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while (await runtime(master.address)).get("haConnectionCount") != "1":
        if time.monotonic() > deadline:
            raise AssertionError(f"no slave connected to {master.address}")
        await asyncio.sleep(0.1)


def tree(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under ``root``."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def read_keys(namesrv: str, topic: str, group: str) -> list[str]:
    """The KEYS of every message in every queue of ``topic``, read from the start (one entry per
    copy, so a duplicate shows twice); commits no offset that matters to the test."""
    keys: list[str] = []
    async with PullConsumer(group, namesrv_addr=namesrv) as consumer:
        for mq in await consumer.fetch_subscribe_queues(topic):
            offset = 0
            while result := await consumer.pull(mq, "*", offset, max_nums=32):
                if not result.messages:
                    break
                keys.extend(m.properties["KEYS"] for m in result.messages)
                offset = result.next_begin_offset
    return keys


def admin_cli(namesrv: str, *args: str) -> str:
    """``rocketq admin ARGS -n NAMESRV``'s output; the command must succeed."""
    done = subprocess.run([sys.executable, "-m", "rocketq", "admin", *args, "-n", namesrv],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout

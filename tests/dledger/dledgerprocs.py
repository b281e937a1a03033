"""A DLedger group of three real broker processes, started from Apache RocketMQ's own
``dledger/broker-n{0,1,2}.conf`` (only ports and paths changed), and the waits a test or a chaos
run needs on it: who leads, and when every member has caught up.

Shared by tests/dledger/test_group.py and e2e/chaos/dledger.py. A member's state is read from
its ``dLeger*`` runtime-info keys (docs/dledger.md, Admin and metrics).
"""

from __future__ import annotations

import asyncio
import time

from clusterprocs import Processes
from haprocs import FIXTURES, Broker, runtime, start_broker

from rocketq.local.ports import free_port
from rocketq.remoting.errors import RemotingError

POLL_S = 0.1
"""How often the waits below ask the members again."""


def start_group(procs: Processes, namesrv: str, *extra: str, metrics: bool = True) -> list[Broker]:
    """n0, n1, n2 from Apache's files (``extra``: more ``key=value`` settings for each); every port
    explicit (a port 0 could take a peer's port before that peer binds it)."""
    ports = [free_port() for _ in range(3)]
    peers = ";".join(f"n{i}-127.0.0.1:{port}" for i, port in enumerate(ports))
    return [start_broker(procs, FIXTURES / "dledger" / f"broker-n{i}.conf", namesrv, procs.tmp / f"n{i}",
                         f"dLegerPeers={peers}", *extra, metrics_port=free_port() if metrics else 0)
            for i in range(3)]


async def roles(brokers: list[Broker]) -> dict[str, dict[str, str]]:
    """Runtime info of every member that answers, by address."""
    out = {}
    for broker in brokers:
        if broker.proc.popen.poll() is not None:
            continue
        try:
            out[broker.address] = await runtime(broker.address)
        except (RemotingError, OSError, TimeoutError):
            continue
    return out


async def wait_leader(brokers: list[Broker], timeout: float) -> Broker:
    """The member of ``brokers`` that leads and has taken the master's role (brokerId 0, writes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for addr, info in (await roles(brokers)).items():
            if info.get("dLegerRole") == "LEADER" and info.get("brokerRole") == "SYNC_MASTER":
                return next(b for b in brokers if b.address == addr)
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"no leader within {timeout} s: {await roles(brokers)}")


async def wait_caught_up(brokers: list[Broker], timeout: float) -> Broker:
    """Until one member leads and every member has committed what the leader had committed when
    first asked (sends may go on meanwhile); the leader."""
    leader = await wait_leader(brokers, timeout)
    target = int((await runtime(leader.address))["dLegerCommitIndex"])
    deadline = time.monotonic() + timeout
    while True:
        infos = await roles(brokers)
        if len(infos) == len(brokers) and all(int(i["dLegerCommitIndex"]) >= target for i in infos.values()):
            return leader
        if time.monotonic() > deadline:
            raise AssertionError(f"members not caught up to index {target} within {timeout} s: "
                                 f"{ {a: i['dLegerCommitIndex'] for a, i in infos.items()} }")
        await asyncio.sleep(POLL_S)

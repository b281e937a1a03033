"""A DLedger group of three real broker processes from Apache RocketMQ's own dledger config files
(only ports and paths changed): election, replication to every member, a minority that refuses
writes, kill -9 of the leader, and the old leader rejoining with its uncommitted tail cut."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import urllib.request
from pathlib import Path

import pytest
from clusterprocs import Processes
from dledgerprocs import roles, start_group, wait_leader
from haprocs import Broker, admin_cli, read_keys, restart, runtime

from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.client.errors import ClientError
from rocketq.client.producer import Producer
from rocketq.client.sending import SendStatus
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import Message
from rocketq.protocol.queues import MessageQueue
from rocketq.remoting.errors import RemotingError

TOPIC = "DLedgerIT"
SEND_DEADLINE_S = 40.0
"""How long one message may take to be acknowledged while the group fails over."""
ELECTION_BOUND_S = 5.0
"""Issue #9: a group elects within 5 s of start."""
REELECTION_BOUND_S = 10.0 + 2.0
"""Issue #9: a new leader within 10 s of a kill -9 (+2 s to register with the name server)."""


def on_this_machine(bound_s: float) -> float:
    """``bound_s`` stretched by how overloaded the machine is (1-minute load per core, at least 1):
    the bounds are promises about the protocol's timers, and a member that gets a third of a core
    runs them three times late. On an idle machine the bound is the issue's own."""
    return bound_s * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


async def wait_in_step(brokers: list[Broker], timeout: float = 30) -> None:
    """Until every member has committed and dispatched the same log."""
    deadline = time.monotonic() + timeout
    while True:
        infos = list((await roles(brokers)).values())
        seen = {(i["dLegerCommitIndex"], i["dLegerLastIndex"], i["commitLogMaxOffset"]) for i in infos}
        if len(infos) == len(brokers) and len(seen) == 1 and all(i["dispatchBehindBytes"] == "0" for i in infos):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"members not in step: {seen}")
        await asyncio.sleep(0.1)


async def send(namesrv: str, keys: list[str], *, deadline_s: float = SEND_DEADLINE_S) -> list[str]:
    """Send one message per key, retrying each until SEND_OK or its deadline; the keys acknowledged."""
    acked = []
    async with Producer("dledger-pg", namesrv_addr=namesrv, send_msg_timeout=3000) as producer:
        for key in keys:
            deadline = time.monotonic() + deadline_s
            while time.monotonic() < deadline:
                try:
                    result = await producer.send(Message(TOPIC, b"m" * 300, properties={"KEYS": key}))
                except (ClientError, RemotingError, OSError, TimeoutError):
                    await asyncio.sleep(0.2)
                    continue
                if result.status is SendStatus.SEND_OK:
                    acked.append(key)
                    break
    return acked


async def wait_raft_leader(brokers: list[Broker], timeout: float) -> None:
    """Until a member reports itself Raft's leader (before it registers as master)."""
    deadline = time.monotonic() + timeout
    while not any(i.get("dLegerRole") == "LEADER" for i in (await roles(brokers)).values()):
        if time.monotonic() > deadline:
            raise AssertionError(f"no election within {timeout} s: {await roles(brokers)}")
        await asyncio.sleep(0.05)


async def admin_send(broker: Broker, body: bytes) -> None:
    async with AdminClient("127.0.0.1:1") as admin:
        await admin.send_message(broker.address, MessageQueue(TOPIC, "RaftNode00", 0), Message(TOPIC, body))


def commitlog_bytes(store: Path) -> bytes:
    """The written part of a member's CommitLog (segments are preallocated with zeros)."""
    return b"".join(p.read_bytes() for p in sorted((store / "commitlog").iterdir())).rstrip(b"\0")


def scrape(broker: Broker) -> str:
    port = broker.args[broker.args.index("--metrics-port") + 1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        return str(answer.read().decode())


@pytest.mark.slow
async def test_a_group_elects_replicates_fails_over_and_cuts_a_deposed_leaders_tail(procs: Processes) -> None:
    ns = procs.namesrv()
    brokers = start_group(procs, ns.address)
    await wait_raft_leader(brokers, timeout=on_this_machine(ELECTION_BOUND_S))
    leader = await wait_leader(brokers, timeout=30)  # then it registers as the group's master
    followers = [b for b in brokers if b is not leader]

    # replication: every acknowledged message is in every member's CommitLog, at the same offsets
    acked = await send(ns.address, [f"a{i}" for i in range(40)])
    assert len(acked) == 40
    await wait_in_step(brokers)
    logs = {commitlog_bytes(b.store) for b in brokers}
    assert len(logs) == 1 and len(next(iter(logs))) > 40 * 300
    status = admin_cli(ns.address, "getDLedgerStatus", "-c", "RaftCluster")
    assert status.count("LEADER") == 1 and status.count("FOLLOWER") == 2, status
    assert "dledger leader" in admin_cli(ns.address, "clusterList")
    metrics = scrape(leader)
    assert 'rocketq_dledger_role{broker="RaftNode00",cluster="RaftCluster",role="LEADER"} 1.0' in metrics
    assert 'rocketq_dledger_peer_lag_entries{broker="RaftNode00",cluster="RaftCluster",peer="n' in metrics
    assert "rocketq_dledger_commit_index{" in metrics and "rocketq_dledger_elections_total{" in metrics

    # a follower refuses sends, naming the leader; the SDK's retry moves on
    with pytest.raises(AdminError) as refused:
        await admin_send(followers[0], b"to a follower")
    assert refused.value.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert "slave" in (refused.value.remark or "") and leader.address in (refused.value.remark or "")

    # a minority (the leader alone) acknowledges nothing
    for follower in followers:
        follower.proc.popen.send_signal(signal.SIGSTOP)
    try:
        lost = await send(ns.address, [f"x{i}" for i in range(3)], deadline_s=4)
        assert lost == []
    finally:
        leader.proc.kill9()
        for follower in followers:
            follower.proc.popen.send_signal(signal.SIGCONT)

    # kill -9 of the leader: a new leader within 10 s, the producer carries on after its retries
    killed_at = time.monotonic()
    new_leader = await wait_leader(followers, timeout=60)
    took = time.monotonic() - killed_at
    assert took < on_this_machine(REELECTION_BOUND_S), f"re-election took {took:.1f} s, load {os.getloadavg()}"
    later = await send(ns.address, [f"b{i}" for i in range(30)])
    assert len(later) == 30

    # the old leader rejoins as a follower and drops the entries that never committed
    restart(procs, leader)
    await wait_in_step(brokers, timeout=60)
    assert (await runtime(leader.address))["dLegerRole"] == "FOLLOWER"
    assert commitlog_bytes(leader.store) == commitlog_bytes(new_leader.store)
    assert "uncommitted entries" in leader.proc.log.read_text()

    # leadership moves on request (what the operator does before restarting a leader)
    old_id = (await runtime(leader.address))["dLegerSelfId"]
    admin_cli(ns.address, "transferLeadership", "-b", new_leader.address, "-t", old_id)
    assert await wait_leader(brokers, timeout=60) is leader

    keys = await read_keys(ns.address, TOPIC, "dledger-check")
    missing = set(acked + later) - set(keys)
    assert not missing, f"acknowledged but lost: {sorted(missing)}"
    # the minority's x-messages were never acknowledged: Raft may still keep one (its entry sat in
    # a stopped follower's socket buffer and the new leader committed it); only acks are promises
    duplicates = len(keys) - len(set(keys))
    assert duplicates <= 30, duplicates  # retries after a timeout may store a message twice, never lose it

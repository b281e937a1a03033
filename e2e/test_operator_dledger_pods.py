"""A DLedger group as the operator renders it, run as three real broker processes on this machine.

The operator's pure rendering gives the group's ConfigMap (broker.conf with the DLedger keys)
and the StatefulSet's container (command, env). This test lays broker.conf out as a volume
mount would, expands ``$(VAR)`` in the command as the kubelet does (``POD_ORDINAL`` is what
the downward API reads from the pod-index label), and runs the three pods. Then it asks them
what the operator asks (``RemotingBrokerAdmin.dledger_member`` and ``transfer_leadership``):
one leader and two followers in one term, the leader registered as brokerId 0, and a
leadership transfer that leaves the transferee leading.

The only substitutions are what a pod gets from its node and this machine has differently:
the store path and ports (temp dirs and free ports instead of the volume, 10911, 10912, 40911
and 5557) and the hosts (127.0.0.1 instead of the pods' cluster DNS names, in BROKER_IP1 and
in dLegerPeers). Until the engine has a DLedger CommitLog, a broker refuses
``enableDLegerCommitLog=true`` at start and this test is skipped for that reason only.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from rocketq_operator import names
from rocketq_operator.brokeradmin import BrokerAdminError, DLedgerMember, RaftRole
from rocketq_operator.remoteadmin import RemotingBrokerAdmin
from rocketq_operator.rendering import broker as broker_rendering
from rocketq_operator.spec import Cluster

from e2e.renderedpods import example_cluster, run_namesrv, wait_ready
from rocketq.local.ports import free_port
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.client import RemotingClient

ELECTION_TIMEOUT = 30.0
"""Generous: the issue asks for a leader within 5 s, but this machine is shared."""
KUBELET_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
REFUSED = re.compile(r"enableDLegerCommitLog.*not implemented", re.IGNORECASE)


def _broker_conf(text: str, cluster: Cluster, store: Path, ports: dict[str, int], peers: list[int]) -> str:
    """broker.conf with this machine's paths and ports, every peer's DNS name as 127.0.0.1."""
    for ordinal, peer_port in enumerate(peers):
        host = names.broker_host(cluster.meta.name, cluster.meta.namespace, 0, ordinal)
        text = text.replace(f"{host}:{names.DLEDGER_PORT}", f"127.0.0.1:{peer_port}")
    text = text.replace("storePathRootDir=/home/rocketq/store", f"storePathRootDir={store}")
    text = text.replace(f"listenPort={names.BROKER_PORT}", f"listenPort={ports['broker']}")
    text = text.replace(f"haListenPort={names.HA_PORT}", f"haListenPort={ports['ha']}")
    text = text.replace(f"metricsPort={names.METRICS_PORT}", f"metricsPort={ports['metrics']}")
    assert ".svc" not in text and f"storePathRootDir={store}" in text
    return text


def _expand(arg: str, env: dict[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion in a container's command."""
    return KUBELET_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), arg)


def _pod_env(container: dict[str, Any], pod: str, ordinal: int, namesrv: str) -> dict[str, str]:
    env = {**os.environ, "HOSTNAME": pod}
    for var in container["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
        elif var["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name":
            env[var["name"]] = pod
        else:
            assert broker_rendering.POD_INDEX_LABEL in var["valueFrom"]["fieldRef"]["fieldPath"]
            env[var["name"]] = str(ordinal)
    env["NAMESRV_ADDR"] = namesrv  # the rendered value names the cluster's name server Services
    env["BROKER_IP1"] = "127.0.0.1"  # the rendered value is the pod's cluster DNS name
    return env


def _skip_if_refused(code: int, log: str) -> None:
    if code == 2 and REFUSED.search(log):
        pytest.skip("the engine refuses enableDLegerCommitLog: no DLedger CommitLog yet")


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[str]:
    yield from run_namesrv(tmp_path)


async def _members(admin: RemotingBrokerAdmin, addrs: list[str]) -> list[DLedgerMember | None]:
    out: list[DLedgerMember | None] = []
    for addr in addrs:
        try:
            out.append(await admin.dledger_member(addr))
        except BrokerAdminError:
            out.append(None)
    return out


async def _settled(admin: RemotingBrokerAdmin, addrs: list[str], leader: str | None = None) -> list[DLedgerMember]:
    """Until one member leads (``leader`` if given) and the others follow it in its term."""
    deadline = time.monotonic() + ELECTION_TIMEOUT
    while True:
        states = await _members(admin, addrs)
        known = [s for s in states if s is not None]
        leaders = [s for s in known if s.role is RaftRole.LEADER]
        if len(known) == len(addrs) and len(leaders) == 1 and leader in (None, leaders[0].self_id):
            term, chief = leaders[0].term, leaders[0].self_id
            if all(s.term == term and (s is leaders[0] or (s.role is RaftRole.FOLLOWER and s.leader_id == chief))
                   for s in known):
                return known
        assert time.monotonic() < deadline, f"no settled leader: {states}"
        await asyncio.sleep(0.2)


async def _registered_master(namesrv: str, group: str) -> str | None:
    client = RemotingClient()
    try:
        info = await client.invoke(namesrv, RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO), 5)
    finally:
        await client.close()
    table = orjson.loads(info.body).get("brokerAddrTable", {})
    return table.get(group, {}).get("brokerAddrs", {}).get("0")


async def test_rendered_dledger_pods_elect_register_and_transfer_leadership(namesrv: str, tmp_path: Path) -> None:
    cluster = example_cluster("dledger-cluster.yaml")
    configmap = broker_rendering.render_broker_configmap(cluster, 0, master_ordinal=0)
    statefulset = broker_rendering.render_broker_statefulset(cluster, 0)
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    group, replicas = statefulset["metadata"]["name"], statefulset["spec"]["replicas"]
    assert replicas == 3 and set(configmap["data"]) == {broker_rendering.CONFIG_KEY}
    peers = [free_port() for _ in range(replicas)]
    procs: list[subprocess.Popen[bytes]] = []
    addrs: list[str] = []
    admin = RemotingBrokerAdmin(timeout=5.0)
    try:
        for ordinal in range(replicas):
            pod = f"{group}-{ordinal}"
            mount = tmp_path / pod / "etc-rocketq"
            mount.mkdir(parents=True)
            ports = {"broker": free_port(), "ha": free_port(), "metrics": free_port()}
            conf = _broker_conf(configmap["data"][broker_rendering.CONFIG_KEY], cluster, tmp_path / pod / "store",
                                ports, peers)
            (mount / broker_rendering.CONFIG_KEY).write_text(conf)
            env = _pod_env(container, pod, ordinal, namesrv)
            command = [_expand(arg, env).replace(broker_rendering.CONFIG_DIR, str(mount))
                       for arg in container["command"]]
            assert command[0] == "rocketq" and f"dLegerSelfId=n{ordinal}" in command
            log = tmp_path / f"{pod}.log"
            with open(log, "wb") as out:
                procs.append(subprocess.Popen([sys.executable, "-m", "rocketq", *command[1:]], env=env,
                                              stdout=out, stderr=subprocess.STDOUT))
            addrs.append(wait_ready(procs[-1], log, _skip_if_refused))

        states = await _settled(admin, addrs)
        assert sorted(s.self_id for s in states) == ["n0", "n1", "n2"]
        (chief,) = [s for s in states if s.role is RaftRole.LEADER]
        leader_addr = addrs[int(chief.self_id[1:])]
        deadline = time.monotonic() + ELECTION_TIMEOUT
        while await _registered_master(namesrv, group) != leader_addr:
            assert time.monotonic() < deadline, "the leader never registered as brokerId 0"
            await asyncio.sleep(0.2)

        transferee = next(s.self_id for s in states if s.role is RaftRole.FOLLOWER)
        await admin.transfer_leadership(leader_addr, transferee)
        after = await _settled(admin, addrs, leader=transferee)
        assert max(s.term for s in after) > chief.term
    finally:
        await admin.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)

"""The operator's failover against real broker pods: the decision, and the runtime promotion.

Pods 0 (master) and 1 (slave) of a group run as the operator renders them (the same ConfigMap
mount and environment as test_operator_pod_broker.py); pod 2 is a slave that never reached
its master (its name server does not answer, so it never learns the master's HA address) and
so has an empty store. Messages go to the master, and the operator's own
``RemotingBrokerAdmin`` reads each slave's replication state for ``promotion.decide``: slave 1
is chosen, slave 2 refused as empty; then slave 1 misses messages while it is down and is
refused as lagging (by more than the allowed gap) against the master's last offset.

The second test runs ``failover.check`` itself against a master pod and its slave, as the
operator's reconciler calls it (its Kubernetes writes go to the group's ConfigMap, held here):
the master is killed -9, the slave is promoted at runtime with a new master epoch, every
acknowledged message is read from it, and the old master, restarted while its mounted
ConfigMap still names it master, is fenced by the name server and then demoted by the next
pass; the new master, restarted with that same stale mount, comes back as the master.

The operator's BrokerAdmin does not sign its requests yet, so the broker's ACL file lists
127.0.0.1 in ``globalWhiteRemoteAddresses`` (how such an operator reaches an ACL cluster).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from renderedpods import wait_ready
from test_operator_pod_broker import (
    CREDENTIALS,
    _cluster,
    _mount_configmap,
    _pod_process,
    _wait_slave_connected,
    _wait_topic,
    namesrv,
)

from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.client import Message, Producer, PullConsumer
from rocketq.local.ports import free_port
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.queues import MessageQueue

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from rocketq_operator import failover, names, observing, promotion, runtime
from rocketq_operator.metrics import Metrics
from rocketq_operator.observing import GroupState, PodState
from rocketq_operator.remoteadmin import RemotingBrokerAdmin
from rocketq_operator.rendering import broker as broker_rendering

__all__ = ["namesrv"]  # the fixture, imported so pytest finds it here

MESSAGES = 20
GAP = 1 << 20
"""The operator's default ``caught_up_bytes``."""


async def _replicated(admin: RemotingBrokerAdmin, slave: str, master_offset: int) -> None:
    for _ in range(300):
        if (await admin.broker_runtime(slave)).commitlog_max_offset >= master_offset:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{slave} never reached offset {master_offset}")


def _stop(procs: dict[int, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
    for proc in procs.values():
        proc.wait(30)


async def test_promotion_picks_the_in_sync_slave_and_refuses_an_empty_one(namesrv: str, tmp_path: Path) -> None:
    cluster = _cluster()
    configmap = broker_rendering.render_broker_configmap(cluster, 0, master_ordinal=0)
    (container,) = broker_rendering.render_broker_statefulset(cluster, 0)["spec"]["template"]["spec"]["containers"]
    group = f"{cluster.meta.name}-broker-0"
    nobody = f"127.0.0.1:{free_port()}"  # pod 2's name server: nothing listens there
    procs: dict[int, subprocess.Popen[bytes]] = {}
    addrs: dict[int, str] = {}
    admin = RemotingBrokerAdmin(timeout=5.0)
    try:
        for ordinal in range(3):
            pod = f"{group}-{ordinal}"
            mount = tmp_path / pod / "etc-rocketq"
            _mount_configmap(configmap, mount, tmp_path / pod / "store", free_port(), free_port())
            acl = mount.parent / "etc-rocketq-acl" / "plain_acl.yml"
            acl.write_text("globalWhiteRemoteAddresses: [127.0.0.1]\n" + acl.read_text())
            log = tmp_path / f"{pod}.log"
            procs[ordinal] = _pod_process(container, mount, pod, nobody if ordinal == 2 else namesrv, log)
            addrs[ordinal] = wait_ready(procs[ordinal], log)
        await _wait_slave_connected(namesrv, addrs[0])
        async with Producer("failover-pg", namesrv_addr=namesrv, **CREDENTIALS) as producer:
            for i in range(MESSAGES):
                sent = await producer.send(Message("FailoverTopic", f"message {i}".encode()))
                assert sent.status.name == "SEND_OK"
        master_last = (await admin.broker_runtime(addrs[0])).commitlog_max_offset
        assert master_last > 0
        await _replicated(admin, addrs[1], master_last)

        # Slave 1 in sync, slave 2 empty: 1 is chosen; 2 alone is refused.
        slaves = {ordinal: await admin.broker_runtime(addrs[ordinal]) for ordinal in (1, 2)}
        assert slaves[1].commitlog_max_offset == master_last and slaves[1].ha_in_sync is True
        assert slaves[2].commitlog_max_offset == 0 and slaves[2].ha_in_sync is False
        decision = promotion.decide(slaves, master_last, GAP)
        assert decision.promote == 1 and decision.reference == master_last
        refused = promotion.decide({2: slaves[2]}, master_last, GAP)
        assert refused.promote is None and "ordinal 2: offset 0 (empty)" in refused.reason

        # Slave 1 goes down; the master takes more messages (WAIT=false: not held for a slave),
        # then is lost; slave 1 comes back unable to reach anyone, with what it had.
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait(30)
        async with Producer("failover-pg", namesrv_addr=namesrv, **CREDENTIALS) as producer:
            for i in range(MESSAGES):
                sent = await producer.send(Message("FailoverTopic", f"late {i}".encode(), properties={"WAIT": "false"}))
                assert sent.status.name == "SEND_OK"
        master_end = (await admin.broker_runtime(addrs[0])).commitlog_max_offset
        procs[0].send_signal(signal.SIGKILL)  # the master is lost
        procs[0].wait(30)
        log = tmp_path / f"{group}-1.again.log"
        procs[1] = _pod_process(container, tmp_path / f"{group}-1" / "etc-rocketq", f"{group}-1", nobody, log)
        addrs[1] = wait_ready(procs[1], log)
        lagging = await admin.broker_runtime(addrs[1])
        assert lagging.commitlog_max_offset == master_last
        behind = master_end - master_last
        refused = promotion.decide({1: lagging}, master_end, behind - 1)
        assert refused.promote is None and f"ordinal 1: offset {master_last} ({behind} bytes behind)" in refused.reason
        assert promotion.decide({1: lagging}, master_end, behind).promote == 1
    finally:
        await admin.close()
        _stop(procs)


class ConfigMapApi:
    """The Kubernetes writes ``failover.check`` makes, applied to the one ConfigMap it writes
    (JSON merge patches, None removes a key), and any pod deletion recorded (there must be none)."""

    def __init__(self, configmap: dict[str, Any]) -> None:
        self.configmap = configmap
        self.deleted: list[str] = []

    async def patch(self, kind: str, _namespace: str, name: str, body: dict[str, Any]) -> None:
        assert (kind, name) == ("ConfigMap", self.configmap["metadata"]["name"])
        _merge(self.configmap, body)

    async def delete(self, _kind: str, _namespace: str, name: str) -> None:
        self.deleted.append(name)


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict):
            _merge(base.setdefault(key, {}), value)
        else:
            base[key] = value


class LocalAddresses:
    """The operator's BrokerAdmin, with each pod's cluster DNS address mapped to its local one."""

    def __init__(self, inner: RemotingBrokerAdmin, local: dict[str, str]) -> None:
        self.inner, self.local = inner, local

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self.inner, name)

        async def call(address: str, *args: Any, **kwargs: Any) -> Any:
            return await method(self.local.get(address, address), *args, **kwargs)

        return call


def _group(cluster_name: str, api: ConfigMapApi, statefulset: dict[str, Any], ready: set[int]) -> GroupState:
    pods = {o: PodState(f"{cluster_name}-broker-0-{o}", o, f"uid-{o}", o in ready, False, None) for o in (0, 1)}
    return GroupState(index=0, name=f"{cluster_name}-broker-0", statefulset=statefulset, configmap=api.configmap,
                      pods=pods)


async def _until(check: Callable[[], Awaitable[bool]], what: str, limit: float = 30.0) -> None:
    for _ in range(int(limit / 0.1)):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never: {what}")


async def _read_all(namesrv: str, topic: str) -> set[bytes]:
    bodies: set[bytes] = set()
    async with PullConsumer("failover-cg", namesrv_addr=namesrv, **CREDENTIALS) as consumer:
        for queue in await consumer.fetch_subscribe_queues(topic):
            offset = 0
            while True:
                result = await consumer.pull(queue, "*", offset, max_nums=32)
                if not result.messages:
                    break
                bodies.update(m.body for m in result.messages)
                offset = result.next_begin_offset
    return bodies


async def test_failover_promotes_at_runtime_and_the_returning_old_master_is_fenced(
        namesrv: str, tmp_path: Path) -> None:
    cluster = _cluster()
    meta = cluster.meta
    configmap = broker_rendering.render_broker_configmap(cluster, 0, master_ordinal=0)
    statefulset = broker_rendering.render_broker_statefulset(cluster, 0)
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    group = f"{meta.name}-broker-0"
    procs: dict[int, subprocess.Popen[bytes]] = {}
    addrs: dict[int, str] = {}
    mounts = {o: tmp_path / f"{group}-{o}" / "etc-rocketq" for o in (0, 1)}
    remote = RemotingBrokerAdmin(timeout=5.0)
    local: dict[str, str] = {}
    api = ConfigMapApi({**configmap, "metadata": {**configmap["metadata"],
                                                  "annotations": {observing.METADATA_SYNCED: "true"}}})
    rt = runtime.Runtime(api=api, admin=LocalAddresses(remote, local),  # type: ignore[arg-type]
                         config=runtime.OperatorConfig(metrics_port=0, failover_grace=0.0), metrics=Metrics())
    events: list[tuple[str, str, str]] = []

    def ctx() -> runtime.Context:
        return runtime.Context(runtime=rt, emit=lambda *event: events.append(event),
                               logger=logging.getLogger("failover-e2e"), now=datetime.datetime.now(tz=datetime.UTC))

    def start(ordinal: int, run: str) -> None:
        log = tmp_path / f"{group}-{ordinal}.{run}.log"
        procs[ordinal] = _pod_process(container, mounts[ordinal], f"{group}-{ordinal}", namesrv, log)
        addrs[ordinal] = wait_ready(procs[ordinal], log)
        local[names.broker_address(meta.name, meta.namespace, 0, ordinal)] = addrs[ordinal]

    try:
        for ordinal in (0, 1):
            _mount_configmap(configmap, mounts[ordinal], mounts[ordinal].parent / "store", free_port(), free_port())
            acl = mounts[ordinal].parent / "etc-rocketq-acl" / "plain_acl.yml"
            acl.write_text("globalWhiteRemoteAddresses: [127.0.0.1]\n" + acl.read_text())
            start(ordinal, "first")
        await _wait_slave_connected(namesrv, addrs[0])
        acked: set[bytes] = set()
        async with Producer("failover-pg", namesrv_addr=namesrv, **CREDENTIALS) as producer:
            for i in range(MESSAGES):  # SYNC_MASTER: SEND_OK once the slave holds the message too
                sent = await producer.send(Message("FailoverTopic", f"acked {i}".encode()))
                assert sent.status.name == "SEND_OK"
                acked.add(f"acked {i}".encode())
        await _wait_topic(namesrv, addrs[1], "FailoverTopic")
        procs[0].send_signal(signal.SIGKILL)  # the master is lost
        procs[0].wait(30)

        outcome = await failover.check(ctx(), meta, _group(meta.name, api, statefulset, ready={1}))
        assert outcome.kind is failover.Kind.FAILED_OVER, outcome.message
        assert "promoted at runtime with a new epoch" in outcome.message
        assert api.configmap["data"]["masterOrdinal"] == "1" and api.deleted == []
        assert api.configmap["metadata"]["annotations"][observing.ROLES_PENDING] == "0"
        async with AdminClient(namesrv, **CREDENTIALS) as admin:
            info = await admin.runtime_info(addrs[1])
            assert (info["brokerRole"], info["haEpoch"]) == ("SYNC_MASTER", "1")
            assert list((await admin.topic_route("FailoverTopic")).addrs()) == [(group, 0, addrs[1])]
        assert acked <= await _read_all(namesrv, "FailoverTopic"), "every acknowledged message is readable"

        # The old master returns before its mounted ConfigMap is updated: broker.conf says
        # brokerId 0, at its old epoch 0. The name server keeps the new master; it fences itself.
        start(0, "stale")
        async with AdminClient(namesrv, **CREDENTIALS) as admin:
            async def fenced() -> bool:
                return "fencedBy" in await admin.runtime_info(addrs[0])

            await _until(fenced, "the returning old master fenced")
            assert (await admin.runtime_info(addrs[0]))["fencedBy"] == f"{addrs[1]}@1"
            assert list((await admin.topic_route("FailoverTopic")).addrs()) == [(group, 0, addrs[1])]
            with pytest.raises(AdminError) as refused:
                await admin.send_message(addrs[0], MessageQueue("FailoverTopic", group, 0), Message("FailoverTopic",
                                                                                                    b"split brain"))
            assert refused.value.code == ResponseCode.NO_PERMISSION

            # The next pass (master 1 serving) settles ordinal 0 as slave brokerId 1.
            outcome = await failover.check(ctx(), meta, _group(meta.name, api, statefulset, ready={0, 1}))
            assert outcome.kind is failover.Kind.HEALTHY
            assert observing.ROLES_PENDING not in api.configmap["metadata"]["annotations"]
            assert (await admin.runtime_info(addrs[0]))["brokerRole"] == "SLAVE"

            # Restart safety: the new master restarted with the same stale mount (masterOrdinal 0,
            # which would make it slave 1) comes back as the master its role file says it is.
            procs[1].terminate()
            assert procs[1].wait(30) == 0
            start(1, "restarted")
            info = await admin.runtime_info(addrs[1])
            assert (info["brokerRole"], info["haEpoch"]) == ("SYNC_MASTER", "1")

            async def both_registered() -> bool:
                brokers = {data.broker_name: data.broker_addrs for data in (await admin.cluster_info()).brokers}
                return brokers.get(group) == {0: addrs[1], 1: addrs[0]}

            await _until(both_registered, "the new master and the demoted old one registered")
    finally:
        await remote.close()
        _stop(procs)

"""The operator's failover decision against real broker pods: it picks the in-sync slave.

Pods 0 (master) and 1 (slave) of a group run as the operator renders them (the same ConfigMap
mount and environment as test_operator_pod_broker.py); pod 2 is a slave that never reached
its master (its name server does not answer, so it never learns the master's HA address) and
so has an empty store. Messages go to the master, and the operator's own
``RemotingBrokerAdmin`` reads each slave's replication state for ``promotion.decide``: slave 1
is chosen, slave 2 refused as empty; then slave 1 misses messages while it is down and is
refused as lagging (by more than the allowed gap) against the master's last offset.

The operator's BrokerAdmin does not sign its requests yet, so the broker's ACL file lists
127.0.0.1 in ``globalWhiteRemoteAddresses`` (how such an operator reaches an ACL cluster).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

from renderedpods import wait_ready
from test_operator_pod_broker import (
    CREDENTIALS,
    _cluster,
    _mount_configmap,
    _pod_process,
    _wait_slave_connected,
    namesrv,
)

from rocketq.client import Message, Producer
from rocketq.local.ports import free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from rocketq_operator import promotion
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
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in procs.values():
            proc.wait(30)

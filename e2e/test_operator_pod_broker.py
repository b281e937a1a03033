"""A broker pod as the operator renders it, run as a real process on this machine.

The operator's pure rendering gives the group's ConfigMap (broker.conf + masterOrdinal) and the
StatefulSet's container (command, env). This test lays the ConfigMap out as Kubernetes would
mount it, runs the container's exact command with the pod's environment, and checks that pods 0
and 1 of the group come up as master and slave, register with a real name server, and carry
messages; with the cluster's ACL Secret laid out as mounted (``plain_acl.yml`` and ``tools.yml``),
the slave signs its metadata sync with the Secret's tools.yml, so a topic created on the master
reaches it. The only substitutions are the ones a pod gets from its node and this machine has
differently: the store path and listen port (a temp dir and a free port instead of the volume
and 10911) and the advertised host (127.0.0.1 instead of the pod's cluster DNS name).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from rocketq_operator.rendering import broker as broker_rendering
from rocketq_operator.rendering import brokerconf
from rocketq_operator.spec import Cluster

from e2e.renderedpods import example_cluster, run_namesrv, wait_ready
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.client import Message, Producer, PullConsumer
from rocketq.local.ports import free_port
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.client import RemotingClient


def _cluster() -> Cluster:
    return example_cluster("production-masterslave.yaml")


ACCESS_KEY, SECRET_KEY = "pod-test", "pod-test-secret"
ACL_SECRET = f"""accounts:
  - accessKey: {ACCESS_KEY}
    secretKey: {SECRET_KEY}
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
"""
"""The ``plain_acl.yml`` of the example's ``spec.acl.secretName`` Secret, as its volume holds it."""
CREDENTIALS = {"access_key": ACCESS_KEY, "secret_key": SECRET_KEY}
TOOLS_YML = f"accessKey: {ACCESS_KEY}\nsecretKey: {SECRET_KEY}\n"
"""The Secret's ``tools.yml``: the account the brokers (and the proxy) sign their own calls with."""
SYNC_TOPIC = "PodSyncTopic"
SYNC_WAIT_S = 60.0
"""The slave's first metadata sync runs 3 s after it starts; the rest is room for a loaded machine."""


def _mount_configmap(configmap: dict[str, Any], mount: Path, store: Path, port: int, metrics_port: int) -> None:
    """Write each ConfigMap key as a file, as a volume mount does, and the ACL Secret beside it;
    swap in this machine's paths and ports.

    Pods have a network namespace each; two pods on one machine need their own metrics and HA ports.
    """
    mount.mkdir(parents=True)
    acl_dir = mount.parent / "etc-rocketq-acl"
    acl_dir.mkdir()
    (acl_dir / "plain_acl.yml").write_text(ACL_SECRET)
    (acl_dir / "tools.yml").write_text(TOOLS_YML)
    for key, value in configmap["data"].items():
        if key == broker_rendering.CONFIG_KEY:
            assert f"{brokerconf.ACL_FILE_KEY}={brokerconf.ACL_FILE}" in value and "aclEnable=true" in value
            assert f"{brokerconf.INNER_CLIENT_FILE_KEY}={brokerconf.TOOLS_FILE}" in value
            value = value.replace(brokerconf.ACL_DIR, str(acl_dir))
            value = value.replace("storePathRootDir=/home/rocketq/store", f"storePathRootDir={store}")
            value = value.replace("listenPort=10911", f"listenPort={port}")
            ha_port = free_port()
            value = value.replace("haListenPort=10912", f"haListenPort={ha_port}")
            assert f"storePathRootDir={store}" in value and f"listenPort={port}" in value
            assert f"haListenPort={ha_port}" in value
            value += f"metricsPort={metrics_port}\n"
        (mount / key).write_text(value)


def _pod_process(
    container: dict[str, Any], mount: Path, pod_name: str, namesrv: str, log: Path
) -> subprocess.Popen[bytes]:
    command = [arg.replace(broker_rendering.CONFIG_DIR, str(mount)) for arg in container["command"]]
    assert command[0] == "rocketq"
    env = {**os.environ, "HOSTNAME": pod_name}
    for var in container["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
    env["POD_NAME"] = pod_name
    env["NAMESRV_ADDR"] = namesrv  # the rendered value names the cluster's name server Services
    env["BROKER_IP1"] = "127.0.0.1"  # the rendered value is the pod's cluster DNS name
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "rocketq", *command[1:]], env=env, stdout=out, stderr=subprocess.STDOUT
        )


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[str]:
    yield from run_namesrv(tmp_path)


async def _wait_slave_connected(namesrv: str, master: str, limit: float = 30) -> None:
    """Until the master's GET_BROKER_RUNTIME_INFO counts its slave's HA connection."""
    async with AdminClient(namesrv, **CREDENTIALS) as admin:
        for _ in range(int(limit / 0.1)):
            if (await admin.runtime_info(master)).get("haConnectionCount") == "1":
                return
            await asyncio.sleep(0.1)
    raise AssertionError(f"no slave connected to {master}")


async def _wait_topic(namesrv: str, broker: str, topic: str, limit: float = SYNC_WAIT_S) -> None:
    """Until the broker holds the topic (a slave: once its metadata sync copied it from the master)."""
    async with AdminClient(namesrv, **CREDENTIALS) as admin:
        for _ in range(int(limit / 0.2)):
            if await admin.topic_config(broker, topic) is not None:
                return
            await asyncio.sleep(0.2)
    raise AssertionError(f"{topic} never reached {broker}")


async def test_operator_rendered_pods_run_register_and_carry_messages(namesrv: str, tmp_path: Path) -> None:
    cluster = _cluster()
    configmap = broker_rendering.render_broker_configmap(cluster, 0, master_ordinal=0)
    statefulset = broker_rendering.render_broker_statefulset(cluster, 0)
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    group = statefulset["metadata"]["name"]
    assert statefulset["spec"]["replicas"] == 2
    procs: list[subprocess.Popen[bytes]] = []
    addrs = []
    metrics_ports = []
    try:
        for ordinal in range(2):
            pod = f"{group}-{ordinal}"
            port = free_port()
            metrics_ports.append(free_port())
            mount = tmp_path / pod / "etc-rocketq"
            _mount_configmap(configmap, mount, tmp_path / pod / "store", port, metrics_ports[-1])
            log = tmp_path / f"{pod}.log"
            procs.append(_pod_process(container, mount, pod, namesrv, log))
            addrs.append(wait_ready(procs[-1], log))
            if ordinal == 0:  # created before the slave starts: its first sync must copy it, signed
                async with AdminClient(namesrv, **CREDENTIALS) as admin:
                    await admin.create_topic(addrs[0], TopicConfig(SYNC_TOPIC, 4, 4))
        probe = container["readinessProbe"]["httpGet"]
        assert probe["port"] == "metrics"
        for metrics_port in metrics_ports:  # what the kubelet's readiness and liveness probes ask
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}{probe['path']}", timeout=5) as resp:
                assert resp.status == 200
        client = RemotingClient()
        try:
            info = await client.invoke(namesrv, RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO), 5)
        finally:
            await client.close()
        broker_addrs = orjson.loads(info.body)["brokerAddrTable"][group]["brokerAddrs"]
        assert broker_addrs == {"0": addrs[0], "1": addrs[1]}  # ordinal 0 is the master, 1 its slave
        assert orjson.loads(info.body)["clusterAddrTable"] == {cluster.meta.name: [group]}
        await _wait_slave_connected(namesrv, addrs[0])  # a SYNC_MASTER acknowledges once its slave holds the message
        async with (
            Producer("pod-pg", namesrv_addr=namesrv, **CREDENTIALS) as producer,
            PullConsumer("pod-cg", namesrv_addr=namesrv, **CREDENTIALS) as consumer,
        ):
            sent = await producer.send(Message("PodTopic", b"from the operator's pod", tags="T"))
            assert sent.status.name == "SEND_OK" and sent.message_queue.broker_name == group
            result = await consumer.pull(sent.message_queue, "*", sent.queue_offset, max_nums=1)
            assert [m.body for m in result.messages] == [b"from the operator's pod"]
        await _wait_topic(namesrv, addrs[1], SYNC_TOPIC)  # the slave's sync, signed with tools.yml
        assert "ACL refused" not in (tmp_path / f"{group}-0.log").read_text()
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            assert proc.wait(30) == 0


async def test_a_failover_master_ordinal_makes_pod_1_the_master(namesrv: str, tmp_path: Path) -> None:
    cluster = _cluster()
    configmap = broker_rendering.render_broker_configmap(cluster, 0, master_ordinal=1)
    (container,) = broker_rendering.render_broker_statefulset(cluster, 0)["spec"]["template"]["spec"]["containers"]
    group = f"{cluster.meta.name}-broker-0"
    pod = f"{group}-1"
    mount = tmp_path / "etc-rocketq"
    _mount_configmap(configmap, mount, tmp_path / "store", free_port(), free_port())
    log = tmp_path / "pod.log"
    proc = _pod_process(container, mount, pod, namesrv, log)
    try:
        addr = wait_ready(proc, log)
        client = RemotingClient()
        try:
            info = await client.invoke(namesrv, RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO), 5)
        finally:
            await client.close()
        assert orjson.loads(info.body)["brokerAddrTable"][group]["brokerAddrs"] == {"0": addr}
    finally:
        proc.terminate()
        assert proc.wait(30) == 0

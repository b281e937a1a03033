"""The gRPC proxy pod as the operator renders it (``spec.proxy``), run as a real process.

The operator's pure rendering gives the proxy's ConfigMap (rmq-proxy.json) and the Deployment's
container (command, env, probes). This test lays the ConfigMap out as Kubernetes would mount it,
runs the container's exact command with the pod's environment in front of a real name server and
broker of the same cluster, asks what the kubelet's gRPC probes ask (grpc.health.v1 Check on the
container port), and makes a QueryRoute through it with rocketq's generated v2 stubs. The only
substitutions are the ones a pod gets from its node and this machine has differently: the mount
path, the gRPC port (a free port instead of 8081: pods have a network namespace each) and
NAMESRV_ADDR (the rendered value names the cluster's name-server pods).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rocketq_operator import names
from rocketq_operator.rendering import proxy as proxy_rendering
from rocketq_operator.spec import Cluster

from e2e.renderedpods import example_cluster, run_broker, run_namesrv, wait_ready
from rocketq.admin.client import AdminClient
from rocketq.local.ports import free_port
from rocketq.protocol.sharedbodies import TopicConfig
from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

TOPIC = "ProxyPodTopic"
QUEUES = 4
ROUTE_WAIT_S = 30.0
STOP_TIMEOUT_S = 30.0


def _cluster() -> Cluster:
    return example_cluster("trial-cluster.yaml")


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[str]:
    yield from run_namesrv(tmp_path)


@pytest.fixture
def broker(tmp_path: Path, namesrv: str) -> Iterator[str]:
    yield from run_broker(tmp_path, namesrv, _cluster().meta.name, "trial-broker-0")


async def _create_topic(namesrv: str, broker: str, credentials: tuple[str, str] = ("", "")) -> None:
    """``TOPIC`` on ``broker``, once the name server routes it; ``credentials`` for a broker with ACL."""
    async with AdminClient(namesrv, access_key=credentials[0], secret_key=credentials[1]) as admin:
        await admin.create_topic(broker, TopicConfig(TOPIC, QUEUES, QUEUES))
        deadline = asyncio.get_running_loop().time() + ROUTE_WAIT_S
        while True:
            try:
                await admin.topic_route(TOPIC)
                return
            except Exception:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.2)


def _mount_configmap(configmap: dict[str, Any], mount: Path, port: int, metrics_port: int) -> dict[str, Any]:
    """Write the ConfigMap's rmq-proxy.json as the volume mount does, with this machine's ports."""
    mount.mkdir(parents=True)
    config = json.loads(configmap["data"][proxy_rendering.CONFIG_KEY])
    assert config["metricsPort"] == names.METRICS_PORT
    config["grpcServerPort"] = port
    config["metricsPort"] = metrics_port
    (mount / proxy_rendering.CONFIG_KEY).write_text(json.dumps(config))
    return config


def _pod_process(container: dict[str, Any], mount: Path, namesrv: str, log: Path) -> subprocess.Popen[bytes]:
    command = [arg.replace(proxy_rendering.CONFIG_DIR, str(mount)) for arg in container["command"]]
    assert command[:2] == ["rocketq", "proxy"]
    env = {**os.environ, **{var["name"]: var["value"] for var in container["env"]}}
    assert env["NAMESRV_ADDR"].startswith("trial-namesrv-0.trial-namesrv.rocketq-trial.svc:9876")
    env["NAMESRV_ADDR"] = namesrv
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "rocketq", *command[1:]], env=env, stdout=out,
                                stderr=subprocess.STDOUT)


async def test_the_rendered_proxy_pod_serves_health_and_routes_in_front_of_a_real_broker(
        namesrv: str, broker: str, tmp_path: Path) -> None:
    cluster = _cluster()
    await _create_topic(namesrv, broker)
    deployment = proxy_rendering.render_proxy_deployment(cluster)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    port_spec, metrics_spec = container["ports"]
    assert metrics_spec == {"name": "metrics", "containerPort": names.METRICS_PORT, "protocol": "TCP"}
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(names.METRICS_PORT)
    assert container["readinessProbe"]["grpc"]["port"] == port_spec["containerPort"] == 8081
    service = proxy_rendering.render_proxy_service(cluster)
    assert service["spec"]["ports"][0]["port"] == port_spec["containerPort"], "routes carry the proxy's port"
    port, metrics_port = free_port(), free_port()
    mount = tmp_path / "etc-rocketq"
    config = _mount_configmap(proxy_rendering.render_proxy_configmap(cluster), mount, port, metrics_port)
    assert config["rocketMQClusterName"] == cluster.meta.name
    log = tmp_path / "proxy.log"
    proc = _pod_process(container, mount, namesrv, log)
    try:
        assert wait_ready(proc, log).endswith(f":{port}")
        endpoint = f"127.0.0.1:{port}"
        async with grpc.aio.insecure_channel(endpoint) as channel:
            # what the kubelet's grpc probe sends: Check with the probe's (empty) service name
            probe = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert probe.status == health_pb2.HealthCheckResponse.SERVING
            dialled = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=port)])
            route = await grpc_v2.MessagingServiceStub(channel).QueryRoute(
                spb.QueryRouteRequest(topic=pb.Resource(name=TOPIC), endpoints=dialled),
                metadata=(("x-mq-client-id", "pod-test@1"),), timeout=10)
        assert route.status.code == Code.OK, route.status
        assert {q.broker.name for q in route.message_queues} == {"trial-broker-0"}
        assert {(a.host, a.port) for q in route.message_queues for a in q.broker.endpoints.addresses} == {
            ("127.0.0.1", port)}, "clients are sent back to the proxy, not to the broker"
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as scraped:
            assert b'rocketmq_proxy_rpc_total{code="OK",method="QueryRoute"} 1.0' in scraped.read()
    finally:
        proc.terminate()
        assert proc.wait(STOP_TIMEOUT_S) == 0, log.read_text(errors="replace")

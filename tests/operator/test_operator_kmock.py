"""The real operator (kopf handlers, reconcilers, applying) against the kmock API emulator.

Each test starts an emulated API server, the StatefulSet emulator and the operator, acts like a
user (create/patch/delete custom resources, lose a pod) and waits for the operator to bring the
emulated world to the expected state. A fake BrokerAdmin stands in for the brokers.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import kmock
import pytest
from operator_harness import ApiServer, OperatorEnv, fast_config, quiet_logs
from rocketq_operator import applying, names, spec
from rocketq_operator.rendering import broker, common, namesrv, pdb

SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation")


@pytest.fixture
async def env() -> AsyncIterator[OperatorEnv]:
    quiet_logs()
    async with ApiServer() as server, kmock.Server(server):
        operator = OperatorEnv(server, fast_config())
        await operator.start()
        try:
            yield operator
        finally:
            await operator.close()


def as_applied(live: dict[str, Any] | None) -> dict[str, Any]:
    """A live child without what the API server and the apply step add to it."""
    assert live is not None
    out = copy.deepcopy(live)
    meta = out["metadata"]
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    annotations = meta.get("annotations", {})
    annotations.pop(applying.LAST_APPLIED, None)
    for key in list(annotations):
        if key.startswith("rocketq.io/") and key != common.ANNOTATION_BROKER_MODE:
            annotations.pop(key)
    if not annotations:
        meta.pop("annotations", None)
    out.pop("status", None)
    return out


def rendered_cluster(env: OperatorEnv, name: str) -> spec.Cluster:
    body = env.get("RocketMQCluster", name)
    assert body is not None
    parsed = spec.parse_cluster_spec(body["spec"], name)
    assert parsed.spec is not None
    return spec.Cluster(spec.cluster_meta(body), parsed.spec)


def phase(env: OperatorEnv, name: str) -> str | None:
    return env.status("RocketMQCluster", name).get("phase")


async def running(env: OperatorEnv, name: str) -> dict[str, Any]:
    await env.wait_for(lambda: phase(env, name) == "Running", f"{name} to be Running")
    return env.status("RocketMQCluster", name)


async def test_create_renders_every_child_and_reports_ready(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    status = await running(env, "demo")
    cluster = rendered_cluster(env, "demo")

    expected = [namesrv.render_namesrv_statefulset(cluster), namesrv.render_namesrv_service(cluster),
                *pdb.render_pdbs(cluster)]
    for index in range(2):
        expected += [broker.render_broker_configmap(cluster, index, 0),
                     broker.render_broker_statefulset(cluster, index),
                     broker.render_broker_service(cluster, index)]
    for obj in expected:
        assert as_applied(env.get(obj["kind"], obj["metadata"]["name"])) == obj, obj["metadata"]["name"]
    assert env.names("StatefulSet") == {"demo-namesrv", "demo-broker-0", "demo-broker-1"}
    assert env.names("Pod") == {"demo-namesrv-0", "demo-namesrv-1", "demo-broker-0-0", "demo-broker-0-1",
                                "demo-broker-1-0", "demo-broker-1-1"}

    assert status["observedGeneration"] == 1
    assert status["readyGroups"] == 2
    assert status["nameServers"] == {"ready": 2, "replicas": 2,
                                     "addresses": names.namesrv_addresses("demo", "mq", 2)}
    assert status["brokerGroups"] == [
        {"brokerName": "demo-broker-0", "mode": "MasterSlave", "master": "demo-broker-0-0", "readyReplicas": 2,
         "replicas": 2},
        {"brokerName": "demo-broker-1", "mode": "MasterSlave", "master": "demo-broker-1-0", "readyReplicas": 2,
         "replicas": 2},
    ]
    ready = env.condition("RocketMQCluster", "demo", "Ready")
    assert ready is not None and ready["status"] == "True" and ready["observedGeneration"] == 1
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Ready": "True", "Progressing": "False", "Degraded": "False", "ReconciliationPaused": "False"}

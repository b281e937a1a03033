"""Name servers: a StatefulSet and the headless Service that gives its pods stable DNS names.

Name servers keep no data a restart must preserve (brokers re-register every 30 s), so the
StatefulSet uses Kubernetes' own RollingUpdate and starts pods in parallel. It is a StatefulSet
only for its stable pod names: ``NAMESRV_ADDR`` in every broker lists them, and a list of pod
IPs would change on every restart. Clients can use either the list from
``status.nameServers.addresses`` or the Service name, which resolves to every name server.
"""

from __future__ import annotations

from typing import Any

from rocketq_operator import names
from rocketq_operator.rendering import common
from rocketq_operator.spec import Cluster

NAMESRV_STARTUP_FAILURES = 60
NAMESRV_TERMINATION_GRACE_SECONDS = 30


def _ports() -> list[dict[str, Any]]:
    return [
        {"name": "namesrv", "containerPort": names.NAMESRV_PORT, "protocol": "TCP"},
        {"name": "metrics", "containerPort": names.METRICS_PORT, "protocol": "TCP"},
    ]


def render_namesrv_statefulset(cluster: Cluster) -> dict[str, Any]:
    spec = cluster.spec
    name = names.namesrv(cluster.meta.name)
    selector = common.selector_labels(cluster.meta.name, common.COMPONENT_NAMESRV)
    container: dict[str, Any] = {
        "name": "namesrv",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy.value,
        # rocketq's own default is any free port; the pod's probes and Service need this one
        "command": ["rocketq", "namesrv", "--metrics-port", str(names.METRICS_PORT)],
        "ports": _ports(),
        **common.health_probes(NAMESRV_STARTUP_FAILURES),
        "securityContext": common.container_security_context(),
    }
    resources = spec.name_servers.resources.as_k8s()
    if resources:
        container["resources"] = resources
    template = common.seal_template({
        "metadata": {
            "labels": common.labels(cluster.meta.name, common.COMPONENT_NAMESRV),
            "annotations": common.metrics_annotations(spec.metrics_enabled),
        },
        "spec": {
            "securityContext": common.pod_security_context(),
            "terminationGracePeriodSeconds": NAMESRV_TERMINATION_GRACE_SECONDS,
            "containers": [container],
            **common.scheduling(spec.scheduling, selector),
        },
    })
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": common.metadata(cluster, name, common.COMPONENT_NAMESRV),
        "spec": {
            "serviceName": name,
            "replicas": spec.name_servers.replicas,
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate"},
            "selector": {"matchLabels": selector},
            "template": template,
        },
    }


def render_namesrv_service(cluster: Cluster) -> dict[str, Any]:
    name = names.namesrv(cluster.meta.name)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": common.metadata(cluster, name, common.COMPONENT_NAMESRV),
        "spec": {
            "clusterIP": "None",
            # Brokers must reach a name server as soon as it listens, before it reports ready.
            "publishNotReadyAddresses": True,
            "selector": common.selector_labels(cluster.meta.name, common.COMPONENT_NAMESRV),
            "ports": [
                {"name": "namesrv", "port": names.NAMESRV_PORT, "targetPort": "namesrv", "protocol": "TCP"},
                {"name": "metrics", "port": names.METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"},
            ],
        },
    }

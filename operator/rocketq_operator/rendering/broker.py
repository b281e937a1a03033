"""One broker group: its ConfigMap, StatefulSet and headless Service.

The StatefulSet's pods run ``rocketq broker -c /etc/rocketq/broker.conf`` and take who they
are from their ordinal. MasterSlave: ``--ordinal-from-hostname`` derives brokerId and role, with
``masterOrdinal`` read from ``/etc/rocketq/masterOrdinal``. DLedger: no brokerId or role at all
(Raft decides who leads); each pod gets ``--set dLegerSelfId=n$(POD_ORDINAL)``, the ordinal
coming from the StatefulSet controller's ``apps.kubernetes.io/pod-index`` label through the
downward API, which the kubelet expands in the command. They advertise their stable DNS name
as BROKER_IP1, which is also what they register with the name servers, so addresses in routes
survive pod restarts; DLedger peers reach each other at the same names on port 40911.

Readiness is the broker's ``/health`` (the process serves), never leadership: a DLedger
follower is a ready pod, and a group whose pods are all ready may still be electing.

``updateStrategy: OnDelete``: Kubernetes never restarts a broker on its own when the template
changes; the operator deletes pods one at a time, slaves before the master, waiting until each
replacement is ready, registered and caught up (see ``rolling``). ``podManagementPolicy:
Parallel``: a slave must not wait for a dead master, and DLedger peers need each other to elect.

``masterOrdinal`` lives in the ConfigMap but not in the pod template's hash: a failover
changes it and restarts only the pods whose identity changed, not the whole group.
"""

from __future__ import annotations

from typing import Any, Final

from rocketq_operator import names
from rocketq_operator.rendering import brokerconf, common
from rocketq_operator.spec import BrokerMode, Cluster, StorageType

CONFIG_DIR: Final = "/etc/rocketq"
ACL_DIR: Final = brokerconf.ACL_DIR
CONFIG_KEY: Final = "broker.conf"
MASTER_ORDINAL_KEY: Final = "masterOrdinal"
STORE_VOLUME: Final = "store"
BROKER_STARTUP_FAILURES: Final = 120
"""Up to 10 minutes (120 x 5 s) to recover a large store before liveness checks begin."""
BROKER_TERMINATION_GRACE_SECONDS: Final = 60
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
"""Set on every StatefulSet pod by Kubernetes (1.28+): the pod's ordinal."""


def render_broker_configmap(cluster: Cluster, index: int, master_ordinal: int) -> dict[str, Any]:
    group = names.broker_group(cluster.meta.name, index)
    data = {CONFIG_KEY: brokerconf.render_broker_conf(cluster, index)}
    if cluster.spec.brokers.mode is BrokerMode.MASTER_SLAVE:
        data[MASTER_ORDINAL_KEY] = str(master_ordinal)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": common.metadata(cluster, names.broker_config(cluster.meta.name, index),
                                    common.COMPONENT_BROKER, group),
        "data": data,
    }


def _ports(mode: BrokerMode) -> list[dict[str, Any]]:
    ports = [
        {"name": "broker", "containerPort": names.BROKER_PORT, "protocol": "TCP"},
        {"name": "ha", "containerPort": names.HA_PORT, "protocol": "TCP"},
    ]
    if mode is BrokerMode.DLEDGER:
        ports.append({"name": "dledger", "containerPort": names.DLEDGER_PORT, "protocol": "TCP"})
    ports.append({"name": "metrics", "containerPort": names.METRICS_PORT, "protocol": "TCP"})
    return ports


def _env(cluster: Cluster, group: str) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    if cluster.spec.brokers.mode is BrokerMode.DLEDGER:
        env.append({"name": "POD_ORDINAL",
                    "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{POD_INDEX_LABEL}']"}}})
    env.append({"name": "NAMESRV_ADDR", "value": names.namesrv_addresses(
        cluster.meta.name, cluster.meta.namespace, cluster.spec.name_servers.replicas)})
    env.append({"name": "BROKER_IP1", "value": f"$(POD_NAME).{group}.{cluster.meta.namespace}.svc"})
    return env


def _command(mode: BrokerMode) -> list[str]:
    command = ["rocketq", "broker", "-c", f"{CONFIG_DIR}/{CONFIG_KEY}"]
    if mode is BrokerMode.DLEDGER:
        return [*command, "--set", "dLegerSelfId=n$(POD_ORDINAL)"]
    return [*command, "--ordinal-from-hostname"]


def _volumes(cluster: Cluster, index: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pod volumes and the broker container's mounts."""
    items = [{"key": CONFIG_KEY, "path": CONFIG_KEY}]
    if cluster.spec.brokers.mode is BrokerMode.MASTER_SLAVE:
        items.append({"key": MASTER_ORDINAL_KEY, "path": MASTER_ORDINAL_KEY})
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": names.broker_config(cluster.meta.name, index), "items": items}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": STORE_VOLUME, "mountPath": brokerconf.STORE_PATH},
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
    ]
    storage = cluster.spec.storage
    if storage.type is StorageType.EMPTY_DIR:
        volumes.append({"name": STORE_VOLUME, "emptyDir": {"sizeLimit": storage.size}})
    if cluster.spec.acl_secret_name is not None:
        # Not under CONFIG_DIR: a mount point inside a read-only ConfigMap volume cannot be made.
        volumes.append({"name": "acl", "secret": {"secretName": cluster.spec.acl_secret_name}})
        mounts.append({"name": "acl", "mountPath": ACL_DIR, "readOnly": True})
    return volumes, mounts


def _claim_templates(cluster: Cluster, group: str) -> list[dict[str, Any]]:
    storage = cluster.spec.storage
    if storage.type is not StorageType.PERSISTENT_VOLUME_CLAIM:
        return []
    claim_spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": storage.size}},
    }
    if storage.storage_class_name is not None:
        claim_spec["storageClassName"] = storage.storage_class_name
    return [{
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": STORE_VOLUME,
            "labels": common.selector_labels(cluster.meta.name, common.COMPONENT_BROKER, group),
        },
        "spec": claim_spec,
    }]


def render_broker_statefulset(cluster: Cluster, index: int) -> dict[str, Any]:
    spec = cluster.spec
    group = names.broker_group(cluster.meta.name, index)
    selector = common.selector_labels(cluster.meta.name, common.COMPONENT_BROKER, group)
    volumes, mounts = _volumes(cluster, index)
    container: dict[str, Any] = {
        "name": "broker",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy.value,
        "command": _command(spec.brokers.mode),
        "ports": _ports(spec.brokers.mode),
        "env": _env(cluster, group),
        "volumeMounts": mounts,
        **common.health_probes(BROKER_STARTUP_FAILURES),
        "securityContext": common.container_security_context(),
    }
    resources = spec.brokers.resources.as_k8s()
    if resources:
        container["resources"] = resources
    annotations = {
        common.ANNOTATION_CONFIG_HASH: common.digest(brokerconf.render_broker_conf(cluster, index)),
        **common.metrics_annotations(spec.metrics_enabled),
    }
    template = common.seal_template({
        "metadata": {
            "labels": common.labels(cluster.meta.name, common.COMPONENT_BROKER, group),
            "annotations": annotations,
        },
        "spec": {
            "securityContext": common.pod_security_context(),
            "terminationGracePeriodSeconds": BROKER_TERMINATION_GRACE_SECONDS,
            "containers": [container],
            "volumes": volumes,
            **common.scheduling(spec.scheduling, selector),
        },
    })
    metadata = common.metadata(cluster, group, common.COMPONENT_BROKER, group)
    metadata["annotations"] = {common.ANNOTATION_BROKER_MODE: spec.brokers.mode.value}
    statefulset_spec: dict[str, Any] = {
        "serviceName": group,
        "replicas": spec.brokers.replicas_per_group,
        "podManagementPolicy": "Parallel",
        "updateStrategy": {"type": "OnDelete"},
        "selector": {"matchLabels": selector},
        "template": template,
    }
    claims = _claim_templates(cluster, group)
    if claims:
        statefulset_spec["volumeClaimTemplates"] = claims
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata,
        "spec": statefulset_spec,
    }


def render_broker_service(cluster: Cluster, index: int) -> dict[str, Any]:
    group = names.broker_group(cluster.meta.name, index)
    ports = [
        {"name": "broker", "port": names.BROKER_PORT, "targetPort": "broker", "protocol": "TCP"},
        {"name": "ha", "port": names.HA_PORT, "targetPort": "ha", "protocol": "TCP"},
    ]
    if cluster.spec.brokers.mode is BrokerMode.DLEDGER:
        ports.append({"name": "dledger", "port": names.DLEDGER_PORT, "targetPort": "dledger", "protocol": "TCP"})
    ports.append({"name": "metrics", "port": names.METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"})
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": common.metadata(cluster, group, common.COMPONENT_BROKER, group),
        "spec": {
            "clusterIP": "None",
            # Slaves and DLedger peers must find each other before anyone reports ready.
            "publishNotReadyAddresses": True,
            "selector": common.selector_labels(cluster.meta.name, common.COMPONENT_BROKER, group),
            "ports": ports,
        },
    }

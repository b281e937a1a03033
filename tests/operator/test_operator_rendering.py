"""Pure rendering: exact objects for a known spec, and every object valid for Kubernetes 1.33."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest
from rocketq_operator import spec as specs
from rocketq_operator.rendering import broker, brokerconf, common, namesrv, pdb, proxy

from rocketq import settings
from rocketq.acl.settings import AclSettings

K8S_VERSION = "1.33.0"
OWNER = {
    "apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster", "name": "demo", "uid": "uid-1",
    "controller": True, "blockOwnerDeletion": True,
}


def cluster_of(raw: dict[str, Any], name: str = "demo") -> specs.Cluster:
    parsed = specs.parse_cluster_spec(raw, name)
    assert parsed.spec is not None, parsed.errors
    return specs.Cluster(specs.ClusterMeta(name, "mq", "uid-1", 1), parsed.spec)


def labels(component: str, group: str | None = None) -> dict[str, str]:
    out = {
        "app.kubernetes.io/component": component, "app.kubernetes.io/instance": "demo",
        "app.kubernetes.io/managed-by": "rocketq-operator", "app.kubernetes.io/name": "rocketq",
        "rocketq.io/cluster": "demo",
    }
    if group:
        out["rocketq.io/broker-group"] = group
    return out


def selector(component: str, group: str | None = None) -> dict[str, str]:
    out = {"app.kubernetes.io/name": "rocketq", "app.kubernetes.io/instance": "demo",
           "app.kubernetes.io/component": component}
    if group:
        out["rocketq.io/broker-group"] = group
    return out


PROBES = {
    "startupProbe": {"httpGet": {"path": "/health", "port": "metrics"}, "periodSeconds": 5, "timeoutSeconds": 3,
                     "failureThreshold": 0},
    "readinessProbe": {"httpGet": {"path": "/health", "port": "metrics"}, "periodSeconds": 5,
                       "timeoutSeconds": 3, "failureThreshold": 3},
    "livenessProbe": {"httpGet": {"path": "/health", "port": "metrics"}, "periodSeconds": 10,
                      "timeoutSeconds": 5, "failureThreshold": 6},
}
POD_SECURITY = {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
                "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
METRICS = {"prometheus.io/scrape": "true", "prometheus.io/port": "5557", "prometheus.io/path": "/metrics"}


def probes(startup_failures: int) -> dict[str, Any]:
    out = copy.deepcopy(PROBES)
    out["startupProbe"]["failureThreshold"] = startup_failures
    return out


def anti_affinity(match: dict[str, str]) -> dict[str, Any]:
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100,
        "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": match}},
    }]}}


def sealed(template: dict[str, Any]) -> dict[str, Any]:
    """What seal_template must produce: the template plus the digest of itself."""
    out = copy.deepcopy(template)
    out["metadata"]["annotations"]["rocketq.io/template-hash"] = common.digest(template)
    return out


def test_namesrv_statefulset_exactly() -> None:
    cluster = cluster_of({"nameServers": {"replicas": 3, "resources": {"requests": {"cpu": "100m"}}}})
    template = {
        "metadata": {"labels": labels("namesrv"), "annotations": dict(METRICS)},
        "spec": {
            "securityContext": POD_SECURITY,
            "terminationGracePeriodSeconds": 30,
            "containers": [{
                "name": "namesrv", "image": "rocketq/rocketq:0.1.0", "imagePullPolicy": "IfNotPresent",
                "command": ["rocketq", "namesrv", "--metrics-port", "5557"],
                "ports": [{"name": "namesrv", "containerPort": 9876, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 5557, "protocol": "TCP"}],
                **probes(60),
                "securityContext": CONTAINER_SECURITY,
                "resources": {"requests": {"cpu": "100m"}},
            }],
            "affinity": anti_affinity(selector("namesrv")),
        },
    }
    assert namesrv.render_namesrv_statefulset(cluster) == {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "demo-namesrv", "namespace": "mq", "labels": labels("namesrv"),
                     "ownerReferences": [OWNER]},
        "spec": {
            "serviceName": "demo-namesrv", "replicas": 3, "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate"},
            "selector": {"matchLabels": selector("namesrv")},
            "template": sealed(template),
        },
    }


def test_namesrv_service_exactly() -> None:
    assert namesrv.render_namesrv_service(cluster_of({})) == {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "demo-namesrv", "namespace": "mq", "labels": labels("namesrv"),
                     "ownerReferences": [OWNER]},
        "spec": {
            "clusterIP": "None", "publishNotReadyAddresses": True, "selector": selector("namesrv"),
            "ports": [{"name": "namesrv", "port": 9876, "targetPort": "namesrv", "protocol": "TCP"},
                      {"name": "metrics", "port": 5557, "targetPort": "metrics", "protocol": "TCP"}],
        },
    }


def test_master_slave_broker_conf_and_configmap_exactly() -> None:
    cluster = cluster_of({"brokers": {"groups": 2, "brokerRole": "SYNC_MASTER",
                                      "config": {"fileReservedTime": "48", "deleteWhen": "04"}}})
    conf = (
        brokerconf.HEADER
        + "brokerClusterName=demo\n"
        "brokerName=demo-broker-1\n"
        "brokerRole=SYNC_MASTER\n"
        "flushDiskType=ASYNC_FLUSH\n"
        "storePathRootDir=/home/rocketq/store\n"
        "listenPort=10911\n"
        "haListenPort=10912\n"
        "metricsPort=5557\n"
        "deleteWhen=04\n"
        "fileReservedTime=48\n"
    )
    assert broker.render_broker_configmap(cluster, 1, master_ordinal=1) == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "demo-broker-1-config", "namespace": "mq",
                     "labels": labels("broker", "demo-broker-1"), "ownerReferences": [OWNER]},
        "data": {"broker.conf": conf, "masterOrdinal": "1"},
    }


def test_dledger_broker_conf_lists_every_peer_and_no_master() -> None:
    cluster = cluster_of({"brokers": {"mode": "DLedger", "replicasPerGroup": 3, "flushDiskType": "SYNC_FLUSH"},
                          "acl": {"secretName": "rocketq-acl"}})
    configmap = broker.render_broker_configmap(cluster, 0, master_ordinal=0)
    assert configmap["data"] == {"broker.conf": (
        brokerconf.HEADER
        + "brokerClusterName=demo\n"
        "brokerName=demo-broker-0\n"
        "flushDiskType=SYNC_FLUSH\n"
        "storePathRootDir=/home/rocketq/store\n"
        "listenPort=10911\n"
        "haListenPort=10912\n"
        "metricsPort=5557\n"
        "enableDLegerCommitLog=true\n"
        "dLegerGroup=demo-broker-0\n"
        "dLegerPeers=n0-demo-broker-0-0.demo-broker-0.mq.svc:40911;n1-demo-broker-0-1.demo-broker-0.mq.svc:40911;"
        "n2-demo-broker-0-2.demo-broker-0.mq.svc:40911\n"
        "aclEnable=true\n"
        "rocketmq.acl.plain.file=/etc/rocketq-acl/plain_acl.yml\n"
        "innerClientCredentialsFile=/etc/rocketq-acl/tools.yml\n"
    )}


def test_acl_broker_conf_points_the_engine_at_the_mounted_secret() -> None:
    cluster = cluster_of({"acl": {"secretName": "rocketq-acl"}})
    acl = settings.build(AclSettings, brokerconf.broker_settings(cluster, 0))
    assert acl.acl_enable and str(acl.path()) == f"{broker.ACL_DIR}/plain_acl.yml"
    # followers and slaves sign their sync with the Secret's tools.yml, the file the proxy signs with
    assert acl.inner_client_credentials_file == f"{broker.ACL_DIR}/tools.yml" == proxy.TOOLS_FILE
    pod = broker.render_broker_statefulset(cluster, 0)["spec"]["template"]["spec"]
    assert {"name": "acl", "mountPath": broker.ACL_DIR, "readOnly": True} in pod["containers"][0]["volumeMounts"]
    assert settings.build(AclSettings, brokerconf.broker_settings(cluster_of({}), 0)) == AclSettings()


def test_spec_config_overrides_rendered_defaults() -> None:
    cluster = cluster_of({"brokers": {"config": {"flushDiskType": "SYNC_FLUSH"}}})
    assert brokerconf.broker_settings(cluster, 0)["flushDiskType"] == "SYNC_FLUSH"


@pytest.mark.parametrize(("values", "text"), [
    ({"a": "C:\\data"}, "a=C:\\\\data\n"),
    ({"a": " lead"}, "a=\\ lead\n"),
    ({"a": "x=y:z #1"}, "a=x=y:z #1\n"),
    ({"a": "tab\there"}, "a=tab\\there\n"),
])
def test_properties_escaping(values: dict[str, str], text: str) -> None:
    assert brokerconf.format_properties(values) == brokerconf.HEADER + text


def broker_template(cluster: specs.Cluster, *, dledger: bool) -> dict[str, Any]:
    ports = [{"name": "broker", "containerPort": 10911, "protocol": "TCP"},
             {"name": "ha", "containerPort": 10912, "protocol": "TCP"}]
    if dledger:
        ports.append({"name": "dledger", "containerPort": 40911, "protocol": "TCP"})
    ports.append({"name": "metrics", "containerPort": 5557, "protocol": "TCP"})
    items = [{"key": "broker.conf", "path": "broker.conf"}]
    if not dledger:
        items.append({"key": "masterOrdinal", "path": "masterOrdinal"})
    command = ["rocketq", "broker", "-c", "/etc/rocketq/broker.conf"]
    identity: list[dict[str, Any]] = []
    if dledger:  # no brokerId or role: Raft decides; the pod's ordinal is its dLegerSelfId
        command += ["--set", "dLegerSelfId=n$(POD_ORDINAL)"]
        identity = [{"name": "POD_ORDINAL", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}}}]
    else:
        command.append("--ordinal-from-hostname")
    return {
        "metadata": {
            "labels": labels("broker", "demo-broker-0"),
            "annotations": {"rocketq.io/config-hash": common.digest(brokerconf.render_broker_conf(cluster, 0)),
                            **METRICS},
        },
        "spec": {
            "securityContext": POD_SECURITY,
            "terminationGracePeriodSeconds": 60,
            "containers": [{
                "name": "broker", "image": "rocketq/rocketq:0.1.0", "imagePullPolicy": "IfNotPresent",
                "command": command,
                "ports": ports,
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    *identity,
                    {"name": "NAMESRV_ADDR",
                     "value": "demo-namesrv-0.demo-namesrv.mq.svc:9876;demo-namesrv-1.demo-namesrv.mq.svc:9876"},
                    {"name": "BROKER_IP1", "value": "$(POD_NAME).demo-broker-0.mq.svc"},
                ],
                "volumeMounts": [{"name": "store", "mountPath": "/home/rocketq/store"},
                                 {"name": "config", "mountPath": "/etc/rocketq", "readOnly": True}],
                **probes(120),
                "securityContext": CONTAINER_SECURITY,
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
            }],
            "volumes": [{"name": "config", "configMap": {"name": "demo-broker-0-config", "items": items}}],
            "affinity": anti_affinity(selector("broker", "demo-broker-0")),
        },
    }


def test_master_slave_broker_statefulset_exactly() -> None:
    cluster = cluster_of({"brokers": {"resources": {"requests": {"cpu": "1", "memory": "2Gi"}}},
                          "storage": {"size": "50Gi", "storageClassName": "fast"}})
    assert broker.render_broker_statefulset(cluster, 0) == {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "demo-broker-0", "namespace": "mq", "labels": labels("broker", "demo-broker-0"),
                     "ownerReferences": [OWNER], "annotations": {"rocketq.io/broker-mode": "MasterSlave"}},
        "spec": {
            "serviceName": "demo-broker-0", "replicas": 2, "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "OnDelete"},
            "selector": {"matchLabels": selector("broker", "demo-broker-0")},
            "template": sealed(broker_template(cluster, dledger=False)),
            "volumeClaimTemplates": [{
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "store", "labels": selector("broker", "demo-broker-0")},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "50Gi"}},
                         "storageClassName": "fast"},
            }],
        },
    }


def test_dledger_emptydir_statefulset_with_scheduling_and_acl() -> None:
    cluster = cluster_of({
        "brokers": {"mode": "DLedger", "replicasPerGroup": 3,
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}},
        "storage": {"type": "EmptyDir", "size": "5Gi"},
        "scheduling": {"nodeSelector": {"pool": "mq"}, "tolerations": [{"key": "mq", "operator": "Exists"}],
                       "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                           "nodeSelectorTerms": [{"matchExpressions": [
                               {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}},
        "acl": {"secretName": "rocketq-acl"},
    })
    rendered = broker.render_broker_statefulset(cluster, 0)
    template = broker_template(cluster, dledger=True)
    pod = template["spec"]
    pod["containers"][0]["volumeMounts"].append({"name": "acl", "mountPath": "/etc/rocketq-acl", "readOnly": True})
    pod["volumes"] += [{"name": "store", "emptyDir": {"sizeLimit": "5Gi"}},
                       {"name": "acl", "secret": {"secretName": "rocketq-acl"}}]
    pod["nodeSelector"] = {"pool": "mq"}
    pod["tolerations"] = [{"key": "mq", "operator": "Exists"}]
    pod["affinity"] = cluster.spec.scheduling.affinity
    assert rendered["spec"]["template"] == sealed(template)
    assert "volumeClaimTemplates" not in rendered["spec"]
    assert rendered["spec"]["replicas"] == 3
    assert rendered["metadata"]["annotations"] == {"rocketq.io/broker-mode": "DLedger"}


def test_broker_service_exactly() -> None:
    cluster = cluster_of({"brokers": {"mode": "DLedger", "replicasPerGroup": 3}})
    assert broker.render_broker_service(cluster, 0) == {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "demo-broker-0", "namespace": "mq", "labels": labels("broker", "demo-broker-0"),
                     "ownerReferences": [OWNER]},
        "spec": {
            "clusterIP": "None", "publishNotReadyAddresses": True, "selector": selector("broker", "demo-broker-0"),
            "ports": [{"name": "broker", "port": 10911, "targetPort": "broker", "protocol": "TCP"},
                      {"name": "ha", "port": 10912, "targetPort": "ha", "protocol": "TCP"},
                      {"name": "dledger", "port": 40911, "targetPort": "dledger", "protocol": "TCP"},
                      {"name": "metrics", "port": 5557, "targetPort": "metrics", "protocol": "TCP"}],
        },
    }


def test_pdbs_exactly() -> None:
    rendered = pdb.render_pdbs(cluster_of({"brokers": {"groups": 2}}))
    assert [p["metadata"]["name"] for p in rendered] == ["demo-namesrv", "demo-broker-0", "demo-broker-1"]
    assert rendered[1] == {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "demo-broker-0", "namespace": "mq", "labels": labels("broker", "demo-broker-0"),
                     "ownerReferences": [OWNER]},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector("broker", "demo-broker-0")}},
    }


@pytest.mark.parametrize(("replicas", "quorum"), [(3, 2), (5, 3)])
def test_a_dledger_group_budget_keeps_its_quorum(replicas: int, quorum: int) -> None:
    rendered = pdb.render_pdbs(cluster_of({"brokers": {"mode": "DLedger", "replicasPerGroup": replicas}}))
    assert rendered[0]["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector("namesrv")}}
    assert rendered[1]["spec"] == {"minAvailable": quorum,
                                   "selector": {"matchLabels": selector("broker", "demo-broker-0")}}


def test_a_dledger_pods_identity_is_its_ordinal_and_nothing_else() -> None:
    """brokerId and brokerRole are left to Raft: not in broker.conf and not derived from the
    hostname; the pod's ordinal (the pod-index label) becomes its dLegerSelfId, one of the peers."""
    cluster = cluster_of({"brokers": {"mode": "DLedger", "replicasPerGroup": 5,
                                      "config": {"preferredLeaderId": "n2"}}})
    conf = brokerconf.broker_settings(cluster, 1)
    assert not {"brokerId", "brokerRole", "dLegerSelfId"} & set(conf)
    assert conf["preferredLeaderId"] == "n2" and conf["dLegerGroup"] == "demo-broker-1"
    peers = dict(peer.split("-", 1) for peer in conf["dLegerPeers"].split(";"))
    assert peers == {f"n{i}": f"demo-broker-1-{i}.demo-broker-1.mq.svc:40911" for i in range(5)}
    container = broker.render_broker_statefulset(cluster, 1)["spec"]["template"]["spec"]["containers"][0]
    assert "--ordinal-from-hostname" not in container["command"]
    assert container["command"][-2:] == ["--set", "dLegerSelfId=n$(POD_ORDINAL)"]
    (ordinal,) = [e for e in container["env"] if e["name"] == "POD_ORDINAL"]
    assert ordinal["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['apps.kubernetes.io/pod-index']"
    assert {"name": "dledger", "containerPort": 40911, "protocol": "TCP"} in container["ports"]


def test_config_change_changes_both_hashes_but_master_ordinal_changes_neither() -> None:
    before = cluster_of({})
    after = cluster_of({"brokers": {"config": {"fileReservedTime": "24"}}})
    sts_before = broker.render_broker_statefulset(before, 0)
    sts_after = broker.render_broker_statefulset(after, 0)
    annotations = lambda sts: sts["spec"]["template"]["metadata"]["annotations"]  # noqa: E731
    assert annotations(sts_before)["rocketq.io/config-hash"] != annotations(sts_after)["rocketq.io/config-hash"]
    assert common.template_hash(sts_before) != common.template_hash(sts_after)
    assert (broker.render_broker_configmap(before, 0, 0)["data"]["broker.conf"]
            == broker.render_broker_configmap(before, 0, 1)["data"]["broker.conf"])


def test_image_change_changes_the_template_hash() -> None:
    before = broker.render_broker_statefulset(cluster_of({}), 0)
    after = broker.render_broker_statefulset(cluster_of({"image": "rocketq/rocketq:0.2.0"}), 0)
    assert common.template_hash(before) != common.template_hash(after)
    assert common.template_hash(before) == common.template_hash(broker.render_broker_statefulset(cluster_of({}), 0))


SPECS = [
    {},
    {"brokers": {"groups": 3, "mode": "DLedger", "replicasPerGroup": 5}, "storage": {"type": "EmptyDir"}},
    {"brokers": {"replicasPerGroup": 1, "resources": {"limits": {"cpu": 2, "memory": "4Gi"}}},
     "nameServers": {"replicas": 1, "resources": {"requests": {"cpu": "0.5"}}}, "metrics": {"enabled": False},
     "scheduling": {"nodeSelector": {"a": "b"}, "tolerations": [{"key": "k", "operator": "Equal", "value": "v",
                                                                  "effect": "NoSchedule"}]},
     "acl": {"secretName": "acl"}, "storage": {"storageClassName": "gp3"}},
]


def every_object(cluster: specs.Cluster) -> list[dict[str, Any]]:
    objects = [namesrv.render_namesrv_statefulset(cluster), namesrv.render_namesrv_service(cluster)]
    for index in range(cluster.spec.brokers.groups):
        objects += [broker.render_broker_configmap(cluster, index, 0), broker.render_broker_statefulset(cluster, index),
                    broker.render_broker_service(cluster, index)]
    return objects + pdb.render_pdbs(cluster)


@pytest.mark.parametrize("raw", SPECS)
def test_every_rendered_object_is_valid_kubernetes(raw: dict[str, Any]) -> None:
    for obj in every_object(cluster_of(raw)):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


@pytest.mark.parametrize("raw", SPECS)
def test_rendering_is_deterministic(raw: dict[str, Any]) -> None:
    assert every_object(cluster_of(raw)) == every_object(cluster_of(raw))

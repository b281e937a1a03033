"""spec.proxy: parsed (with rocketq proxy's own checks), rendered as a ConfigMap, Deployment,
Service and PodDisruptionBudget valid for Kubernetes, and reconciled against the kmock emulator:
created, scaled, rolled, reported, removed."""

from __future__ import annotations

import json
from typing import Any

import crdschema
import kubernetes_validate
import pytest
from operator_harness import OperatorEnv
from rocketq_operator import names
from rocketq_operator import proxy as step
from rocketq_operator import spec as specs
from rocketq_operator.rendering import common, pdb
from rocketq_operator.rendering import proxy as rendering

K8S_VERSION = "1.33.0"
OWNER = {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster", "name": "demo", "uid": "uid-1",
         "controller": True, "blockOwnerDeletion": True}
LABELS = {"app.kubernetes.io/component": "proxy", "app.kubernetes.io/instance": "demo",
          "app.kubernetes.io/managed-by": "rocketq-operator", "app.kubernetes.io/name": "rocketq",
          "rocketq.io/cluster": "demo"}
SELECTOR = {"app.kubernetes.io/name": "rocketq", "app.kubernetes.io/instance": "demo",
            "app.kubernetes.io/component": "proxy"}
NAMESRV = "demo-namesrv-0.demo-namesrv.mq.svc:9876;demo-namesrv-1.demo-namesrv.mq.svc:9876"


def cluster_of(raw: dict[str, Any], name: str = "demo") -> specs.Cluster:
    parsed = specs.parse_cluster_spec(raw, name)
    assert parsed.spec is not None, parsed.errors
    return specs.Cluster(specs.ClusterMeta(name, "mq", "uid-1", 1), parsed.spec)


def errors_of(raw: dict[str, Any]) -> str:
    return "; ".join(specs.parse_cluster_spec(raw, "demo").errors)


# ---- parsing ----------------------------------------------------------------------------------


def test_the_proxy_is_off_unless_enabled_and_the_crd_defaults_are_the_operators() -> None:
    assert cluster_of({}).spec.proxy == specs.ProxySpec()
    assert not cluster_of({"proxy": {}}).spec.proxy.enabled
    defaulted = crdschema.apply_defaults("RocketMQCluster", {
        "apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster", "metadata": {"name": "demo"},
        "spec": {"proxy": {"enabled": True}}})
    assert cluster_of(defaulted["spec"]).spec.proxy == specs.ProxySpec(enabled=True)


def test_every_proxy_field_is_read_and_broker_limits_are_inherited() -> None:
    wanted = cluster_of({
        "brokers": {"config": {"maxMessageSize": "1048576", "messageDelayLevel": "1s 5s", "deleteWhen": "04"}},
        "proxy": {"enabled": True, "replicas": 3, "grpcPort": 18081, "image": "reg/rq:2",
                  "resources": {"limits": {"memory": "1Gi"}},
                  "service": {"type": "LoadBalancer", "annotations": {"lb": "nlb"}},
                  "config": {"messageDelayLevel": "1s 5s 10s", "maxDelayTimeMills": "3600000"}}}).spec.proxy
    assert wanted == specs.ProxySpec(
        enabled=True, replicas=3, grpc_port=18081, image="reg/rq:2",
        resources=specs.Resources(limits={"memory": "1Gi"}), service_type=specs.ProxyServiceType.LOAD_BALANCER,
        service_annotations={"lb": "nlb"},
        config={"maxMessageSize": "1048576", "messageDelayLevel": "1s 5s 10s", "maxDelayTimeMills": "3600000"})


@pytest.mark.parametrize(("raw", "expected"), [
    ({"proxy": {"config": {"namesrvAddr": "x:9876"}}}, "spec.proxy.config.namesrvAddr: the operator decides this key"),
    ({"proxy": {"config": {"aclEnable": "true"}}}, "spec.proxy.config.aclEnable: the operator decides this key"),
    ({"proxy": {"config": {"innerClientAuthenticationCredentials": "{}"}}},
     "spec.proxy.config.innerClientAuthenticationCredentials: the operator decides this key"),
    ({"proxy": {"config": {"grpcAdvertisedHost": "x"}}}, "spec.proxy.config.grpcAdvertisedHost: the operator decides"),
    ({"proxy": {"config": {"proxyTimeout": "3"}}}, "spec.proxy.config.proxyTimeout: is not a key rocketq proxy"),
    ({"proxy": {"config": {"maxMessageSize": 5}}}, "spec.proxy.config.maxMessageSize: must be a string"),
    ({"proxy": {"enabled": True, "config": {"maxMessageSize": "lots"}}}, "spec.proxy.config: "),
    ({"proxy": {"enabled": True, "config": {"minInvisibleTimeMillsForRecv": "0"}}},
     "minInvisibleTimeMillsForRecv must be positive"),
    ({"brokers": {"config": {"messageDelayLevel": "soon"}}, "proxy": {"enabled": True}}, "spec.proxy.config: "),
    ({"proxy": {"service": {"type": "NodePort"}}}, "spec.proxy.service.type: must be one of ClusterIP, LoadBalancer"),
    ({"proxy": {"replicas": 0}}, "spec.proxy.replicas: must be between 1 and 64"),
    ({"proxy": {"grpcPort": 0}}, "spec.proxy.grpcPort: must be between 1 and 65535"),
    ({"proxy": {"service": {"annotations": {"a": 1}}}}, "spec.proxy.service.annotations.a: must be a string"),
])
def test_bad_proxy_specs_are_refused_as_rocketq_proxy_would(raw: dict[str, Any], expected: str) -> None:
    assert expected in errors_of(raw)


def test_a_disabled_proxy_does_not_check_values_it_would_inherit() -> None:
    assert cluster_of({"brokers": {"config": {"messageDelayLevel": "soon"}}}).spec.proxy.enabled is False


# ---- rendering --------------------------------------------------------------------------------

ENABLED = {"proxy": {"enabled": True}}


def test_config_map_holds_rmq_proxy_json_with_the_clusters_name_and_port() -> None:
    cluster = cluster_of({"brokers": {"config": {"maxMessageSize": "1048576"}},
                          "proxy": {"enabled": True, "grpcPort": 18081}})
    configmap = rendering.render_proxy_configmap(cluster)
    assert configmap["metadata"] == {"name": "demo-proxy-config", "namespace": "mq", "labels": LABELS,
                                     "ownerReferences": [OWNER]}
    assert json.loads(configmap["data"]["rmq-proxy.json"]) == {
        "rocketMQClusterName": "demo", "grpcServerPort": 18081, "metricsPort": 5557, "maxMessageSize": "1048576"}


def test_deployment_exactly() -> None:
    cluster = cluster_of(ENABLED)
    deployment = rendering.render_proxy_deployment(cluster)
    template = deployment["spec"]["template"]
    grpc = {"port": 8081}
    assert deployment == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "demo-proxy", "namespace": "mq", "labels": LABELS, "ownerReferences": [OWNER]},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": SELECTOR},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {
                "metadata": {"labels": LABELS, "annotations": {
                    "rocketq.io/config-hash": common.digest(rendering.render_proxy_config_text(cluster)),
                    "prometheus.io/scrape": "true", "prometheus.io/port": "5557", "prometheus.io/path": "/metrics"}},
                "spec": {
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                        "fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{
                        "name": "proxy",
                        "image": "rocketq/rocketq:0.1.0",
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["rocketq", "proxy", "-c", "/etc/rocketq/rmq-proxy.json"],
                        "ports": [{"name": "grpc", "containerPort": 8081, "protocol": "TCP"},
                                  {"name": "metrics", "containerPort": 5557, "protocol": "TCP"}],
                        "env": [{"name": "NAMESRV_ADDR", "value": NAMESRV}],
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/rocketq", "readOnly": True}],
                        "startupProbe": {"grpc": grpc, "periodSeconds": 2, "timeoutSeconds": 2,
                                         "failureThreshold": 30},
                        "readinessProbe": {"grpc": grpc, "periodSeconds": 5, "timeoutSeconds": 3,
                                           "failureThreshold": 3},
                        "livenessProbe": {"grpc": grpc, "periodSeconds": 10, "timeoutSeconds": 5,
                                          "failureThreshold": 6},
                        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                    }],
                    "volumes": [{"name": "config", "configMap": {
                        "name": "demo-proxy-config", "items": [{"key": "rmq-proxy.json", "path": "rmq-proxy.json"}]}}],
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                           "labelSelector": {"matchLabels": SELECTOR}}}]}},
                },
            },
        },
    }
    assert template["metadata"]["labels"]["app.kubernetes.io/component"] == common.COMPONENT_PROXY


ACL_ENABLED = {"proxy": {"enabled": True}, "acl": {"secretName": "demo-acl"}}


def test_with_acl_the_proxy_checks_clients_and_signs_with_the_acl_secrets_accounts() -> None:
    cluster = cluster_of(ACL_ENABLED)
    assert json.loads(rendering.render_proxy_configmap(cluster)["data"]["rmq-proxy.json"]) == {
        "rocketMQClusterName": "demo", "grpcServerPort": 8081,
        "aclEnable": True, "rocketmq.acl.plain.file": "/etc/rocketq-acl/plain_acl.yml",
        "enableAclRpcHookForClusterMode": True, "innerClientCredentialsFile": "/etc/rocketq-acl/tools.yml"}
    pod = rendering.render_proxy_deployment(cluster)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["volumeMounts"][1:] == [{"name": "acl", "mountPath": "/etc/rocketq-acl", "readOnly": True}]
    assert pod["volumes"][1:] == [{"name": "acl", "secret": {"secretName": "demo-acl"}}]
    without = rendering.render_proxy_deployment(cluster_of(ENABLED))["spec"]["template"]
    assert without["metadata"]["annotations"] != \
        rendering.render_proxy_deployment(cluster)["spec"]["template"]["metadata"]["annotations"], \
        "turning ACL on rolls the proxy"


def test_service_port_is_the_container_port_and_load_balancers_get_their_annotations() -> None:
    assert rendering.render_proxy_service(cluster_of(ENABLED)) == {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "demo-proxy", "namespace": "mq", "labels": LABELS, "ownerReferences": [OWNER]},
        "spec": {"type": "ClusterIP", "selector": SELECTOR, "ports": [
            {"name": "grpc", "port": 8081, "targetPort": "grpc", "protocol": "TCP", "appProtocol": "grpc"}]},
    }
    service = rendering.render_proxy_service(cluster_of({"proxy": {
        "enabled": True, "grpcPort": 9000, "service": {"type": "LoadBalancer", "annotations": {"b": "2", "a": "1"}}}}))
    assert service["metadata"]["annotations"] == {"a": "1", "b": "2"}
    assert service["spec"]["type"] == "LoadBalancer" and service["spec"]["ports"][0]["port"] == 9000


def test_pdb_keeps_all_but_one_proxy_pod() -> None:
    assert pdb.render_proxy_pdb(cluster_of(ENABLED))["spec"] == {"maxUnavailable": 1,
                                                                  "selector": {"matchLabels": SELECTOR}}


def test_image_override_resources_and_config_changes_reach_the_pod_template() -> None:
    base = rendering.render_proxy_deployment(cluster_of(ENABLED))["spec"]["template"]
    other = rendering.render_proxy_deployment(cluster_of({"image": "rocketq/rocketq:0.2.0", "proxy": {
        "enabled": True, "image": "reg/proxy:1", "resources": {"requests": {"cpu": "100m"}}}}))["spec"]["template"]
    (container,) = other["spec"]["containers"]
    assert container["image"] == "reg/proxy:1" and container["resources"] == {"requests": {"cpu": "100m"}}
    configured = rendering.render_proxy_deployment(cluster_of({"proxy": {
        "enabled": True, "config": {"maxMessageSize": "1024"}}}))["spec"]["template"]
    hash_key = common.ANNOTATION_CONFIG_HASH
    assert configured["metadata"]["annotations"][hash_key] != base["metadata"]["annotations"][hash_key]
    assert rendering.render_proxy_deployment(cluster_of({"image": "x/y:2", "proxy": {"enabled": True}}))[
        "spec"]["template"]["spec"]["containers"][0]["image"] == "x/y:2", "spec.image when no override"


@pytest.mark.parametrize("raw", [
    ENABLED,
    ACL_ENABLED,
    {"proxy": {"enabled": True, "replicas": 1, "grpcPort": 18081, "image": "r/p:1",
               "resources": {"limits": {"cpu": 1, "memory": "512Mi"}},
               "service": {"type": "LoadBalancer", "annotations": {"x": "y"}}, "config": {"maxMessageSize": "1024"}},
     "scheduling": {"nodeSelector": {"a": "b"}}},
])
def test_every_proxy_object_is_valid_kubernetes(raw: dict[str, Any]) -> None:
    cluster = cluster_of(raw)
    for obj in (rendering.render_proxy_configmap(cluster), rendering.render_proxy_deployment(cluster),
                rendering.render_proxy_service(cluster), pdb.render_proxy_pdb(cluster)):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


# ---- readiness --------------------------------------------------------------------------------


def deployment_with(generation: int, **status: int) -> dict[str, Any]:
    return {"metadata": {"generation": generation}, "status": status}


@pytest.mark.parametrize(("deployment", "ready", "reason"), [
    (deployment_with(2, observedGeneration=2, replicas=2, updatedReplicas=2, readyReplicas=2), 2, "Ready"),
    (deployment_with(3, observedGeneration=2, replicas=2, updatedReplicas=2, readyReplicas=2), 2, "RollingUpdate"),
    (deployment_with(2, observedGeneration=2, replicas=3, updatedReplicas=1, readyReplicas=3), 3, "RollingUpdate"),
    (deployment_with(2, observedGeneration=2, replicas=3, updatedReplicas=2, readyReplicas=3), 3, "RollingUpdate"),
    (deployment_with(2, observedGeneration=2, replicas=2, updatedReplicas=2, readyReplicas=1), 1, "PodsNotReady"),
    (deployment_with(1), 0, "RollingUpdate"),
    (None, 0, "RollingUpdate"),
])
def test_ready_means_the_rollout_is_complete(deployment: dict[str, Any] | None, ready: int, reason: str) -> None:
    count, condition = step.readiness(cluster_of(ENABLED), deployment)
    assert (count, condition.reason, condition.status) == (ready, reason, reason == "Ready")


# ---- against the emulator ---------------------------------------------------------------------


def proxy_condition(env: OperatorEnv) -> dict[str, Any] | None:
    return env.condition("RocketMQCluster", "demo", "ProxyReady")


def reason_is(env: OperatorEnv, reason: str) -> bool:
    return (proxy_condition(env) or {}).get("reason") == reason


async def test_enabling_runs_the_proxy_and_reports_it_ready(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"proxy": {"enabled": True}})
    await env.wait_for(lambda: reason_is(env, "Ready"), "ProxyReady=True")
    body = env.get("RocketMQCluster", "demo")
    assert body is not None
    uid = body["metadata"]["uid"]
    for kind, name in (("ConfigMap", "demo-proxy-config"), ("Service", "demo-proxy"), ("Deployment", "demo-proxy"),
                       ("PodDisruptionBudget", "demo-proxy")):
        live = env.get(kind, name)
        assert live is not None, (kind, name)
        assert [r["uid"] for r in live["metadata"]["ownerReferences"]] == [uid]
    assert env.status("RocketMQCluster", "demo")["proxy"] == {
        "replicas": 2, "readyReplicas": 2, "ready": "2/2", "endpoint": "demo-proxy.mq.svc:8081"}
    found = proxy_condition(env)
    assert found is not None and found["status"] == "True" and "demo-proxy.mq.svc:8081" in found["message"]
    await env.wait_for(lambda: env.status("RocketMQCluster", "demo").get("phase") == "Running", "Running")


async def test_scale_and_image_changes_roll_the_deployment_and_one_replica_has_no_budget(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"proxy": {"enabled": True}})
    await env.wait_for(lambda: reason_is(env, "Ready"), "ProxyReady=True")
    env.sts.held.add("demo-proxy")  # the Deployment controller has not caught up yet
    await env.patch("RocketMQCluster", "demo", {"spec": {"proxy": {"replicas": 1, "image": "rocketq/rocketq:0.2.0"}}})
    await env.wait_for(lambda: reason_is(env, "RollingUpdate"), "ProxyReady=False while rolling")
    live = env.get("Deployment", "demo-proxy")
    assert live is not None and live["spec"]["replicas"] == 1
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "rocketq/rocketq:0.2.0"
    assert env.get("PodDisruptionBudget", "demo-proxy") is None, "one pod must stay evictable"
    env.sts.held.discard("demo-proxy")
    await env.wait_for(lambda: reason_is(env, "Ready"), "ProxyReady=True after the roll")
    assert env.status("RocketMQCluster", "demo")["proxy"]["ready"] == "1/1"
    assert [image for name, image in env.sts.rollouts if name == "demo-proxy"] == [
        "rocketq/rocketq:0.1.0", "rocketq/rocketq:0.2.0"]

    await env.patch("RocketMQCluster", "demo", {"spec": {"proxy": {"config": {"maxMessageSize": "1048576"}}}})
    await env.wait_for(lambda: len([r for r in env.sts.rollouts if r[0] == "demo-proxy"]) == 3,
                       "a config change to roll the pods too")
    configmap = env.get("ConfigMap", "demo-proxy-config")
    assert configmap is not None
    assert json.loads(configmap["data"]["rmq-proxy.json"])["maxMessageSize"] == "1048576"


async def test_unready_proxy_pods_are_reported_without_failing_the_cluster(env: OperatorEnv) -> None:
    env.sts.unready.add("demo-proxy")
    await env.create("RocketMQCluster", "demo", {"proxy": {"enabled": True, "replicas": 3}})
    await env.wait_for(lambda: reason_is(env, "PodsNotReady"), "ProxyReady=False, PodsNotReady")
    await env.wait_for(lambda: env.status("RocketMQCluster", "demo").get("phase") == "Running",
                       "name servers and brokers run regardless")
    assert env.status("RocketMQCluster", "demo")["proxy"]["ready"] == "0/3"
    env.sts.unready.discard("demo-proxy")
    await env.wait_for(lambda: reason_is(env, "Ready"), "ProxyReady=True")


async def test_disabling_removes_the_proxy_and_its_status(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"proxy": {"enabled": True}})
    await env.wait_for(lambda: reason_is(env, "Ready"), "ProxyReady=True")
    await env.patch("RocketMQCluster", "demo", {"spec": {"proxy": {"enabled": False}}})
    await env.wait_for(lambda: "proxy" not in env.status("RocketMQCluster", "demo"), "status.proxy to go")
    for kind, name in (("ConfigMap", "demo-proxy-config"), ("Service", "demo-proxy"), ("Deployment", "demo-proxy"),
                       ("PodDisruptionBudget", "demo-proxy")):
        assert env.get(kind, name) is None, (kind, name)
    assert proxy_condition(env) is None
    assert env.get("Service", names.namesrv("demo")) is not None, "the rest of the cluster stays"


async def test_a_proxy_in_front_of_acl_brokers_mounts_the_acl_secret(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", ACL_ENABLED)
    await env.wait_for(lambda: reason_is(env, "Ready"), "ProxyReady=True")
    configmap, deployment = env.get("ConfigMap", "demo-proxy-config"), env.get("Deployment", "demo-proxy")
    assert configmap is not None and deployment is not None
    config = json.loads(configmap["data"]["rmq-proxy.json"])
    assert config["aclEnable"] is True and config["enableAclRpcHookForClusterMode"] is True
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "acl", "secret": {"secretName": "demo-acl"}} in pod["volumes"]
    assert {"name": "acl", "mountPath": "/etc/rocketq-acl", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    broker_conf = env.get("ConfigMap", names.broker_config("demo", 0))
    assert broker_conf is not None and "aclEnable=true" in broker_conf["data"]["broker.conf"], "the brokers too"


@pytest.mark.without_admission
async def test_without_cel_a_bad_proxy_config_is_an_invalid_spec(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"proxy": {"enabled": True, "config": {"maxMessageSize": "-1"}},
                                                 "acl": {"secretName": "acl"}})

    def invalid() -> dict[str, Any] | None:
        found = env.condition("RocketMQCluster", "demo", "Ready")
        return found if found and found["reason"] == "InvalidSpec" else None

    found = await env.wait_for(invalid, "Ready=False, InvalidSpec")
    assert "maxMessageSize=-1" in found["message"]
    assert "spec.acl" not in found["message"], "a proxy may front ACL brokers"
    assert env.get("Deployment", "demo-proxy") is None

"""spec.console: parsed like every field (and accepted exactly when the CRD accepts it), rendered
into a Deployment, Service and Ingress that are valid Kubernetes, and reconciled against the
kmock emulator: enabling creates them, changing patches them, disabling removes them."""

from __future__ import annotations

from typing import Any

import crdschema
import hypothesis
import kubernetes_validate
import pytest
from hypothesis import strategies as st
from operator_harness import PATHS, OperatorEnv
from rocketq_operator import names
from rocketq_operator import spec as specs
from rocketq_operator.rendering import common
from rocketq_operator.rendering import console as rendering

K8S_VERSION = "1.33.0"
ENABLED = {"enabled": True, "usersSecret": "console-users"}


def cluster_of(raw: dict[str, Any], name: str = "demo") -> specs.Cluster:
    parsed = specs.parse_cluster_spec(raw, name)
    assert parsed.spec is not None, parsed.errors
    return specs.Cluster(specs.ClusterMeta(name, "mq", "uid-1", 1), parsed.spec)


def errors_of(raw: dict[str, Any]) -> tuple[str, ...]:
    return specs.parse_cluster_spec(raw, "demo").errors


def crd_errors(console: Any) -> list[str]:
    obj = {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster", "metadata": {"name": "demo"},
           "spec": {"console": console}}
    return crdschema.validate("RocketMQCluster", obj)


# ---- the spec -----------------------------------------------------------------------------------


def test_console_is_off_unless_enabled() -> None:
    assert cluster_of({}).spec.console == specs.ConsoleSpec()
    assert cluster_of({"console": {}}).spec.console.enabled is False


def test_the_crds_console_defaults_are_the_operators() -> None:
    defaulted = crdschema.apply_defaults("RocketMQCluster", {
        "apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster", "metadata": {"name": "demo"},
        "spec": {"console": dict(ENABLED)}})
    assert defaulted["spec"]["console"]["service"] == {"type": "ClusterIP", "port": 8080}
    assert cluster_of(defaulted["spec"]).spec.console == specs.ConsoleSpec(enabled=True, users_secret="console-users")


def test_every_console_field_is_read() -> None:
    wanted = cluster_of({"console": {
        **ENABLED, "replicas": 2, "usersKey": "users.txt", "service": {"type": "NodePort", "port": 80},
        "ingress": {"enabled": True, "host": "mq.example.com", "className": "nginx", "path": "/",
                    "tlsSecret": "mq-tls", "annotations": {"a/b": "c"}},
        "resources": {"limits": {"memory": "256Mi"}}, "aclCredentialsSecret": "console-acl"}}).spec.console
    assert wanted == specs.ConsoleSpec(
        enabled=True, replicas=2, users_secret="console-users", users_key="users.txt",
        service_type=specs.ServiceType.NODE_PORT, port=80,
        ingress=specs.IngressSpec(True, "mq.example.com", "nginx", "/", "mq-tls", {"a/b": "c"}),
        resources=specs.Resources(limits={"memory": "256Mi"}), acl_credentials_secret="console-acl")


@pytest.mark.parametrize(("raw", "expected"), [
    ({"enabled": True}, "spec.console.usersSecret: is required when the console is enabled"),
    ({**ENABLED, "replicas": 6}, "spec.console.replicas: must be between 1 and 5"),
    ({**ENABLED, "usersSecret": "Bad_Name"}, "spec.console.usersSecret:"),
    ({**ENABLED, "service": {"type": "ExternalName"}}, "spec.console.service.type: must be one of"),
    ({**ENABLED, "service": {"port": 0}}, "spec.console.service.port:"),
    ({**ENABLED, "ingress": {"enabled": True, "tlsSecret": "t"}}, "spec.console.ingress.tlsSecret: needs"),
    ({**ENABLED, "ingress": {"path": "console"}}, "spec.console.ingress.path:"),
    ({**ENABLED, "ingress": {"host": "Bad Host"}}, "spec.console.ingress.host:"),
    ({**ENABLED, "ingress": {"annotations": {"a": 1}}}, "spec.console.ingress.annotations.a: must be a string"),
    ({**ENABLED, "resources": {"limits": {"memory": "lots"}}}, "spec.console.resources.limits.memory:"),
])
def test_invalid_console_is_an_error_line_and_refused_by_the_crd(raw: dict[str, Any], expected: str) -> None:
    errors = errors_of({"console": raw})
    assert any(e.startswith(expected) for e in errors), errors
    assert crd_errors(raw) != [], "the API server refuses it too"


@pytest.mark.parametrize("raw", [
    {}, {"enabled": False}, ENABLED, {**ENABLED, "replicas": 5, "service": {"type": "LoadBalancer", "port": 443}},
    {**ENABLED, "ingress": {"enabled": True}},
    {**ENABLED, "ingress": {"enabled": True, "host": "*.example.com", "tlsSecret": "tls", "path": "/rocketq"}},
])
def test_a_valid_console_is_accepted_by_crd_and_operator(raw: dict[str, Any]) -> None:
    assert crd_errors(raw) == []
    assert errors_of({"console": raw}) == ()


@hypothesis.given(host=st.one_of(st.none(), st.text(alphabet="ab.-*Z 9", max_size=12)),
                  path=st.one_of(st.none(), st.text(alphabet="/a -.", max_size=8)),
                  tls=st.one_of(st.none(), st.sampled_from(["tls", "TLS", "t.ls"])),
                  secret=st.one_of(st.none(), st.text(alphabet="ab-._", max_size=6)))
@hypothesis.settings(max_examples=150, deadline=None)
def test_the_operator_accepts_a_console_exactly_when_the_crd_does(host: str | None, path: str | None,
                                                                  tls: str | None, secret: str | None) -> None:
    ingress = {k: v for k, v in {"enabled": True, "host": host, "path": path, "tlsSecret": tls}.items()
               if v is not None}
    raw = {"enabled": True, "ingress": ingress, **({"usersSecret": secret} if secret is not None else {})}
    assert (errors_of({"console": raw}) == ()) == (crd_errors(raw) == []), (raw, crd_errors(raw))


def test_the_crds_cel_rule_names_the_missing_users_secret() -> None:
    errors = crd_errors({"enabled": True})
    assert any("spec.console.usersSecret is required" in e for e in errors), errors


# ---- rendering ----------------------------------------------------------------------------------


def test_the_deployment_runs_the_console_against_the_clusters_name_servers() -> None:
    cluster = cluster_of({"console": {**ENABLED, "usersKey": "users.txt"}, "image": "reg/rocketq:9"})
    deployment = rendering.render_deployment(cluster)
    kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)
    assert deployment["metadata"]["name"] == "demo-console"
    assert deployment["metadata"]["ownerReferences"] == [common.owner_reference(cluster)]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "reg/rocketq:9"
    assert container["command"] == ["rocketq", "console"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"NAMESRV_ADDR": "demo-namesrv.mq.svc:9876", "ROCKETQ_CONSOLE_USERS": "/etc/rocketq/console/users",
                   "ROCKETQ_CONSOLE_HOST": "0.0.0.0", "ROCKETQ_CONSOLE_PORT": "8080"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["volumeMounts"][0] == {"name": "users", "mountPath": "/etc/rocketq/console", "readOnly": True}
    assert pod["volumes"][0] == {"name": "users", "secret": {
        "secretName": "console-users", "items": [{"key": "users.txt", "path": "users"}]}}
    assert deployment["spec"]["selector"]["matchLabels"] == common.selector_labels("demo", "console")
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_a_console_of_an_acl_cluster_signs_with_the_credentials_secret() -> None:
    cluster = cluster_of({"acl": {"secretName": "acl"}, "console": {**ENABLED, "aclCredentialsSecret": "console-acl"}})
    deployment = rendering.render_deployment(cluster)
    kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[-2:] == [
        {"name": "ROCKETQ_ACCESS_KEY", "valueFrom": {"secretKeyRef": {"name": "console-acl", "key": "accessKey"}}},
        {"name": "ROCKETQ_SECRET_KEY", "valueFrom": {"secretKeyRef": {"name": "console-acl", "key": "secretKey"}}}]


def test_service_and_ingress_are_valid_and_route_to_the_pods() -> None:
    cluster = cluster_of({"console": {**ENABLED, "replicas": 2, "service": {"port": 80}, "ingress": {
        "enabled": True, "host": "mq.example.com", "className": "nginx", "tlsSecret": "mq-tls",
        "annotations": {"nginx.ingress.kubernetes.io/affinity": "cookie"}}}})
    service, deployment, ingress = rendering.render(cluster)
    for obj in (service, deployment, ingress):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
    assert service["spec"]["sessionAffinity"] == "ClientIP", "sessions live in one pod's memory"
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"hosts": ["mq.example.com"], "secretName": "mq-tls"}]
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "mq.example.com"
    assert rule["http"]["paths"][0]["backend"] == {"service": {"name": "demo-console", "port": {"name": "http"}}}
    assert ingress["metadata"]["annotations"] == {"nginx.ingress.kubernetes.io/affinity": "cookie"}
    assert "--secure-cookies" in deployment["spec"]["template"]["spec"]["containers"][0]["command"]


def test_one_replica_needs_no_affinity_and_plain_http_no_secure_cookie() -> None:
    service, deployment = rendering.render(cluster_of({"console": ENABLED}))
    assert "sessionAffinity" not in service["spec"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["command"] == ["rocketq", "console"]


def test_what_is_removed_follows_the_spec() -> None:
    assert rendering.removable(cluster_of({})) == [
        ("Ingress", "demo-console"), ("Deployment", "demo-console"), ("Service", "demo-console")]
    assert rendering.removable(cluster_of({"console": ENABLED})) == [("Ingress", "demo-console")]
    assert rendering.removable(cluster_of({"console": {**ENABLED, "ingress": {"enabled": True}}})) == []


# ---- against the emulator ---------------------------------------------------------------------


def console_status(env: OperatorEnv) -> dict[str, Any] | None:
    return env.status("RocketMQCluster", "demo").get("console")


async def test_enabling_creates_the_console_changes_patch_it_disabling_removes_it(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"console": {**ENABLED, "ingress": {"enabled": True,
                                                                                    "host": "mq.example.com"}}})
    await env.wait_for(lambda: env.get("Ingress", "demo-console"), "the console's Ingress")
    body = env.get("RocketMQCluster", "demo")
    assert body is not None
    cluster = cluster_of(body["spec"])
    uid = body["metadata"]["uid"]
    for kind in ("Deployment", "Service", "Ingress"):
        live = env.get(kind, "demo-console")
        assert live is not None and [r["uid"] for r in live["metadata"]["ownerReferences"]] == [uid], kind
    live = env.get("Deployment", "demo-console")
    assert live is not None
    assert live["spec"]["template"]["spec"] == rendering.render_deployment(
        specs.Cluster(specs.ClusterMeta("demo", "mq", uid, 1), cluster.spec))["spec"]["template"]["spec"]
    status = await env.wait_for(lambda: console_status(env), "status.console")
    assert status == {"service": "demo-console.mq.svc:8080", "replicas": 1, "readyReplicas": 0,
                      "ingress": "mq.example.com"}

    # the Deployment controller reports a ready pod: the status follows
    response = await env.server.patch(f"{PATHS['Deployment'].format(ns='mq')}/demo-console/status",
                                      json={"status": {"replicas": 1, "readyReplicas": 1}})
    assert response.status < 300, await response.text()
    await env.wait_for(lambda: (console_status(env) or {}).get("readyReplicas") == 1, "one ready console pod")

    await env.patch("RocketMQCluster", "demo", {"spec": {"console": {"replicas": 2, "ingress": {"enabled": False}}}})
    await env.wait_for(lambda: env.get("Ingress", "demo-console") is None, "the Ingress to be removed")
    await env.wait_for(lambda: (env.get("Deployment", "demo-console") or {}).get("spec", {}).get("replicas") == 2,
                       "two replicas")
    await env.wait_for(lambda: "ingress" not in (console_status(env) or {"ingress": 1}), "status without ingress")

    await env.patch("RocketMQCluster", "demo", {"spec": {"console": {"enabled": False}}})
    await env.wait_for(lambda: env.get("Deployment", "demo-console") is None, "the Deployment to be removed")
    await env.wait_for(lambda: env.get("Service", "demo-console") is None, "the Service to be removed")
    await env.wait_for(lambda: console_status(env) is None, "status.console to go")
    assert env.status("RocketMQCluster", "demo").get("phase") == "Running", "the brokers never waited"


async def test_a_strangers_deployment_with_the_consoles_name_is_refused_not_adopted(env: OperatorEnv) -> None:
    stranger = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "demo-console", "namespace": "mq"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "other"}},
                         "template": {"metadata": {"labels": {"app": "other"}},
                                      "spec": {"containers": [{"name": "x", "image": "other"}]}}}}
    response = await env.server.post(PATHS["Deployment"].format(ns="mq"), json=stranger)
    assert response.status < 300, await response.text()
    await env.create("RocketMQCluster", "demo", {"console": ENABLED})

    def degraded() -> dict[str, Any] | None:
        found = env.condition("RocketMQCluster", "demo", "Degraded")
        return found if found and found["status"] == "True" else None

    found = await env.wait_for(degraded, "the name conflict to be reported")
    assert found["reason"] == "NameConflict" and "Deployment mq/demo-console" in found["message"]
    live = env.get("Deployment", "demo-console")
    assert live is not None and "ownerReferences" not in live["metadata"]
    assert env.get("Service", "demo-console") is not None, "the Service is ours and applied"
    assert names.console("demo") == "demo-console"

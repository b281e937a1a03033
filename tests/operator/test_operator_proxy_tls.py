"""spec.proxy.tls: the CRD's rules (CEL evaluated with cel-python on defaulted objects), the
operator's own parse agreeing with them, the TLS Secret's checks, the rendered TLS Deployment
(valid Kubernetes), and against the kmock emulator: a missing Secret is a condition, a present one
renders the proxy, a bad one leaves the running proxy alone, a rotated one rolls the pods."""

from __future__ import annotations

import asyncio
import base64
import json
import pathlib
import subprocess
import sys
from typing import Any

import crdschema
import kubernetes_validate
import pytest
from operator_harness import NAMESPACE, OperatorEnv
from rocketq_operator import kubeapi, proxytls
from rocketq_operator import spec as specs
from rocketq_operator.rendering import common
from rocketq_operator.rendering import proxy as rendering

from rocketq.local.ports import free_port
from rocketq.proxy import settings as proxy_settings
from rocketq.proxy import tls

K8S_VERSION = "1.33.0"
SECRET = "demo-proxy-tls"
SECRETS_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets"
TLS_ON = {"proxy": {"enabled": True, "tls": {"secretName": SECRET}}}
DIGEST = "0123456789abcdef"
PASSES_WAIT_S = 1.0


def cr(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster", "metadata": {"name": "demo"},
            "spec": spec}


def cluster_of(raw: dict[str, Any]) -> specs.Cluster:
    defaulted = crdschema.apply_defaults("RocketMQCluster", cr(raw))["spec"]
    parsed = specs.parse_cluster_spec(defaulted, "demo")
    assert parsed.spec is not None, parsed.errors
    return specs.Cluster(specs.ClusterMeta("demo", NAMESPACE, "uid-1", 1), parsed.spec)


def secret_data(pair: tls.KeyPair | None = None) -> dict[str, str]:
    pair = pair or tls.self_signed(("demo-proxy.mq.svc",))
    return {"tls.crt": base64.b64encode(pair.cert_pem).decode(), "tls.key": base64.b64encode(pair.key_pem).decode()}


def secret(data: dict[str, str], name: str = SECRET) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": NAMESPACE}, "data": data}


# ---- the CRD's rules and the operator's parse ---------------------------------------------------

SPECS = [  # (spec.proxy.tls, the CRD's error or None, the mode the operator runs)
    ({"secretName": SECRET}, None, specs.ProxyTlsMode.ENFORCING),
    ({"secretName": SECRET, "mode": "enforcing"}, None, specs.ProxyTlsMode.ENFORCING),
    ({"secretName": SECRET, "mode": "disabled"}, None, specs.ProxyTlsMode.DISABLED),
    ({"mode": "disabled"}, None, specs.ProxyTlsMode.DISABLED),
    ({}, None, specs.ProxyTlsMode.DISABLED),
    ({"mode": "enforcing"}, "spec.proxy.tls.mode enforcing needs spec.proxy.tls.secretName", None),
    ({"secretName": SECRET, "mode": "permissive"}, 'spec.proxy.tls.mode: Unsupported value: "permissive"', None),
    ({"secretName": "Proxy_TLS"}, "spec.proxy.tls.secretName: Invalid value", None),
]


@pytest.mark.parametrize(("tls_spec", "crd_error", "mode"), SPECS, ids=[json.dumps(s[0]) for s in SPECS])
def test_the_crd_and_the_operator_agree_on_spec_proxy_tls(
        tls_spec: dict[str, Any], crd_error: str | None, mode: specs.ProxyTlsMode | None) -> None:
    obj = cr({"proxy": {"enabled": True, "tls": tls_spec}})
    errors = crdschema.validate("RocketMQCluster", obj)
    if crd_error is None:
        assert errors == []
        assert cluster_of(obj["spec"]).spec.proxy.tls == specs.ProxyTlsSpec(tls_spec.get("secretName"), mode)
    else:
        assert any(crd_error in e for e in errors), errors
        # without CEL (or the schema) the operator refuses it itself
        assert specs.parse_cluster_spec(obj["spec"], "demo").errors


def test_tls_takes_no_other_fields() -> None:
    errors = crdschema.validate("RocketMQCluster", cr({"proxy": {"tls": {"secretName": SECRET, "caSecret": "x"}}}))
    assert any('unknown field "spec.proxy.tls.caSecret"' in e for e in errors), errors


def test_defaults_add_nothing_for_tls_and_leave_the_mode_to_the_operator() -> None:
    """No schema default for mode: its default depends on secretName, which OpenAPI cannot say."""
    defaulted = crdschema.apply_defaults("RocketMQCluster", cr(TLS_ON))["spec"]["proxy"]
    assert defaulted["tls"] == {"secretName": SECRET}
    assert "tls" not in crdschema.apply_defaults("RocketMQCluster", cr({"proxy": {"enabled": True}}))["spec"]["proxy"]


@pytest.mark.parametrize(("raw", "expected"), [
    ({"mode": "permissive", "secretName": SECRET}, "spec.proxy.tls.mode: permissive is refused"),
    ({"mode": "enforcing"}, "spec.proxy.tls.secretName: is required with mode enforcing"),
    ({"mode": "on", "secretName": SECRET}, "spec.proxy.tls.mode: must be one of disabled, enforcing"),
    ({"secretName": ""}, "spec.proxy.tls.secretName: must be a non-empty string"),
])
def test_the_operators_own_tls_checks_name_the_field(raw: dict[str, Any], expected: str) -> None:
    errors = specs.parse_cluster_spec({"proxy": {"enabled": True, "tls": raw}}, "demo").errors
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize("key", sorted(specs.TLS_KEYS))
def test_tls_keys_in_proxy_config_point_at_spec_proxy_tls(key: str) -> None:
    assert key in specs.PROXY_OPERATOR_KEYS
    errors = specs.parse_cluster_spec({"proxy": {"config": {key: "x"}}}, "demo").errors
    assert errors == (f"spec.proxy.config.{key}: the operator sets the TLS keys from spec.proxy.tls "
                      "(secretName, mode)",)


# ---- the Secret ---------------------------------------------------------------------------------


def test_a_usable_secrets_digest_follows_its_pair_only() -> None:
    data = secret_data()
    digest = proxytls.check(secret(data), SECRET)
    assert isinstance(digest, str)
    relabelled = {**secret(data), "metadata": {"name": SECRET, "labels": {"renewed": "no"}}}
    assert proxytls.check(relabelled, SECRET) == digest
    assert proxytls.check(secret({**data, "ca.crt": data["tls.crt"]}), SECRET) == digest
    assert proxytls.check(secret(secret_data()), SECRET) != digest, "a renewed pair is a new digest"


def test_unusable_secrets_are_named_with_their_problem() -> None:
    one, other = secret_data(), secret_data()
    cases = [
        (None, proxytls.NOT_FOUND, f"Secret {SECRET} does not exist"),
        (secret({"tls.crt": one["tls.crt"]}), proxytls.INVALID, "lacks tls.key"),
        (secret({}), proxytls.INVALID, "lacks tls.crt and tls.key"),
        (secret({**one, "tls.key": "not base64!"}), proxytls.INVALID, "rocketq proxy would refuse"),
        (secret({**one, "tls.crt": base64.b64encode(b"hello").decode()}), proxytls.INVALID,
         f"Secret {SECRET} tls.crt: not a PEM certificate"),
        (secret({**one, "tls.key": other["tls.key"]}), proxytls.INVALID,
         f"Secret {SECRET} tls.key is not the private key of Secret {SECRET} tls.crt"),
    ]
    for body, reason, message in cases:
        found = proxytls.check(body, SECRET)
        assert isinstance(found, proxytls.Unusable), body
        assert found.reason == reason and message in found.message, found


class RefusingApi:
    """An API server that refuses the operator's GET of Secrets, as one without the chart's RBAC."""

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        raise kubeapi.Forbidden(f'secrets "{name}" is forbidden', 403)


async def test_a_secret_the_operator_may_not_read_is_a_condition_not_a_failed_pass() -> None:
    found = await proxytls.inspect(RefusingApi(), NAMESPACE, SECRET)
    assert isinstance(found, proxytls.Unusable) and found.reason == proxytls.FORBIDDEN
    assert "grant get on secrets" in found.message


# ---- rendering ----------------------------------------------------------------------------------


def test_rmq_proxy_json_points_the_tls_keys_at_the_mounted_secret(tmp_path: pathlib.Path) -> None:
    text = rendering.render_proxy_configmap(cluster_of(TLS_ON))["data"]["rmq-proxy.json"]
    assert json.loads(text) == {"rocketMQClusterName": "demo", "grpcServerPort": 8081, "metricsPort": 5557,
                                "tls.server.mode": "enforcing",
                                "tlsTestModeEnable": False, "tlsCertPath": "/etc/rocketq-tls/tls.crt",
                                "tlsKeyPath": "/etc/rocketq-tls/tls.key"}
    (tmp_path / "rmq-proxy.json").write_text(text)
    settings, _, unknown = proxy_settings.load(proxy_settings.read_json(tmp_path / "rmq-proxy.json"),
                                               {"namesrvAddr": "ns:9876"})
    assert settings.tls_enabled and not settings.tls_test_mode_enable and unknown == []


def test_the_tls_deployment_mounts_the_secret_carries_its_digest_and_probes_without_grpc() -> None:
    cluster = cluster_of({"proxy": {"enabled": True, "grpcPort": 18081, "tls": {"secretName": SECRET}}})
    template = rendering.render_proxy_deployment(cluster, DIGEST)["spec"]["template"]
    (container,) = template["spec"]["containers"]
    assert template["metadata"]["annotations"] == {
        "rocketq.io/config-hash": common.digest(rendering.render_proxy_config_text(cluster)),
        "rocketq.io/tls-hash": DIGEST, **common.metrics_annotations(cluster.spec.metrics_enabled)}
    assert template["spec"]["volumes"][1] == {"name": "tls", "secret": {
        "secretName": SECRET, "defaultMode": 0o440,
        "items": [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]}}
    assert container["volumeMounts"] == [{"name": "config", "mountPath": "/etc/rocketq", "readOnly": True},
                                         {"name": "tls", "mountPath": "/etc/rocketq-tls", "readOnly": True}]
    assert container["startupProbe"] == {"tcpSocket": {"port": 18081}, "periodSeconds": 2, "timeoutSeconds": 2,
                                         "failureThreshold": 30}
    assert container["readinessProbe"] == {"tcpSocket": {"port": 18081}, "periodSeconds": 5, "timeoutSeconds": 3,
                                           "failureThreshold": 3}
    assert container["livenessProbe"] == {
        "exec": {"command": ["python", "-m", "rocketq.cli.proxy", "health", "--port", "18081", "--tls",
                             "--timeout", "5"]},
        "periodSeconds": 20, "timeoutSeconds": 10, "failureThreshold": 3}
    assert container["command"] == ["rocketq", "proxy", "-c", "/etc/rocketq/rmq-proxy.json"]


def test_the_liveness_exec_command_runs_as_rendered(tmp_path: pathlib.Path) -> None:
    """``python -m rocketq.cli.proxy health ...`` parses and asks (here a closed port: exit 1)."""
    command = rendering.health_command(free_port())
    assert command[0] == "python"  # the rocketq image is python:3.11-slim's, where python is on PATH
    done = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1 and "not serving: no TLS handshake" in done.stderr, done.stderr


def test_a_plaintext_proxy_renders_as_before_even_with_a_secret_named() -> None:
    plain = rendering.render_proxy_deployment(cluster_of({"proxy": {"enabled": True}}))
    disabled = cluster_of({"proxy": {"enabled": True, "tls": {"secretName": SECRET, "mode": "disabled"}}})
    assert rendering.render_proxy_deployment(disabled) == plain
    assert plain["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["grpc"] == {"port": 8081}


def test_a_tls_deployment_cannot_be_rendered_without_the_secrets_digest() -> None:
    with pytest.raises(ValueError, match="needs its Secret's name and digest"):
        rendering.render_proxy_deployment(cluster_of(TLS_ON))


def test_the_tls_objects_are_valid_kubernetes() -> None:
    cluster = cluster_of({"proxy": {"enabled": True, "replicas": 3, "tls": {"secretName": SECRET}}})
    for obj in (rendering.render_proxy_configmap(cluster), rendering.render_proxy_deployment(cluster, DIGEST),
                rendering.render_proxy_service(cluster), secret(secret_data())):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


# ---- against the emulator -----------------------------------------------------------------------


def proxy_reason(env: OperatorEnv) -> str | None:
    found = env.condition("RocketMQCluster", "demo", "ProxyReady")
    return found["reason"] if found else None


def tls_hash(env: OperatorEnv) -> str | None:
    live = env.get("Deployment", "demo-proxy")
    return live["spec"]["template"]["metadata"]["annotations"].get(rendering.ANNOTATION_TLS_HASH) if live else None


def stored_secret(env: OperatorEnv) -> dict[str, Any] | None:
    for (resource, namespace, name), obj in env.server.objects.items():
        if resource.plural == "secrets" and (namespace, name) == (NAMESPACE, SECRET) and not obj.deleted:
            return dict(obj.raw)
    return None


async def put_secret(env: OperatorEnv, data: dict[str, str]) -> None:
    if stored_secret(env) is None:
        response = await env.server.post(SECRETS_PATH, json=secret(data))
    else:
        response = await env.server.patch(f"{SECRETS_PATH}/{SECRET}", json={"data": data})
    assert response.status < 300, await response.text()


async def test_a_missing_secret_is_a_condition_until_it_appears(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", TLS_ON)
    await env.wait_for(lambda: proxy_reason(env) == proxytls.NOT_FOUND, "ProxyReady=False, TLSSecretNotFound")
    found = env.condition("RocketMQCluster", "demo", "ProxyReady")
    assert found is not None and found["status"] == "False" and f"Secret {SECRET} does not exist" in found["message"]
    assert env.get("Deployment", "demo-proxy") is None, "no pod that would wait for a Secret"
    assert env.status("RocketMQCluster", "demo")["proxy"]["ready"] == "0/2"
    await env.wait_for(lambda: env.status("RocketMQCluster", "demo").get("phase") == "Running",
                       "the cluster runs regardless")

    await put_secret(env, secret_data())
    await env.wait_for(lambda: proxy_reason(env) == "Ready", "ProxyReady=True once the Secret exists")
    live = env.get("Deployment", "demo-proxy")
    assert live is not None
    assert live["spec"]["template"]["spec"]["volumes"][1]["secret"]["secretName"] == SECRET
    assert tls_hash(env) == proxytls.check(stored_secret(env), SECRET)
    configmap = env.get("ConfigMap", "demo-proxy-config")
    assert configmap is not None and json.loads(configmap["data"]["rmq-proxy.json"])["tls.server.mode"] == "enforcing"


async def test_a_rotated_secret_rolls_the_pods(env: OperatorEnv) -> None:
    await put_secret(env, secret_data())
    await env.create("RocketMQCluster", "demo", TLS_ON)
    await env.wait_for(lambda: proxy_reason(env) == "Ready", "ProxyReady=True")
    before = tls_hash(env)
    assert before is not None
    await put_secret(env, secret_data())  # renewed: a new key and certificate
    await env.wait_for(lambda: tls_hash(env) not in (None, before), "the pod template to carry the new digest")
    assert tls_hash(env) == proxytls.check(stored_secret(env), SECRET)
    await env.wait_for(lambda: len([r for r in env.sts.rollouts if r[0] == "demo-proxy"]) == 2,
                       "the Deployment to roll for the new certificate")
    await env.wait_for(lambda: proxy_reason(env) == "Ready", "ProxyReady=True after the roll")


async def test_a_broken_secret_leaves_the_running_proxy_alone(env: OperatorEnv) -> None:
    good = secret_data()
    await put_secret(env, good)
    await env.create("RocketMQCluster", "demo", TLS_ON)
    await env.wait_for(lambda: proxy_reason(env) == "Ready", "ProxyReady=True")
    before = env.get("Deployment", "demo-proxy")
    await put_secret(env, {"tls.crt": good["tls.crt"], "tls.key": secret_data()["tls.key"]})
    await env.wait_for(lambda: proxy_reason(env) == proxytls.INVALID, "ProxyReady=False, TLSSecretInvalid")
    found = env.condition("RocketMQCluster", "demo", "ProxyReady")
    assert found is not None and "is not the private key of" in found["message"]
    assert env.status("RocketMQCluster", "demo")["proxy"]["ready"] == "2/2", "the old pods still serve"
    after = env.get("Deployment", "demo-proxy")
    assert after is not None and before is not None
    assert after["spec"]["template"] == before["spec"]["template"], "pods that would crash-loop are not rolled in"


async def test_turning_tls_off_goes_back_to_grpc_probes_and_no_secret_is_read(env: OperatorEnv) -> None:
    await put_secret(env, secret_data())
    await env.create("RocketMQCluster", "demo", TLS_ON)
    await env.wait_for(lambda: proxy_reason(env) == "Ready", "ProxyReady=True")
    await env.patch("RocketMQCluster", "demo", {"spec": {"proxy": {"tls": {"mode": "disabled"}}}})
    await env.wait_for(lambda: tls_hash(env) is None, "the plaintext template")
    live = env.get("Deployment", "demo-proxy")
    assert live is not None
    (container,) = live["spec"]["template"]["spec"]["containers"]
    assert container["livenessProbe"]["grpc"] == {"port": 8081}
    assert [v["name"] for v in live["spec"]["template"]["spec"]["volumes"]] == ["config"]
    reads = secret_reads(env)
    await asyncio.sleep(PASSES_WAIT_S)  # several reconcile passes (every 0.2 s here)
    assert secret_reads(env) == reads, "a plaintext proxy's passes do not read the Secret"


def secret_reads(env: OperatorEnv) -> int:
    return sum(1 for request in env.server
               if request.method == "GET" and request.url.path == f"{SECRETS_PATH}/{SECRET}")

"""The chart's proxy with TLS (``exampleCluster.spec.proxy.tls``), rendered by the real Helm
engine: the values schema, the RocketMQCluster it makes (valid for the CRD, parsed by the
operator), the proxy objects the operator renders from it (valid Kubernetes), and the notes."""

from __future__ import annotations

import base64
from typing import Any

import crdschema
import helm_python as helm
import kubernetes_validate
import pytest
from test_chart import CHART, K8S_VERSIONS, NAMESPACE, objects, one, render

SECRET = "edge-proxy-tls"
TLS_VALUES: dict[str, Any] = {"exampleCluster": {"enabled": True, "name": "edge", "spec": {"proxy": {
    "enabled": True, "grpcPort": 18081, "tls": {"secretName": SECRET}}}}}


def with_tls(tls: dict[str, Any]) -> dict[str, Any]:
    return {"exampleCluster": {"enabled": True, "name": "edge", "spec": {"proxy": {"enabled": True, "tls": tls}}}}


def notes(values: dict[str, Any]) -> str:
    return next(text for template, text in render(values).items() if template.endswith("NOTES.txt"))


def test_lint_is_clean_with_proxy_tls() -> None:
    report = helm.lint(CHART, TLS_VALUES, strict=True, namespace=NAMESPACE, kube_version="v1.30.0")
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == [], report


def test_the_tls_cluster_is_valid_and_what_the_operator_renders_from_it_is_valid_kubernetes() -> None:
    specs = pytest.importorskip("rocketq_operator.spec")
    from rocketq_operator import proxytls
    from rocketq_operator.rendering import proxy as rendering

    from rocketq.proxy import tls

    cr = one(objects(render(TLS_VALUES)), "RocketMQCluster")
    assert cr["spec"]["proxy"]["tls"] == {"secretName": SECRET}
    assert crdschema.validate("RocketMQCluster", cr) == []
    parsed = specs.parse_cluster_spec(crdschema.apply_defaults("RocketMQCluster", cr)["spec"], "edge")
    assert parsed.spec is not None, parsed.errors
    assert parsed.spec.proxy.tls == specs.ProxyTlsSpec(SECRET, specs.ProxyTlsMode.ENFORCING)
    cluster = specs.Cluster(specs.ClusterMeta("edge", NAMESPACE, "uid-1", 1), parsed.spec)
    pair = tls.self_signed((f"edge-proxy.{NAMESPACE}.svc",))
    digest = proxytls.check({"data": {"tls.crt": base64.b64encode(pair.cert_pem).decode(),
                                      "tls.key": base64.b64encode(pair.key_pem).decode()}}, SECRET)
    assert isinstance(digest, str)
    deployment = rendering.render_proxy_deployment(cluster, digest)
    assert deployment["spec"]["template"]["spec"]["volumes"][1]["secret"]["secretName"] == SECRET
    for obj in (rendering.render_proxy_configmap(cluster), deployment, rendering.render_proxy_service(cluster)):
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)


def test_the_notes_say_the_proxy_serves_tls_and_which_secret() -> None:
    text = notes(TLS_VALUES)
    assert f"edge-proxy.{NAMESPACE}.svc:18081" in text
    assert f"It serves TLS only, with Secret {NAMESPACE}/{SECRET}" in text
    assert "TLS" not in notes(with_tls({"secretName": SECRET, "mode": "disabled"}))
    assert "TLS" not in notes(with_tls({}))


@pytest.mark.parametrize(("tls", "field"), [
    ({"secretName": SECRET, "mode": "permissive"}, "mode"),
    ({"mode": "enforcing"}, "secretName"),
    ({"secretName": "Edge_TLS"}, "secretName"),
    ({"secretName": SECRET, "caSecret": "ca"}, "caSecret"),
])
def test_values_schema_rejects_bad_proxy_tls(tls: dict[str, Any], field: str) -> None:
    with helm.Chart.load(CHART) as chart, pytest.raises(helm.HelmValuesError) as caught:
        chart.validate_schema(chart.merge_values(with_tls(tls)))
    assert field in str(caught.value)


@pytest.mark.parametrize("tls", [{"secretName": SECRET}, {"secretName": SECRET, "mode": "enforcing"},
                                 {"mode": "disabled"}, {}])
def test_values_schema_and_the_crd_accept_good_proxy_tls(tls: dict[str, Any]) -> None:
    with helm.Chart.load(CHART) as chart:
        chart.validate_schema(chart.merge_values(with_tls(tls)))
    assert crdschema.validate("RocketMQCluster", one(objects(render(with_tls(tls))), "RocketMQCluster")) == []

"""The Helm chart, rendered and linted by the real Helm engine (helm-python-sdk, no cluster).

Every rendered object of a built-in kind is checked against the Kubernetes OpenAPI schemas of
several versions (kubernetes-validate, strict: unknown fields are errors). The chart's custom
kinds are checked where a schema exists here: RocketMQCluster against crds/ (crdschema), the
monitoring.coreos.com kinds by the fields Prometheus Operator needs.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Iterator
from typing import Any

import crdschema
import helm_python as helm
import kubernetes_validate
import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "rocketq"
RELEASE, NAMESPACE = "rq", "rocketq-system"
FULLNAME = "rq-rocketq"
K8S_VERSIONS = ("1.30.0", "1.37.0")
# Kinds kubernetes-validate has no schema for; checked by their own tests below.
CUSTOM_API_GROUPS = ("monitoring.coreos.com/", "rocketq.io/")

# Two users-file lines as `rocketq console --add-user` writes them (argon2id, password "password1").
USERS = ("alice:admin:$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE\n"
         "bob:read-only:$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$YmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmI\n")

VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "watch-namespaces": {"operator": {"watchNamespaces": ["mq-a", "mq-b"], "peering": {"enabled": True}}},
    "cluster-peering": {"operator": {"peering": {"enabled": True, "name": "rocketq-ha"}}},
    "monitoring": {
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
            "podMonitor": {"enabled": True, "interval": "15s"},
            "prometheusRule": {"enabled": True, "consumerLagThreshold": 5000, "diskUsedRatio": 0.9,
                               "dledgerLagEntries": 2000},
            "grafanaDashboard": {"enabled": True, "namespace": "grafana"},
        }
    },
    "example-cluster": {
        "exampleCluster": {
            "enabled": True,
            "name": "demo",
            "spec": {"brokers": {"groups": 2, "mode": "DLedger", "replicasPerGroup": 3}},
        }
    },
    "example-cluster-proxy": {
        "exampleCluster": {
            "enabled": True,
            "name": "edge",
            "spec": {"proxy": {"enabled": True, "replicas": 3, "grpcPort": 18081,
                               "service": {"type": "LoadBalancer",
                                           "annotations": {"lb.example.com/scheme": "internal"}},
                               "config": {"maxMessageSize": "1048576"}}},
        }
    },
    "custom-image-and-sa": {
        "image": {"repository": "registry.example.com/rq/operator", "digest": "sha256:" + "a" * 64},
        "imagePullSecrets": [{"name": "regcred"}],
        "serviceAccount": {"create": False, "name": "existing-sa"},
        "operator": {
            "logLevel": "debug",
            "logFormat": "plain",
            "env": [{"name": "EXTRA", "value": "1"}],
            "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "priorityClassName": "system-cluster-critical",
        },
    },
    "no-rbac": {"rbac": {"create": False}, "operator": {"logLevel": "warning"}},
    "console": {"console": {"enabled": True, "cluster": "demo", "clusterNamespace": "mq", "users": USERS}},
    "console-ingress": {"console": {
        "enabled": True, "namesrv": "ns-0:9876;ns-1:9876", "existingSecret": "console-users", "replicas": 2,
        "aclCredentialsSecret": "console-acl",
        "service": {"type": "NodePort", "port": 80},
        "ingress": {"enabled": True, "className": "nginx", "host": "mq.example.com", "tlsSecret": "mq-tls",
                    "annotations": {"nginx.ingress.kubernetes.io/affinity": "cookie"}}}},
}


def render(values: dict[str, Any] | None = None) -> dict[str, str]:
    with helm.Chart.load(CHART) as chart:
        return chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


def objects(rendered: dict[str, str]) -> list[dict[str, Any]]:
    found = []
    for template, text in sorted(rendered.items()):
        if template.endswith("NOTES.txt"):
            continue
        found += [doc for doc in yaml.safe_load_all(text) if doc]
    return found


def by_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = by_kind(objs, kind)
    return found


# ---- render, lint, validate every object -------------------------------------------------


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_lint_is_clean(values: dict[str, Any]) -> None:
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version="v1.30.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and problems == [], report


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_every_rendered_object_matches_the_kubernetes_schemas(values: dict[str, Any]) -> None:
    rendered = objects(render(values))
    assert rendered
    for obj in rendered:
        if obj["apiVersion"].startswith(CUSTOM_API_GROUPS):
            continue
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_namespaced_objects_carry_a_namespace_and_labels(values: dict[str, Any]) -> None:
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding"}
    for obj in objects(render(values)):
        meta = obj["metadata"]
        assert ("namespace" in meta) == (obj["kind"] not in cluster_scoped), obj["kind"]
        assert meta["labels"]["app.kubernetes.io/instance"] == RELEASE
        assert meta["labels"]["app.kubernetes.io/part-of"] == "rocketq"


def test_default_install_renders_only_the_operator() -> None:
    kinds = sorted(o["kind"] for o in objects(render()))
    assert kinds == [
        "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding",
        "Deployment", "Service", "ServiceAccount",
    ]


# ---- CRDs ---------------------------------------------------------------------------------


def test_chart_crds_are_byte_identical_to_the_repository_crds() -> None:
    """crds/ is the source; refresh the chart with `cp crds/*.yaml charts/rocketq/crds/`."""
    source = {p.name: p.read_bytes() for p in (REPO / "crds").glob("*.yaml")}
    shipped = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*.yaml")}
    assert source.keys() == shipped.keys()
    for name in source:
        assert shipped[name] == source[name], f"charts/rocketq/crds/{name} differs from crds/{name}"


def test_helm_loads_the_crds_and_they_match_the_kubernetes_schema() -> None:
    with helm.Chart.load(CHART) as chart:
        crds = chart.crds
    expected = sorted(f"rocketq/crds/{p.name}" for p in (REPO / "crds").glob("*.yaml"))
    assert sorted(c["filename"] for c in crds) == expected
    for crd in crds:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(yaml.safe_load(crd["data"]), version, strict=True)


# ---- the operator Deployment --------------------------------------------------------------


def container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return found


def test_operator_deployment_runs_kopf_hardened_and_probed() -> None:
    objs = objects(render())
    deployment = one(objs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    main = container(objs)
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert main["image"] == "rocketq/rocketq-operator:0.1.0"
    assert main["command"] == ["kopf", "run", "-m", "rocketq_operator.main"]
    assert main["args"] == [
        "--all-namespaces", "--standalone", "--liveness=http://0.0.0.0:8080/healthz", "--log-format=json",
    ]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert main[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert {p["name"]: p["containerPort"] for p in main["ports"]} == {"health": 8080, "metrics": 9090}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert main["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert main["resources"]["requests"] == {"cpu": "50m", "memory": "128Mi"}
    assert pod["serviceAccountName"] == FULLNAME


def test_watch_namespaces_and_peering_become_kopf_arguments() -> None:
    main = container(objects(render(VALUE_SETS["watch-namespaces"])))
    assert main["args"][:3] == ["--namespace=mq-a", "--namespace=mq-b", "--peering=rocketq"]
    assert "--all-namespaces" not in main["args"] and "--standalone" not in main["args"]


def test_log_level_and_image_digest() -> None:
    objs = objects(render(VALUE_SETS["custom-image-and-sa"]))
    main = container(objs)
    assert main["image"] == "registry.example.com/rq/operator@sha256:" + "a" * 64
    assert "--verbose" in main["args"] and "--log-format=plain" in main["args"]
    assert {"name": "EXTRA", "value": "1"} in main["env"]
    assert one(objs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "existing-sa"
    assert by_kind(objs, "ServiceAccount") == []
    assert "--quiet" in container(objects(render(VALUE_SETS["no-rbac"])))["args"]


def test_same_health_and_metrics_port_is_refused() -> None:
    with pytest.raises(helm.HelmRenderError, match="must differ"):
        render({"operator": {"healthPort": 9000, "metricsPort": 9000}})


# ---- RBAC: least privilege ----------------------------------------------------------------

WORKLOAD_RULES = {
    ("rocketq.io", "rocketmqclusters"): {"get", "list", "watch", "patch"},
    ("rocketq.io", "rocketmqtopics"): {"get", "list", "watch", "patch"},
    ("rocketq.io", "rocketmqconsumergroups"): {"get", "list", "watch", "patch"},
    ("rocketq.io", "rocketmqclusters/status"): {"get", "patch"},
    ("rocketq.io", "rocketmqtopics/status"): {"get", "patch"},
    ("rocketq.io", "rocketmqconsumergroups/status"): {"get", "patch"},
    ("apps", "statefulsets"): {"get", "list", "watch", "create", "patch", "delete"},
    ("policy", "poddisruptionbudgets"): {"get", "list", "watch", "create", "patch", "delete"},
    ("apps", "deployments"): {"get", "create", "patch", "delete"},
    ("sparkoperator.k8s.io", "scheduledsparkapplications"): {"get", "create", "patch", "delete"},
    ("", "serviceaccounts"): {"get", "create", "patch", "delete"},
    ("rbac.authorization.k8s.io", "roles"): {"get", "create", "patch", "delete"},
    ("rbac.authorization.k8s.io", "rolebindings"): {"get", "create", "patch", "delete"},
    # what the Spark drivers' Role grants, which the operator must hold to create that Role
    **{("", plural): {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
       for plural in ("pods", "services", "configmaps", "persistentvolumeclaims")},
    ("", "events"): {"create", "patch"},
    ("events.k8s.io", "events"): {"create", "patch"},
    # spec.console (its Deployment is granted above, with spec.proxy's)
    ("networking.k8s.io", "ingresses"): {"get", "create", "patch", "delete"},
    # spec.proxy.tls: the proxy's TLS Secret, read only
    ("", "secrets"): {"get"},
}


def test_workload_rules_cover_only_kinds_the_operator_can_address() -> None:
    """A grant for a kind the operator's API table lacks is a grant nothing uses."""
    kubeapi = pytest.importorskip("rocketq_operator.kubeapi")
    addressable = {(kind.api_version.rpartition("/")[0], kind.plural) for kind in kubeapi.KINDS.values()}
    addressable |= {(group, f"{plural}/status") for group, plural in addressable if group == "rocketq.io"}
    addressable |= {("", "events"), ("events.k8s.io", "events")}  # kopf posts the Events
    assert set(WORKLOAD_RULES) <= addressable


def test_the_operator_holds_what_the_spark_drivers_role_grants() -> None:
    """The API server refuses to let the operator create a Role granting more than it holds."""
    manifests = pytest.importorskip("rocketq_spark.manifests")
    held = grants(named(objects(render()), "ClusterRole", FULLNAME)["rules"])
    for (group, resource), verbs in grants(manifests.POD_RULES).items():
        assert verbs <= held.get((group, resource), set()), (group, resource)


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    table: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                table.setdefault((group, resource), set()).update(rule["verbs"])
    return table


def named(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in by_kind(objs, kind) if o["metadata"]["name"] == name]
    return found


def test_cluster_wide_rbac_is_exactly_what_the_operator_uses() -> None:
    objs = objects(render())
    assert grants(named(objs, "ClusterRole", FULLNAME)["rules"]) == WORKLOAD_RULES
    assert grants(named(objs, "ClusterRole", f"{FULLNAME}-discovery")["rules"]) == {
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},
    }
    for binding in by_kind(objs, "ClusterRoleBinding"):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULLNAME, "namespace": NAMESPACE}]
        assert binding["roleRef"]["name"] == binding["metadata"]["name"]


def test_cluster_peering_adds_only_cluster_peerings() -> None:
    objs = objects(render(VALUE_SETS["cluster-peering"]))
    discovery = grants(named(objs, "ClusterRole", f"{FULLNAME}-discovery")["rules"])
    assert discovery[("kopf.dev", "clusterkopfpeerings")] == {"get", "list", "watch", "patch"}
    assert grants(named(objs, "ClusterRole", FULLNAME)["rules"]) == WORKLOAD_RULES
    assert "--peering=rocketq-ha" in container(objs)["args"]


def test_watch_namespaces_use_a_role_per_namespace() -> None:
    objs = objects(render(VALUE_SETS["watch-namespaces"]))
    roles = by_kind(objs, "Role")
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["mq-a", "mq-b"]
    peering = {("kopf.dev", "kopfpeerings"): {"get", "list", "watch", "patch"}}
    for role in roles:
        assert grants(role["rules"]) == {**WORKLOAD_RULES, **peering}
    bindings = by_kind(objs, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["mq-a", "mq-b"]
    assert all(b["subjects"][0]["namespace"] == NAMESPACE for b in bindings)
    # Only discovery stays cluster-wide.
    (cluster_role,) = by_kind(objs, "ClusterRole")
    assert grants(cluster_role["rules"]) == {
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},
        ("", "namespaces"): {"list", "watch"},
    }


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_no_wildcards_and_secrets_only_read_by_name(values: dict[str, Any]) -> None:
    """Secrets: get only (the proxy's TLS Secret, named in the spec), never list, watch or write."""
    for obj in objects(render(values)):
        for rule in obj.get("rules", []):
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
            if "secrets" in rule["resources"]:
                assert (rule["resources"], rule["verbs"]) == (["secrets"], ["get"]), rule


def test_rbac_can_be_left_to_the_installer() -> None:
    kinds = {o["kind"] for o in objects(render(VALUE_SETS["no-rbac"]))}
    assert kinds.isdisjoint({"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"})


# ---- monitoring ---------------------------------------------------------------------------


def monitoring_objects() -> list[dict[str, Any]]:
    return objects(render(VALUE_SETS["monitoring"]))


def test_service_monitor_selects_the_operator_metrics_service() -> None:
    objs = monitoring_objects()
    monitor, service = one(objs, "ServiceMonitor"), one(objs, "Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prom"
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    # The operator's namespace/pod labels name the cluster's objects, not the operator's own.
    assert monitor["spec"]["endpoints"][0]["honorLabels"] is True


@pytest.mark.parametrize("ports", [{}, {"healthPort": 8181, "metricsPort": 9191}])
def test_probes_and_scrapes_reach_the_endpoints_the_operator_serves(ports: dict[str, int]) -> None:
    """kopf's --liveness binds the health port, the operator's /metrics the port its environment
    names; the probes, the Service and so the ServiceMonitor must each reach the right one."""
    objs = objects(render({**VALUE_SETS["monitoring"], "operator": ports}))
    main = container(objs)
    by_name = {p["name"]: p["containerPort"] for p in main["ports"]}
    (liveness,) = [a for a in main["args"] if a.startswith("--liveness=")]
    assert liveness == f"--liveness=http://0.0.0.0:{by_name['health']}/healthz"
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert env["ROCKETQ_OPERATOR_METRICS_PORT"] == str(by_name["metrics"])
    assert by_name["health"] != by_name["metrics"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert main[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    (service_port,) = one(objs, "Service")["spec"]["ports"]
    assert service_port["targetPort"] == "metrics"
    assert one(objs, "ServiceMonitor")["spec"]["endpoints"][0]["port"] == service_port["name"]


def test_pod_monitor_scrapes_rocketq_pods_and_labels_the_series() -> None:
    monitor = one(monitoring_objects(), "PodMonitor")
    assert monitor["spec"]["selector"] == {"matchExpressions": [{"key": "rocketq.io/cluster", "operator": "Exists"}]}
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert (endpoint["port"], endpoint["path"], endpoint["interval"]) == ("metrics", "/metrics", "15s")
    targets = {r["targetLabel"] for r in endpoint["relabelings"]}
    assert targets == {"rocketq_cluster", "component", "broker_group", "namespace", "pod"}
    watched = objects(render({"operator": {"watchNamespaces": ["mq-a"]}, "metrics": {"podMonitor": {"enabled": True}}}))
    assert one(watched, "PodMonitor")["spec"]["namespaceSelector"] == {"matchNames": ["mq-a"]}


def test_prometheus_rule_alerts() -> None:
    rule = one(monitoring_objects(), "PrometheusRule")
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    assert set(alerts) == {
        "RocketQBrokerDown", "RocketQNameServerDown", "RocketQProxyDown", "RocketQBrokerGroupNoMaster",
        "RocketQBrokerDiskAlmostFull", "RocketQConsumerLagGrowing", "RocketQConsumerQueuesStuck",
        "RocketQDLedgerGroupNoLeader", "RocketQDLedgerMemberLagging",
    }
    for alert in alerts.values():
        assert alert["labels"]["severity"] in {"warning", "critical"}
        assert re.fullmatch(r"[0-9]+m", alert["for"])
        assert alert["annotations"]["summary"] and alert["annotations"]["description"]
        # Prometheus's own templates must survive Helm's templating untouched.
        assert "{{ $labels." in alert["annotations"]["summary"] or "{{ $value" in alert["annotations"]["summary"]
        assert balanced(alert["expr"]), alert["expr"]
    assert "rocketmq_group_diff) > 5000" in alerts["RocketQConsumerLagGrowing"]["expr"]
    assert "deriv(rocketmq_group_diff[15m])" in alerts["RocketQConsumerLagGrowing"]["expr"]
    assert alerts["RocketQBrokerDiskAlmostFull"]["expr"] == "rocketmq_brokeruntime_commitlog_disk_ratio > 0.9"
    assert "rocketmq_broker_is_master" in alerts["RocketQBrokerGroupNoMaster"]["expr"]
    assert alerts["RocketQBrokerDown"]["expr"] == 'up{component="broker", rocketq_cluster!=""} == 0'
    assert alerts["RocketQDLedgerGroupNoLeader"]["expr"] == (
        "max by (namespace, cluster, broker_group) (rocketq_operator_dledger_has_leader) == 0")
    assert alerts["RocketQDLedgerMemberLagging"]["expr"] == (
        "max by (namespace, cluster, broker_group, pod) (rocketq_operator_dledger_member_lag_entries) > 2000")


def balanced(expr: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    closing = {")": "(", "}": "{", "]": "["}
    for char in expr:
        if char in depth:
            depth[char] += 1
        elif char in closing:
            depth[closing[char]] -= 1
            if depth[closing[char]] < 0:
                return False
    return all(v == 0 for v in depth.values())


# ---- the Grafana dashboard ----------------------------------------------------------------

REQUIRED_METRICS = {
    "rocketmq_producer_tps", "rocketmq_consumer_tps", "rocketmq_group_diff", "rocketmq_consumer_lag_messages",
    "rocketmq_broker_tps", "rocketmq_brokeruntime_put_latency_99", "rocketmq_brokeruntime_commitlog_disk_ratio",
}


def dashboard_panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def test_dashboard_configmap_holds_a_real_dashboard() -> None:
    config_map = one(monitoring_objects(), "ConfigMap")
    assert config_map["metadata"]["namespace"] == "grafana"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(config_map["data"]["rocketq-overview.json"])
    assert dashboard == json.loads((CHART / "dashboards" / "rocketq-overview.json").read_text())
    assert dashboard["uid"] == "rocketq-overview"
    queries = [t["expr"] for p in dashboard_panels(dashboard) for t in p.get("targets", [])]
    used = {name for q in queries for name in re.findall(r"\b(rocketmq_[a-z0-9_]+)\b", q)}
    assert used >= REQUIRED_METRICS
    assert all(balanced(q) for q in queries)
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "namespace", "cluster", "broker", "topic", "group"}
    for q in queries:
        assert "$cluster" in q and "$namespace" in q, q


def test_dashboard_panels_do_not_overlap_and_have_unique_ids() -> None:
    dashboard = json.loads((CHART / "dashboards" / "rocketq-overview.json").read_text())
    panels = list(dashboard_panels(dashboard))
    assert len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24
        mine = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert cells.isdisjoint(mine), panel["title"]
        cells |= mine


# ---- the example cluster ------------------------------------------------------------------


def test_example_cluster_is_a_valid_rocketmqcluster() -> None:
    cluster = one(objects(render(VALUE_SETS["example-cluster"])), "RocketMQCluster")
    assert cluster["metadata"] == {**cluster["metadata"], "name": "demo", "namespace": NAMESPACE}
    assert crdschema.validate("RocketMQCluster", cluster) == []
    assert cluster["spec"]["brokers"] == {"groups": 2, "mode": "DLedger", "replicasPerGroup": 3}


def test_example_cluster_proxy_is_a_valid_cr_whose_operator_objects_are_valid_kubernetes() -> None:
    """The chart passes spec.proxy through; what the operator renders from that CR is valid for
    every Kubernetes version the chart is checked against."""
    specs = pytest.importorskip("rocketq_operator.spec")
    from rocketq_operator.rendering import pdb
    from rocketq_operator.rendering import proxy as rendering

    rendered = render(VALUE_SETS["example-cluster-proxy"])
    cr = one(objects(rendered), "RocketMQCluster")
    assert crdschema.validate("RocketMQCluster", cr) == []
    defaulted = crdschema.apply_defaults("RocketMQCluster", cr)
    parsed = specs.parse_cluster_spec(defaulted["spec"], cr["metadata"]["name"])
    assert parsed.spec is not None, parsed.errors
    cluster = specs.Cluster(specs.ClusterMeta("edge", NAMESPACE, "uid-1", 1), parsed.spec)
    assert cluster.spec.proxy.enabled and cluster.spec.proxy.replicas == 3
    for obj in (rendering.render_proxy_configmap(cluster), rendering.render_proxy_deployment(cluster),
                rendering.render_proxy_service(cluster), pdb.render_proxy_pdb(cluster)):
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)
    notes = next(text for template, text in rendered.items() if template.endswith("NOTES.txt"))
    assert f"edge-proxy.{NAMESPACE}.svc:18081" in notes
    plain = render({"exampleCluster": {"enabled": True}})
    assert "proxy" not in next(text for template, text in plain.items() if template.endswith("NOTES.txt"))


def test_default_example_cluster_values_are_a_valid_rocketmqcluster() -> None:
    cluster = one(objects(render({"exampleCluster": {"enabled": True}})), "RocketMQCluster")
    assert crdschema.validate("RocketMQCluster", cluster) == []
    assert cluster["spec"]["storage"]["type"] == "EmptyDir"


# ---- values.schema.json rejects bad values ------------------------------------------------

BAD_VALUES = [
    ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
    ({"image": {"digest": "sha256:xyz"}}, "digest"),
    ({"image": {"repository": ""}}, "repository"),
    ({"operator": {"logLevel": "trace"}}, "logLevel"),
    ({"operator": {"logFormat": "xml"}}, "logFormat"),
    ({"operator": {"watchNamespaces": ["Bad_NS"]}}, "watchNamespaces"),
    ({"operator": {"watchNamespaces": ["a", "a"]}}, "watchNamespaces"),
    ({"operator": {"healthPort": 0}}, "healthPort"),
    ({"operator": {"metricsPort": 70000}}, "metricsPort"),
    ({"operator": {"resources": {"limits": {"memory": "lots"}}}}, "memory"),
    ({"operator": {"peering": {"enabled": "yes"}}}, "enabled"),
    ({"replicaCount": 2}, "replicaCount"),
    ({"operator": {"replicas": 2}}, "replicas"),
    ({"metrics": {"prometheusRule": {"diskUsedRatio": 1.5}}}, "diskUsedRatio"),
    ({"metrics": {"prometheusRule": {"consumerLagThreshold": 0}}}, "consumerLagThreshold"),
    ({"metrics": {"serviceMonitor": {"interval": "30 seconds"}}}, "interval"),
    ({"metrics": {"grafanaDashboard": {"labels": {"grafana_dashboard": 1}}}}, "grafana_dashboard"),
    ({"exampleCluster": {"name": "Demo"}}, "name"),
    ({"exampleCluster": {"spec": "groups=2"}}, "spec"),
    ({"exampleCluster": {"spec": {"brokers": {"mode": "DLedger", "replicasPerGroup": 2}}}}, "replicasPerGroup"),
    ({"exampleCluster": {"spec": {"brokers": {"mode": "DLedger"}}}}, "replicasPerGroup"),
    ({"exampleCluster": {"spec": {"brokers": {"mode": "Raft"}}}}, "mode"),
    ({"metrics": {"prometheusRule": {"dledgerLagEntries": 0}}}, "dledgerLagEntries"),
    ({"exampleCluster": {"spec": {"proxy": {"service": {"type": "NodePort"}}}}}, "type"),
    ({"exampleCluster": {"spec": {"proxy": {"replicas": 0}}}}, "replicas"),
    ({"exampleCluster": {"spec": {"proxy": {"config": {"maxMessageSize": 1024}}}}}, "maxMessageSize"),
    ({"serviceAccount": {"name": "Not Valid"}}, "name"),
    ({"rbac": {"create": "true"}}, "create"),
]


@pytest.mark.parametrize(("values", "field"), BAD_VALUES, ids=[f for _, f in BAD_VALUES])
def test_values_schema_rejects_bad_values(values: dict[str, Any], field: str) -> None:
    with helm.Chart.load(CHART) as chart:
        merged = chart.merge_values(values)
        with pytest.raises(helm.HelmValuesError) as caught:
            chart.validate_schema(merged)
    assert field in str(caught.value)
    with pytest.raises(helm.HelmError):
        render(values)


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_values_schema_accepts_the_documented_value_sets(values: dict[str, Any]) -> None:
    with helm.Chart.load(CHART) as chart:
        chart.validate_schema(chart.merge_values(values))


def test_notes_tell_how_to_reach_the_cluster() -> None:
    notes = render(VALUE_SETS["watch-namespaces"])["rocketq/templates/NOTES.txt"]
    assert "mq-a, mq-b" in notes and "namespace: mq-a" in notes
    assert "kubectl -n rocketq-system rollout status deployment/rq-rocketq" in notes


# ---- the chart speaks the operator's configuration language ------------------------------


def operator_env(values: dict[str, Any]) -> dict[str, str]:
    env = container(objects(render(values)))["env"]
    return {e["name"]: e["value"] for e in env if e["name"].startswith("ROCKETQ_OPERATOR_") and "value" in e}


def test_the_operators_acl_account_comes_from_a_secret() -> None:
    env = {e["name"]: e for e in container(objects(render({"operator": {"aclCredentialsSecret": "op-acl"}})))["env"]}
    for name, key in (("ROCKETQ_OPERATOR_ACCESS_KEY", "accessKey"), ("ROCKETQ_OPERATOR_SECRET_KEY", "secretKey")):
        assert env[name]["valueFrom"] == {"secretKeyRef": {"name": "op-acl", "key": key}}
    plain = {e["name"] for e in container(objects(render({})))["env"]}
    assert "ROCKETQ_OPERATOR_ACCESS_KEY" not in plain and "ROCKETQ_OPERATOR_SECRET_KEY" not in plain


def test_operator_settings_become_environment_variables() -> None:
    env = operator_env({"operator": {"settings": {"failoverGrace": 45.5, "readCacheTtl": 20},
                                     "peering": {"enabled": True}}})
    assert env == {
        "ROCKETQ_OPERATOR_METRICS_PORT": "9090",
        "ROCKETQ_OPERATOR_STANDALONE": "false",
        "ROCKETQ_OPERATOR_JSON_LOGS": "true",
        "ROCKETQ_OPERATOR_RECONCILE_INTERVAL": "15",
        "ROCKETQ_OPERATOR_ENTITY_INTERVAL": "60",
        "ROCKETQ_OPERATOR_FAILOVER_GRACE": "45.5",
        "ROCKETQ_OPERATOR_DRAIN_TIMEOUT": "600",
        "ROCKETQ_OPERATOR_READ_CACHE_TTL": "20",
    }
    assert operator_env({})["ROCKETQ_OPERATOR_READ_CACHE_TTL"] == "5"
    assert operator_env({"operator": {"logFormat": "plain"}})["ROCKETQ_OPERATOR_JSON_LOGS"] == "false"
    assert operator_env({})["ROCKETQ_OPERATOR_STANDALONE"] == "true"


@pytest.mark.parametrize("values", [{}, {"operator": {"peering": {"enabled": True}, "logFormat": "full",
                                                      "settings": {"drainTimeout": 1e6, "failoverGrace": 0.5,
                                                                   "readCacheTtl": 30}}}])
def test_the_operator_accepts_the_environment_the_chart_sets(values: dict[str, Any]) -> None:
    runtime = pytest.importorskip("rocketq_operator.runtime", reason="the operator's runtime module is not written yet")
    env = operator_env(values)
    config = runtime.OperatorConfig.from_env(env)
    fields = {f"ROCKETQ_OPERATOR_{name.upper()}" for name in runtime.OperatorConfig.__dataclass_fields__}
    assert env.keys() <= fields, f"variables the operator does not read: {sorted(env.keys() - fields)}"
    assert config.metrics_port == 9090
    assert config.standalone is not values.get("operator", {}).get("peering", {}).get("enabled", False)


def test_settings_schema() -> None:
    with helm.Chart.load(CHART) as chart:
        for bad in ({"failoverGrace": 0}, {"drainTimeout": "10m"}, {"retries": 3}, {"readCacheTtl": -1}):
            with pytest.raises(helm.HelmValuesError):
                chart.validate_schema(chart.merge_values({"operator": {"settings": bad}}))


# ---- the console ------------------------------------------------------------------------------


def test_the_chart_console_runs_what_the_operator_renders_for_spec_console() -> None:
    """One container contract: the chart's console container and the operator's (spec.console)
    agree on command, environment names, ports, probes, mounts and security."""
    rendering = pytest.importorskip("rocketq_operator.rendering.console")
    specs = pytest.importorskip("rocketq_operator.spec")
    def containers(values: dict[str, Any], console: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        deployment = named(objects(render(values)), "Deployment", f"{FULLNAME}-console")
        (chart,) = deployment["spec"]["template"]["spec"]["containers"]
        parsed = specs.parse_cluster_spec({"console": {"enabled": True, "usersSecret": "u", **console}}, "demo")
        assert parsed.spec is not None
        return chart, rendering.container(specs.Cluster(specs.ClusterMeta("demo", "mq", "uid", 1), parsed.spec))

    chart, operator = containers(VALUE_SETS["console"], {})
    for key in ("command", "env", "ports", "readinessProbe", "livenessProbe", "volumeMounts", "securityContext"):
        assert chart[key] == operator[key], key
    assert chart["image"] == "rocketq/rocketq:0.1.0"
    assert {"name": "NAMESRV_ADDR", "value": "demo-namesrv.mq.svc:9876"} in chart["env"]
    ingress = VALUE_SETS["console-ingress"]["console"]["ingress"]
    chart, operator = containers(VALUE_SETS["console-ingress"], {
        "aclCredentialsSecret": "console-acl", "ingress": {"enabled": True, "host": ingress["host"],
                                                          "tlsSecret": ingress["tlsSecret"]}})
    assert chart["command"] == operator["command"]
    assert chart["env"][4:] == operator["env"][4:], "the ACL account from the same Secret keys"


def test_the_chart_console_keeps_the_users_file_in_a_secret_mounted_as_that_file() -> None:
    objs = objects(render(VALUE_SETS["console"]))
    secret = named(objs, "Secret", f"{FULLNAME}-console")
    assert secret["stringData"]["users"] == USERS
    deployment = named(objs, "Deployment", f"{FULLNAME}-console")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "users", "secret": {
        "secretName": f"{FULLNAME}-console", "items": [{"key": "users", "path": "users"}]}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]
    service = named(objs, "Service", f"{FULLNAME}-console")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert "sessionAffinity" not in service["spec"]
    assert not by_kind(objs, "Ingress")


def test_the_chart_console_behind_an_ingress_with_tls_and_an_existing_secret() -> None:
    objs = objects(render(VALUE_SETS["console-ingress"]))
    assert not by_kind(objs, "Secret"), "the users Secret is the installer's"
    deployment = named(objs, "Deployment", f"{FULLNAME}-console")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["rocketq", "console", "--secure-cookies"]
    assert {"name": "NAMESRV_ADDR", "value": "ns-0:9876;ns-1:9876"} in container["env"]
    assert deployment["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] == "console-users"
    service = named(objs, "Service", f"{FULLNAME}-console")
    assert service["spec"]["sessionAffinity"] == "ClientIP" and service["spec"]["type"] == "NodePort"
    ingress = one(objs, "Ingress")
    assert ingress["spec"]["tls"] == [{"hosts": ["mq.example.com"], "secretName": "mq-tls"}]
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"] == {
        "name": f"{FULLNAME}-console", "port": {"name": "http"}}


@pytest.mark.parametrize(("console", "message"), [
    ({"enabled": True, "users": USERS}, "console.cluster"),
    ({"enabled": True, "cluster": "demo"}, "console.users"),
    ({"enabled": True, "cluster": "demo", "users": USERS, "ingress": {"enabled": True, "tlsSecret": "t"}},
     "tlsSecret needs console.ingress.host"),
])
def test_an_incomplete_console_is_refused_with_the_reason(console: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        render({"console": console})


@pytest.mark.parametrize("users", ["alice:admin:plaintext\n", "alice:root:$argon2id$v=19$x\n"])
def test_a_users_file_without_argon2_hashes_is_refused_by_the_values_schema(users: str) -> None:
    with pytest.raises(helm.HelmValuesError, match="/console/users"):
        render({"console": {"enabled": True, "cluster": "demo", "users": users}})

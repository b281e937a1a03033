"""spec.analytics: parsed like every field, rendered through rocketq_spark.manifests as the
cluster's children, valid against spark-operator's v1beta2 schemas, and reconciled against the
kmock emulator with and without spark-operator's CRD installed."""

from __future__ import annotations

import asyncio
import copy
import types
from typing import Any

import crdschema
import hypothesis
import kubernetes_validate
import pytest
import sparkschema
from hypothesis import strategies as st
from operator_harness import PATHS, OperatorEnv, declare_spark_operator
from rocketq_operator import analytics as step
from rocketq_operator import applying, kubeapi, names
from rocketq_operator import spec as specs
from rocketq_operator.rendering import analytics, common
from rocketq_operator.runtime import Announcements

K8S_VERSION = "1.33.0"
SUPPORT_KINDS = [("ServiceAccount", "demo-spark"), ("Role", "demo-spark"), ("RoleBinding", "demo-spark"),
                 ("PersistentVolumeClaim", "demo-analytics")]
JOBS = ["demo-lag", "demo-traces"]


def cluster_of(raw: dict[str, Any], name: str = "demo") -> specs.Cluster:
    parsed = specs.parse_cluster_spec(raw, name)
    assert parsed.spec is not None, parsed.errors
    return specs.Cluster(specs.ClusterMeta(name, "mq", "uid-1", 1), parsed.spec)


def errors_of(raw: dict[str, Any], name: str = "demo") -> tuple[str, ...]:
    return specs.parse_cluster_spec(raw, name).errors


# ---- parsing ----------------------------------------------------------------------------------


def test_analytics_is_off_unless_enabled() -> None:
    assert cluster_of({}).spec.analytics == specs.AnalyticsSpec(enabled=False)
    assert cluster_of({"analytics": {}}).spec.analytics.enabled is False


def test_the_crds_analytics_defaults_are_the_operators() -> None:
    defaulted = crdschema.apply_defaults("RocketMQCluster", {
        "apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster", "metadata": {"name": "demo"},
        "spec": {"analytics": {"enabled": True}}})
    assert cluster_of(defaulted["spec"]).spec.analytics == specs.AnalyticsSpec(enabled=True)


def test_every_analytics_field_is_read() -> None:
    wanted = cluster_of({"analytics": {
        "enabled": True, "image": "reg/spark:1", "lagSchedule": "@every 10m", "traceSchedule": "@daily",
        "pushgateway": "pg.monitoring.svc:9091", "history": {"size": "20Gi", "storageClassName": "nfs"},
        "driver": {"cores": 2, "memory": "1g"}, "executor": {"instances": 3, "cores": 4, "memory": "4g"}}}
    ).spec.analytics
    assert wanted == specs.AnalyticsSpec(
        enabled=True, image="reg/spark:1", lag_schedule="@every 10m", trace_schedule="@daily",
        pushgateway="pg.monitoring.svc:9091", history_size="20Gi", history_storage_class="nfs",
        driver=specs.SparkPods(2, "1g"), executor=specs.SparkPods(4, "4g"), executors=3)


@pytest.mark.parametrize(("raw", "name", "expected"), [
    ({"enabled": "yes"}, "demo", "spec.analytics.enabled: must be true or false"),
    ({"enabled": True}, "a" * 37, "metadata.name: must be at most 36 characters when analytics is enabled"),
    ({"lagSchedule": "every 5 minutes"}, "demo", "spec.analytics.lagSchedule:"),
    ({"driver": {"memory": "512Mi"}}, "demo", "spec.analytics.driver.memory:"),
    ({"executor": {"instances": 0}}, "demo", "spec.analytics.executor.instances:"),
    ({"history": {"size": "5GB"}}, "demo", "spec.analytics.history.size:"),
    ({"pushgateway": "pg :9091"}, "demo", "spec.analytics.pushgateway:"),
    ("on", "demo", "spec.analytics:"),
])
def test_invalid_analytics_is_an_error_line(raw: Any, name: str, expected: str) -> None:
    errors = errors_of({"analytics": raw}, name)
    assert any(e.startswith(expected) for e in errors), errors


def test_a_long_name_is_fine_while_analytics_is_off() -> None:
    assert errors_of({"analytics": {"enabled": False}}, "a" * 40) == ()


@hypothesis.given(st.text(alphabet="*/0159 @ehvryoulmintdaw,-?", min_size=1, max_size=30))
@hypothesis.settings(max_examples=80, deadline=None)
def test_the_operator_accepts_a_schedule_exactly_when_the_crd_does(schedule: str) -> None:
    obj = {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster", "metadata": {"name": "demo"},
           "spec": {"analytics": {"enabled": True, "lagSchedule": schedule}}}
    crd_ok = crdschema.validate("RocketMQCluster", obj) == []
    assert (errors_of(obj["spec"]) == ()) == crd_ok, schedule


# ---- rendering --------------------------------------------------------------------------------


def test_scheduled_jobs_are_valid_v1beta2_and_point_at_the_clusters_name_servers() -> None:
    cluster = cluster_of({"analytics": {"enabled": True, "pushgateway": "pg:9091"}})
    lag, traces = analytics.render_scheduled(cluster)
    assert [lag["metadata"]["name"], traces["metadata"]["name"]] == JOBS
    for job in (lag, traces):
        assert sparkschema.problems(job) == []
        assert job["metadata"]["namespace"] == "mq"
        assert job["metadata"]["ownerReferences"] == [common.owner_reference(cluster)]
        assert job["metadata"]["labels"][common.LABEL_CLUSTER] == "demo"
        template = job["spec"]["template"]
        arguments = template["arguments"]
        assert arguments[arguments.index("--namesrv") + 1] == "demo-namesrv.mq.svc:9876"
        assert template["driver"]["serviceAccount"] == names.spark_account("demo")
        assert template["volumes"][0]["persistentVolumeClaim"]["claimName"] == names.analytics_history("demo")
    assert lag["spec"]["schedule"] == "*/5 * * * *" and traces["spec"]["schedule"] == "0 * * * *"
    assert lag["spec"]["template"]["mainApplicationFile"].endswith("/consumer_lag.py")
    assert traces["spec"]["template"]["mainApplicationFile"].endswith("/trace_analysis.py")
    assert lag["spec"]["template"]["arguments"][-6:] == [
        "--pushgateway", "pg:9091", "--cluster", "demo", "--cluster-namespace", "mq"]


def test_a_long_job_name_still_leaves_room_for_spark_operators_run_suffix() -> None:
    name = "a" * specs.MAX_ANALYTICS_CLUSTER_NAME
    for job in analytics.render_scheduled(cluster_of({"analytics": {"enabled": True}}, name)):
        assert len(job["metadata"]["name"]) + specs.SPARK_RUN_SUFFIX <= 63


def test_support_objects_are_valid_kubernetes_and_owned() -> None:
    cluster = cluster_of({"analytics": {"enabled": True, "history": {"size": "8Gi", "storageClassName": "nfs"}}})
    support = analytics.render_support(cluster)
    assert [(o["kind"], o["metadata"]["name"]) for o in support] == SUPPORT_KINDS
    for obj in support:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        assert obj["metadata"]["ownerReferences"] == [common.owner_reference(cluster)]
    claim = support[-1]["spec"]
    assert claim == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "8Gi"}},
                     "storageClassName": "nfs"}
    binding = support[2]
    assert binding["roleRef"]["name"] == "demo-spark"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "demo-spark", "namespace": "mq"}]


def test_disabling_removes_jobs_and_rbac_but_keeps_the_history() -> None:
    assert analytics.removable("demo") == [("ScheduledSparkApplication", j) for j in JOBS] + [
        ("RoleBinding", "demo-spark"), ("Role", "demo-spark"), ("ServiceAccount", "demo-spark")]


# ---- the step, with an API that refuses ---------------------------------------------------------


class ForbiddingApi:
    """Every read finds nothing; every write of ``forbidden`` kinds is 403, others are stored."""

    def __init__(self, forbidden: set[str], reads_forbidden: bool = False) -> None:
        self.forbidden = forbidden
        self.reads_forbidden = reads_forbidden
        self.created: list[str] = []

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        if self.reads_forbidden and kind in self.forbidden:
            raise kubeapi.Forbidden(f"GET {kind} {name}: 403", 403)
        return None

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] in self.forbidden:
            raise kubeapi.Forbidden(f"POST {obj['kind']}: 403 forbidden", 403)
        self.created.append(obj["kind"])
        return obj


class FakePass:
    """What the analytics step uses of a ClusterPass."""

    def __init__(self, api: ForbiddingApi, previous: dict[str, Any] | None = None) -> None:
        self.api = api
        self.previous = previous or {}
        self.events: list[tuple[str, str, str]] = []
        self.ctx = self
        self.emit = lambda kind, reason, message: self.events.append((kind, reason, message))
        self.runtime = types.SimpleNamespace(announcements=Announcements())

    def warnings_key(self, topic: str) -> tuple[str, ...]:
        return ("RocketMQCluster", "ns", "c", topic)

    async def apply_one(self, desired: dict[str, Any]) -> applying.ApplyResult | None:
        return await applying.apply(self.api, desired)  # type: ignore[arg-type]


async def test_a_forbidden_write_is_a_condition_and_one_event_not_a_failed_pass() -> None:
    cluster = cluster_of({"analytics": {"enabled": True}})
    first = FakePass(ForbiddingApi({"Role"}))
    found = await step.reconcile(first, cluster)  # type: ignore[arg-type]
    assert (found.status, found.reason) == (True, "Forbidden") and "403" in found.message
    assert first.api.created == ["ServiceAccount"] and [e[1] for e in first.events] == ["AnalyticsUnavailable"]
    told = {"conditions": [{"type": "AnalyticsUnavailable", "status": "True", "reason": "Forbidden"}]}
    again = FakePass(ForbiddingApi({"Role"}), told)
    assert (await step.reconcile(again, cluster)).reason == "Forbidden"  # type: ignore[arg-type]
    assert again.events == [], "the status already says it"


async def test_disabled_analytics_without_access_to_spark_objects_is_just_disabled() -> None:
    api = ForbiddingApi({"ScheduledSparkApplication"}, reads_forbidden=True)
    found = await step.reconcile(FakePass(api), cluster_of({}))  # type: ignore[arg-type]
    assert (found.status, found.reason) == (False, "Disabled") and "no access" in found.message


# ---- against the emulator ---------------------------------------------------------------------


def condition(env: OperatorEnv) -> dict[str, Any] | None:
    return env.condition("RocketMQCluster", "demo", "AnalyticsUnavailable")


def live_without_server_fields(env: OperatorEnv, kind: str, name: str) -> dict[str, Any]:
    live = env.get(kind, name)
    assert live is not None, f"{kind} {name}"
    out = copy.deepcopy(live)
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "annotations"):
        out["metadata"].pop(key, None)
    return out


@pytest.mark.with_spark_operator
async def test_enabling_creates_the_jobs_and_disabling_removes_them(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"analytics": {"enabled": True}})
    await env.wait_for(lambda: env.names("ScheduledSparkApplication") == set(JOBS), "the scheduled jobs")
    body = env.get("RocketMQCluster", "demo")
    assert body is not None
    uid = body["metadata"]["uid"]
    for kind, name in [*SUPPORT_KINDS, *[("ScheduledSparkApplication", j) for j in JOBS]]:
        live = live_without_server_fields(env, kind, name)
        assert [r["uid"] for r in live["metadata"]["ownerReferences"]] == [uid]
        if kind == "ScheduledSparkApplication":
            assert sparkschema.problems(live) == [], name
    await env.wait_for(lambda: (condition(env) or {}).get("reason") == "Scheduled", "the Scheduled condition")
    assert condition(env)["status"] == "False"  # type: ignore[index]

    await env.patch("RocketMQCluster", "demo", {"spec": {"analytics": {"enabled": False}}})
    await env.wait_for(lambda: not env.names("ScheduledSparkApplication"), "the jobs to be removed")
    await env.wait_for(lambda: (condition(env) or {}).get("reason") == "Disabled", "the Disabled condition")
    assert env.get("ServiceAccount", "demo-spark") is None and env.get("Role", "demo-spark") is None
    assert env.get("RoleBinding", "demo-spark") is None
    assert env.get("PersistentVolumeClaim", "demo-analytics") is not None, "the lag history is kept"


async def test_without_spark_operator_the_cluster_runs_and_says_why_analytics_waits(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"analytics": {"enabled": True}})

    def unavailable() -> dict[str, Any] | None:
        found = condition(env)
        return found if found and found["status"] == "True" else None

    found = await env.wait_for(unavailable, "AnalyticsUnavailable=True")
    assert found["reason"] == "SparkOperatorMissing" and "install spark-operator" in found["message"]
    await env.wait_for(lambda: env.status("RocketMQCluster", "demo").get("phase") == "Running",
                       "the brokers to run regardless")
    await asyncio.sleep(1.0)  # several periodic passes
    assert len(env.events("AnalyticsUnavailable")) == 1, "one Event, not one per pass"
    assert env.get("PersistentVolumeClaim", "demo-analytics") is not None

    declare_spark_operator(env.server)  # spark-operator installed later: the next pass creates the jobs
    await env.wait_for(lambda: env.names("ScheduledSparkApplication") == set(JOBS), "the scheduled jobs")
    await env.wait_for(lambda: (condition(env) or {}).get("status") == "False", "the condition to clear")


@pytest.mark.with_spark_operator
async def test_a_strangers_scheduled_job_with_a_jobs_name_is_refused_not_adopted(env: OperatorEnv) -> None:
    stranger = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "ScheduledSparkApplication",
                "metadata": {"name": "demo-lag", "namespace": "mq"},
                "spec": {"schedule": "@daily", "template": {"type": "Python"}}}
    response = await env.server.post(PATHS["ScheduledSparkApplication"].format(ns="mq"), json=stranger)
    assert response.status < 300, await response.text()
    await env.create("RocketMQCluster", "demo", {"analytics": {"enabled": True}})

    def degraded() -> dict[str, Any] | None:
        found = env.condition("RocketMQCluster", "demo", "Degraded")
        return found if found and found["status"] == "True" else None

    found = await env.wait_for(degraded, "the name conflict to be reported")
    assert found["reason"] == "NameConflict"
    assert "ScheduledSparkApplication mq/demo-lag already exists and has no owner" in found["message"]
    await env.wait_for(lambda: env.get("ScheduledSparkApplication", "demo-traces"), "the other job")
    live = env.get("ScheduledSparkApplication", "demo-lag")
    assert live is not None and "ownerReferences" not in live["metadata"]
    assert live["spec"] == stranger["spec"]

    await env.patch("RocketMQCluster", "demo", {"spec": {"analytics": {"enabled": False}}})
    await env.wait_for(lambda: env.get("ScheduledSparkApplication", "demo-traces") is None, "our job removed")
    assert env.get("ScheduledSparkApplication", "demo-lag") is not None, "the stranger's is left alone"


async def test_two_passes_from_a_stale_body_post_one_event() -> None:
    """A pass can start from a body older than the last status write (a queued watch event):
    the status does not say it yet, the operator's own memory does."""
    cluster = cluster_of({"analytics": {"enabled": True}})
    first = FakePass(ForbiddingApi({"Role"}))
    second = FakePass(ForbiddingApi({"Role"}))  # the same stale (empty) status
    second.runtime = first.runtime
    await step.reconcile(first, cluster)  # type: ignore[arg-type]
    await step.reconcile(second, cluster)  # type: ignore[arg-type]
    assert [e[1] for e in first.events + second.events] == ["AnalyticsUnavailable"]


def test_announcements_say_a_message_again_once_it_went_away() -> None:
    told = Announcements()
    key = ("RocketMQCluster", "ns", "c", "refusals")
    assert told.not_yet(key, ["a", "b"]) == ["a", "b"]
    assert told.not_yet(key, ["a", "b"]) == []
    assert told.not_yet(key, ["b"]) == []
    assert told.not_yet(key, ["a", "b"]) == ["a"]
    told.forget("RocketMQCluster", "ns", "c")
    assert told.not_yet(key, ["a"]) == ["a"]

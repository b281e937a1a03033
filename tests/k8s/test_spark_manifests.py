"""The analytics manifests (spark-apps/manifests and the chart's analytics switch) against
spark-operator's v1beta2 CRD schemas (tests/fixtures/spark-operator, see its README for origin),
validated strictly by sparkschema.
"""

from __future__ import annotations

import copy
import pathlib
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml
from rocketq_spark import manifests
from sparkschema import SPARK_KINDS, problems

REPO = pathlib.Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "rocketq"
RELEASE, NAMESPACE, FULLNAME = "rq", "rocketq-system", "rq-rocketq"
NAMESRV = "demo-namesrv.mq.svc:9876"


def check(objs: list[dict[str, Any]]) -> None:
    for obj in objs:
        if obj["kind"] in SPARK_KINDS:
            assert problems(obj) == [], obj["metadata"]["name"]
        else:
            kubernetes_validate.validate(obj, "1.30.0", strict=True)


def checked_in() -> dict[str, list[dict[str, Any]]]:
    return {p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
            for p in sorted((REPO / "spark-apps" / "manifests").glob("*.yaml"))}


def test_checked_in_manifests_are_the_renderers_output() -> None:
    expected = manifests.files(manifests.AnalyticsSpec())
    found = {p.name: p.read_text() for p in (REPO / "spark-apps" / "manifests").glob("*.yaml")}
    assert found == expected, "run: python -m rocketq_spark.manifests --write-dir spark-apps/manifests"


def test_every_checked_in_manifest_is_valid() -> None:
    files = checked_in()
    kinds = sorted(o["kind"] for objs in files.values() for o in objs)
    assert kinds == ["PersistentVolumeClaim", "Role", "RoleBinding", "ScheduledSparkApplication",
                     "ScheduledSparkApplication", "ServiceAccount", "SparkApplication", "SparkApplication"]
    for objs in files.values():
        check(objs)


def test_schedules_and_jobs() -> None:
    files = checked_in()
    (lag,) = files["consumer-lag-scheduled.yaml"]
    (traces,) = files["trace-analysis-scheduled.yaml"]
    assert (lag["spec"]["schedule"], traces["spec"]["schedule"]) == ("*/5 * * * *", "0 * * * *")
    assert lag["spec"]["concurrencyPolicy"] == traces["spec"]["concurrencyPolicy"] == "Forbid"
    template = lag["spec"]["template"]
    assert template["mainApplicationFile"].endswith("/rocketq_spark/jobs/consumer_lag.py")
    assert template["arguments"][:2] == ["--namesrv", manifests.AnalyticsSpec().namesrv]
    assert template["driver"]["serviceAccount"] == files["rbac.yaml"][0]["metadata"]["name"]
    job_file = REPO / "spark-apps" / template["mainApplicationFile"].split("/spark-apps/", 1)[1]
    assert job_file.is_file()


@pytest.mark.parametrize(("change", "complaint"), [
    (lambda s: s.update(pythonVersion=3), "pythonVersion: 3 is not of type 'string'"),
    (lambda s: s.pop("mainApplicationFile"), "'mainApplicationFile' is a required property"),
    (lambda s: s["executor"].update(instances=0), "executor.instances: 0 is less than the minimum of 1"),
    (lambda s: s["driver"].update(serviceAcount="x"), "Additional properties are not allowed"),
    (lambda s: s.update(type="Python3"), "type: 'Python3' is not one of"),
])
def test_the_validation_catches_mistakes(change: Any, complaint: str) -> None:
    (app,) = copy.deepcopy(checked_in()["consumer-lag-once.yaml"])
    change(app["spec"])
    assert any(complaint in p for p in problems(app)), problems(app)


# ---- the Helm chart's analytics switch ----------------------------------------------------------


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return [d for name, text in sorted(rendered.items()) if name.endswith("analytics.yaml")
            for d in yaml.safe_load_all(text) if d]


def test_chart_renders_valid_analytics_matching_the_renderer() -> None:
    objs = render({"analytics": {"enabled": True, "namesrv": NAMESRV, "pushgateway": "pushgw:9091"}})
    check(objs)
    spec = manifests.AnalyticsSpec(namesrv=NAMESRV, namespace=NAMESPACE, name_prefix=FULLNAME,
                                   pushgateway="pushgw:9091")
    scheduled = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ScheduledSparkApplication"}
    assert scheduled[f"{FULLNAME}-consumer-lag"]["spec"] == manifests.scheduled(
        spec, "consumer-lag", spec.lag_schedule, manifests.lag_arguments(spec))["spec"]
    assert scheduled[f"{FULLNAME}-trace-analysis"]["spec"] == manifests.scheduled(
        spec, "trace-analysis", spec.trace_schedule, manifests.trace_arguments(spec))["spec"]
    assert sorted(o["kind"] for o in objs) == ["PersistentVolumeClaim", "Role", "RoleBinding",
                                               "ScheduledSparkApplication", "ScheduledSparkApplication",
                                               "ServiceAccount"]


def test_chart_analytics_is_off_by_default_and_needs_a_name_server() -> None:
    assert render({}) == []
    with pytest.raises(Exception, match=r"analytics\.namesrv is required"):
        render({"analytics": {"enabled": True}})


def test_chart_lint_is_clean_with_analytics() -> None:
    values = {"analytics": {"enabled": True, "namesrv": NAMESRV}}
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version="v1.30.0")
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == [], report


# ---- the jobs' image (spark-apps/Dockerfile), checked without Docker as test_images does ----------


def test_spark_image_copies_what_it_installs_and_runs() -> None:
    from test_images import PYPROJECT, in_context, instructions, values_of

    parsed = instructions(REPO / "spark-apps" / "Dockerfile")
    assert values_of(parsed, "FROM") == [f"apache/spark:{manifests.SPARK_VERSION}"]
    assert values_of(parsed, "USER")[-1] == "185", "the apache/spark image's non-root user"
    copies = [line.split() for line in values_of(parsed, "COPY")]
    for *sources, _destination in copies:
        for source in sources:
            assert (REPO / source).exists() and in_context(source), source
    (install,) = [run for run in values_of(parsed, "RUN") if "pip install" in run]
    assert '".[analytics]"' in install and "analytics" in PYPROJECT["project"]["optional-dependencies"]
    # the SparkApplications' mainApplicationFile lies where the job files are copied
    (job_copy,) = [c for c in copies if c[-1].startswith("/opt/rocketq/spark-apps")]
    assert manifests.APP_ROOT.startswith(job_copy[-1])
    assert "PYSPARK_PYTHON=/opt/rocketq/venv/bin/python" in " ".join(values_of(parsed, "ENV"))

"""The chart's dashboard and alert rules ask only for metrics and labels rocketq exports.

Each PromQL string of the Grafana dashboard (panel targets, template variables) and of the
PrometheusRule (expressions, ``$labels.x`` in annotations) is taken apart: every metric it
selects must be in the catalogue built from the exporting code (see ``metriccatalog``), every
label it matches on must be a label of that metric, and every label it groups by (``by (...)``)
or shows (``{{x}}`` in a legend, ``$labels.x`` in an alert) must be a label of every metric the
query reads. A mismatch is a panel that shows no data or an alert that never fires.

The PromQL reading is deliberately small: selectors ``name{matchers}``, bare metric names
(those starting with ``rocketmq_``, ``rocketq_operator_``, ``rocketq_spark_``, or ``up``), and ``by``/``without``
clauses. The chart's queries use nothing else; a new construct this cannot read fails the
"every query names a metric" check rather than passing unchecked.
"""

from __future__ import annotations

import http.server
import json
import pathlib
import re
import threading
from collections.abc import Iterator
from typing import Any, Final

import helm_python as helm
import metriccatalog
import pytest
import yaml

REPO: Final = pathlib.Path(__file__).resolve().parents[2]
CHART: Final = REPO / "charts" / "rocketq"
DASHBOARD: Final = CHART / "dashboards" / "rocketq-overview.json"

QUOTED: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
SELECTOR: Final = re.compile(r"([a-zA-Z_:][\w:]*)\s*\{([^}]*)\}")
BARE_METRIC: Final = re.compile(r"\b(up|rocketmq_\w+|rocketq_operator_\w+|rocketq_spark_\w+)\b(?!\s*\()")
MATCHER: Final = re.compile(r"([a-zA-Z_]\w*)\s*(=~|!~|!=|=)")
GROUPING: Final = re.compile(r"\b(by|without)\s*\(([^)]*)\)")
LEGEND_LABEL: Final = re.compile(r"\{\{\s*([a-zA-Z_]\w*)\s*\}\}")
ALERT_LABEL: Final = re.compile(r"\$labels\.([a-zA-Z_]\w*)")
LABEL_VALUES: Final = re.compile(r"label_values\((.*),\s*([a-zA-Z_]\w*)\s*\)$")


def render_chart() -> dict[str, str]:
    values = {"metrics": {"podMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
                          "grafanaDashboard": {"enabled": True}}}
    with helm.Chart.load(CHART) as chart:
        rendered: dict[str, str] = chart.render(values, name="rocketq", namespace="rocketq-system", is_install=True)
    return rendered


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return render_chart()


@pytest.fixture(scope="module")
def catalog(rendered: dict[str, str]) -> dict[str, frozenset[str]]:
    """Exported series, with the labels the chart's PodMonitor copies onto them."""
    monitor = yaml.safe_load(rendered["rocketq/templates/podmonitor.yaml"])
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    target_labels = frozenset(r["targetLabel"] for r in endpoint["relabelings"])
    return metriccatalog.exported(target_labels)


class Query:
    """One PromQL string, read as far as the checks need."""

    def __init__(self, text: str) -> None:
        self.text = text
        plain = QUOTED.sub('""', text)  # label values may hold anything, braces included
        self.selectors = [(name, {m.group(1) for m in MATCHER.finditer(body)})
                          for name, body in SELECTOR.findall(plain)]
        rest = SELECTOR.sub(" ", plain)
        self.groupings = [(word, {label.strip() for label in labels.split(",") if label.strip()})
                          for word, labels in GROUPING.findall(rest)]
        rest = GROUPING.sub(" ", rest)
        self.metrics = [name for name, _ in self.selectors] + BARE_METRIC.findall(rest)

    def problems(self, catalog: dict[str, frozenset[str]], shown: set[str]) -> list[str]:
        if not self.metrics:
            return [f"names no metric this test can read: {self.text}"]
        out = [f"{name}: not exported" for name in self.metrics if name not in catalog]
        for name, matched in self.selectors:
            out += [f"{name}: no label {label!r}" for label in sorted(matched - catalog.get(name, matched))]
        common = frozenset.intersection(*(catalog.get(name, frozenset()) for name in self.metrics))
        kept = set(common)
        for word, labels in self.groupings:
            out += [f"{word} ({label}): not a label of {', '.join(self.metrics)}" for label in sorted(labels - common)]
            kept = labels if word == "by" else kept - labels
        out += [f"shows {label!r}, which the result does not carry" for label in sorted(shown - kept)]
        return out


def dashboard_queries() -> Iterator[tuple[str, str, set[str]]]:
    """(where, PromQL, labels the legend shows) for every panel target and template variable."""
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            if "expr" in target:
                legend = set(LEGEND_LABEL.findall(target.get("legendFormat", "")))
                yield f"panel {panel['title']!r}", target["expr"], legend
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        text = query.get("query") if isinstance(query, dict) else None
        if variable.get("type") == "query" and isinstance(text, str):
            match = LABEL_VALUES.match(text)
            assert match, f"variable {variable['name']}: not label_values(...): {text}"
            yield f"variable ${variable['name']}", match.group(1), {match.group(2)}


def alert_rules(rendered: dict[str, str]) -> Iterator[dict[str, Any]]:
    rule = yaml.safe_load(rendered["rocketq/templates/prometheusrule.yaml"])
    for group in rule["spec"]["groups"]:
        yield from group["rules"]


def test_the_catalogue_holds_what_the_dashboard_documentation_promises(catalog: dict[str, frozenset[str]]) -> None:
    assert catalog["rocketmq_group_diff"] >= {"group", "topic", "broker", "rocketq_cluster", "namespace", "pod"}
    assert catalog["rocketq_operator_reconciles_total"] >= {"kind", "result"}
    assert "consumer_group" not in catalog["rocketmq_consumer_lag_messages"]
    # the Spark job's pushed gauges: its labels, the push group's, the scrape's; no pod labels
    assert catalog["rocketq_spark_stuck_queues"] == {
        "group", "topic", "rocketq_cluster", "namespace", "job", "instance"}


def test_the_dashboard_and_alerts_show_the_spark_jobs_findings(rendered: dict[str, str]) -> None:
    read = {m for _where, text, _shown in dashboard_queries() for m in Query(text).metrics}
    assert {"rocketq_spark_consumer_lag", "rocketq_spark_consumer_lag_growth_per_second",
            "rocketq_spark_stuck_queues", "rocketq_spark_no_consumer_queues",
            "rocketq_spark_consumer_drain_seconds"} <= read
    alerted = {m for rule in alert_rules(rendered) for m in Query(rule["expr"]).metrics}
    assert "rocketq_spark_stuck_queues" in alerted


def test_pushed_series_carry_the_labels_the_catalogue_says(catalog: dict[str, frozenset[str]]) -> None:
    """push_lag against a local HTTP server standing in for the Pushgateway: the PUT path holds
    the push group's labels and the body every gauge with the catalogue's own labels."""
    pushing = pytest.importorskip("rocketq_spark.pushing")
    received: list[tuple[str, str]] = []

    class Gateway(http.server.BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            received.append((self.path, body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            return

    server = http.server.HTTPServer(("127.0.0.1", 0), Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        row = {"group": "g", "topic": "t", "lag": 5, "lagGrowthPerSec": 0.5, "drainSeconds": None,
               "stuckQueues": 2, "noConsumerQueues": 1}
        gateway = f"127.0.0.1:{server.server_address[1]}"
        assert pushing.push_lag(gateway, "rocketq-consumer-lag", [row], pushing.grouping_key("demo", "mq")) == 1
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    ((path, body),) = received
    assert path == "/metrics/job/rocketq-consumer-lag/namespace/mq/rocketq_cluster/demo"
    samples = [line for line in body.splitlines() if line and not line.startswith("#")]
    spark = {name for name in catalog if name.startswith("rocketq_spark_")}
    assert {line.split("{")[0] for line in samples} == spark
    pushed_labels = set(pushing.grouping_key("demo", "mq")) | {"job", "instance"}
    for line in samples:
        labels = set(re.findall(r'(\w+)="', line))
        assert labels | pushed_labels == catalog[line.split("{")[0]], line
    assert 'rocketq_spark_consumer_drain_seconds{group="g",topic="t"} -1.0' in samples


def test_every_dashboard_query_asks_for_exported_metrics_and_labels(catalog: dict[str, frozenset[str]]) -> None:
    problems = [f"{where}: {problem}" for where, text, shown in dashboard_queries()
                for problem in Query(text).problems(catalog, shown)]
    assert problems == []


def test_every_alert_rule_asks_for_exported_metrics_and_labels(
        rendered: dict[str, str], catalog: dict[str, frozenset[str]]) -> None:
    problems = []
    for rule in alert_rules(rendered):
        shown = set(ALERT_LABEL.findall(json.dumps(rule.get("annotations", {}))))
        problems += [f"{rule['alert']}: {p}" for p in Query(rule["expr"]).problems(catalog, shown)]
    assert problems == []


@pytest.mark.parametrize(("query", "shown", "expected"), [
    ('sum by (consumer_group, topic) (rocketmq_consumer_lag_messages{consumer_group=~"$group"})',
     {"consumer_group"}, ["no label 'consumer_group'", "by (consumer_group)"]),
    ("rocketmq_group_difff > 0", set(), ["rocketmq_group_difff: not exported"]),
    ('sum by (group) (rocketmq_group_diff{topic="a{b}"})', {"topic"}, ["shows 'topic'"]),
    ("vector(1)", set(), ["names no metric"]),
])
def test_the_check_catches_a_wrong_label_or_name(
        catalog: dict[str, frozenset[str]], query: str, shown: set[str], expected: list[str]) -> None:
    problems = Query(query).problems(catalog, shown)
    for text in expected:
        assert any(text in problem for problem in problems), problems
    assert Query('sum by (group, topic) (rocketmq_group_diff{group=~"$group"})').problems(catalog, {"group"}) == []

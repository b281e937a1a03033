"""The metric names and labels rocketq really exports, read from the code that exports them.

The chart's Grafana dashboard and alert rules name metrics and labels in PromQL strings; a
typo there (``consumer_group`` for ``group``) gives an empty panel, not an error. This module
builds the catalogue those strings are checked against, from four places:

1. **The code.** Every metric is declared by a constructor call with a literal name and a
   literal label list: prometheus_client's ``Counter``/``Gauge``/``Histogram``/``Summary`` and
   the collector families ``GaugeMetricFamily``/``CounterMetricFamily`` (and the broker's
   ``_gauge`` shorthand), in ``rocketq/broker/metrics.py``, ``rocketq/namesrv/metrics.py``,
   ``rocketq/proxy/metrics.py`` and ``operator/rocketq_operator/metrics.py``. They are read with
   ``ast``, so a metric counts even when a test would see no sample of it. A label list held in
   a variable is followed to its assignment in the same function; anything else is an error
   here, never a guess.
2. **The exposition format.** A counter ``x`` is exported as ``x_total``; a histogram ``h`` as
   ``h_bucket`` (with ``le``), ``h_sum`` and ``h_count``.
3. **Scraping.** Prometheus adds ``job`` and ``instance`` and the synthetic ``up`` series; the
   chart's PodMonitor copies pod labels onto every series (``targetLabel`` of its relabelings).
4. **The Pushgateway.** The Spark lag job pushes ``rocketq_spark_*`` gauges
   (``spark-apps/rocketq_spark/pushing.py``, read the same way); the Pushgateway adds the push
   group's labels (``GROUPING_LABELS`` there) and Prometheus scrapes them with ``honor_labels``,
   so they carry ``job`` and ``instance`` but not the PodMonitor's target labels.

Public API: ``exported(target_labels) -> dict[str, frozenset[str]]``, ``SOURCES``, ``PUSHED``.
"""

from __future__ import annotations

import ast
import pathlib
from typing import Final

REPO: Final = pathlib.Path(__file__).resolve().parents[2]
SOURCES: Final = (
    REPO / "rocketq" / "broker" / "metrics.py",
    REPO / "rocketq" / "namesrv" / "metrics.py",
    REPO / "rocketq" / "proxy" / "metrics.py",
    REPO / "operator" / "rocketq_operator" / "metrics.py",
)
PUSHED: Final = REPO / "spark-apps" / "rocketq_spark" / "pushing.py"
GROUPING_CONSTANT: Final = "GROUPING_LABELS"
SCRAPE_LABELS: Final = frozenset({"job", "instance"})

# constructor -> (kind, position of the label list among its positional arguments, from 1)
CONSTRUCTORS: Final = {
    "Counter": ("counter", 3), "Gauge": ("gauge", 3), "Histogram": ("histogram", 3), "Summary": ("summary", 3),
    "CounterMetricFamily": ("counter", 4), "GaugeMetricFamily": ("gauge", 4), "_gauge": ("gauge", 3),
}
LABEL_KEYWORDS: Final = ("labels", "labelnames")


class CatalogError(ValueError):
    """A metric declaration this module cannot read with certainty."""


def _callee(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _strings(node: ast.expr, assigned: dict[str, ast.expr], where: str) -> frozenset[str]:
    if isinstance(node, ast.Name) and node.id in assigned:
        return _strings(assigned[node.id], assigned, where)
    if isinstance(node, ast.List | ast.Tuple) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return frozenset(str(e.value) for e in node.elts if isinstance(e, ast.Constant))
    raise CatalogError(f"{where}: label list is not a literal list of strings: {ast.unparse(node)}")


def _series(name: str, kind: str) -> dict[str, frozenset[str]]:
    if kind == "counter":
        return {name if name.endswith("_total") else f"{name}_total": frozenset()}
    if kind == "histogram":
        return {f"{name}_bucket": frozenset({"le"}), f"{name}_sum": frozenset(), f"{name}_count": frozenset()}
    if kind == "summary":
        return {name: frozenset({"quantile"}), f"{name}_sum": frozenset(), f"{name}_count": frozenset()}
    return {name: frozenset()}


def _declared(path: pathlib.Path) -> dict[str, frozenset[str]]:
    tree = ast.parse(path.read_text(), str(path))
    found: dict[str, frozenset[str]] = {}
    module_constants = {node.target.id if isinstance(node, ast.AnnAssign) else node.targets[0].id: node.value
                        for node in tree.body
                        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value)
                        or (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name))}
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assigned = {**module_constants, **{target.id: node.value for node in ast.walk(scope)
                                           if isinstance(node, ast.Assign)
                                           for target in node.targets if isinstance(target, ast.Name)}}
        for call in (n for n in ast.walk(scope) if isinstance(n, ast.Call)):
            callee = _callee(call)
            if callee not in CONSTRUCTORS or not call.args:
                continue
            first = call.args[0]
            where = f"{path.relative_to(REPO)}:{call.lineno}"
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue  # e.g. a loop over (name, doc) pairs: handled below
            kind, index = CONSTRUCTORS[callee]
            found.update(_with_labels(first.value, kind, _labels_of(call, index, assigned, where)))
        found.update(_looped_gauges(scope))
    return found


def _labels_of(call: ast.Call, index: int, assigned: dict[str, ast.expr], where: str) -> frozenset[str]:
    for keyword in call.keywords:
        if keyword.arg in LABEL_KEYWORDS:
            return _strings(keyword.value, assigned, where)
    if len(call.args) >= index:
        return _strings(call.args[index - 1], assigned, where)
    return frozenset()


def _with_labels(name: str, kind: str, labels: frozenset[str]) -> dict[str, frozenset[str]]:
    return {series: extra | labels for series, extra in _series(name, kind).items()}


def _looped_gauges(scope: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, frozenset[str]]:
    """``for name, doc, read in ((\"x\", ...), ...): Gauge(name, doc, ...)``: label-less gauges."""
    found: dict[str, frozenset[str]] = {}
    for loop in (n for n in ast.walk(scope) if isinstance(n, ast.For)):
        makes_gauge = any(isinstance(n, ast.Call) and _callee(n) == "Gauge" and n.args
                          and isinstance(n.args[0], ast.Name) for n in ast.walk(loop))
        if not makes_gauge:
            continue
        table = loop.iter
        if isinstance(table, ast.Name):
            table = next((n.value for n in ast.walk(scope) if isinstance(n, ast.Assign)
                          and any(isinstance(t, ast.Name) and t.id == table.id for t in n.targets)), table)
        for row in getattr(table, "elts", []):
            if isinstance(row, ast.Tuple) and row.elts and isinstance(row.elts[0], ast.Constant):
                found[str(row.elts[0].value)] = frozenset()
    return found


def grouping_labels(path: pathlib.Path = PUSHED) -> frozenset[str]:
    """The push group's labels: the literal tuple ``GROUPING_LABELS`` of the pushing module."""
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        targets: list[ast.expr] = [node.target] if isinstance(node, ast.AnnAssign) else (
            list(node.targets) if isinstance(node, ast.Assign) else [])
        value = node.value if isinstance(node, ast.AnnAssign | ast.Assign) else None
        if value is not None and any(isinstance(t, ast.Name) and t.id == GROUPING_CONSTANT for t in targets):
            return _strings(value, {}, f"{path.relative_to(REPO)}:{node.lineno}")
    raise CatalogError(f"{path.relative_to(REPO)}: no literal {GROUPING_CONSTANT} tuple")


def exported(target_labels: frozenset[str]) -> dict[str, frozenset[str]]:
    """Every series name Prometheus stores for rocketq, with the labels it carries there."""
    catalog: dict[str, frozenset[str]] = {}
    for path in SOURCES:
        for name, labels in _declared(path).items():
            catalog[name] = labels | target_labels | SCRAPE_LABELS
    catalog["up"] = target_labels | SCRAPE_LABELS
    pushed = grouping_labels() | SCRAPE_LABELS
    for name, labels in _declared(PUSHED).items():
        catalog[name] = labels | pushed
    return catalog

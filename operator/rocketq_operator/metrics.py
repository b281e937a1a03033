"""The operator's own Prometheus metrics and its /metrics + /healthz HTTP endpoint.

Metrics live in a registry owned by one ``Metrics`` object (not prometheus-client's global
default), so tests and several operators in one process never share counters. The endpoint is
a small aiohttp server inside kopf's event loop: ``/metrics`` in the Prometheus text format and
``/healthz``, which answers 200 while the loop is alive and serving. (kopf's own
``--liveness`` endpoint can be used as well; this one needs no extra flag.)

What it measures: reconcile passes by kind and result, their duration, errors by kind and
error type, pods restarted by reason (rolling, failover, manual), failovers, broker groups
removed after draining, and for DLedger groups what the last pass saw: whether a leader is
followed by a quorum, its term, and each member's lag. Those gauges are replaced per cluster
on every pass (``record_dledger``), so a removed group or member leaves no stale series.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable
from dataclasses import dataclass

import prometheus_client
from aiohttp import web

DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Result(enum.Enum):
    OK = "ok"
    INVALID = "invalid"
    PAUSED = "paused"
    ERROR = "error"


@dataclass(frozen=True)
class DLedgerSample:
    """One DLedger group as a pass saw it: leader followed by a quorum, term, lag per member pod."""

    broker_group: str
    has_leader: bool
    term: int | None
    lags: dict[str, int]


class Metrics:
    def __init__(self) -> None:
        self.registry = prometheus_client.CollectorRegistry(auto_describe=True)
        self.reconciles = prometheus_client.Counter(
            "rocketq_operator_reconciles_total",
            "Reconcile passes by resource kind and result (ok, invalid, paused, error).",
            ["kind", "result"], registry=self.registry)
        self.duration = prometheus_client.Histogram(
            "rocketq_operator_reconcile_duration_seconds", "Duration of reconcile passes.",
            ["kind"], buckets=DURATION_BUCKETS, registry=self.registry)
        self.errors = prometheus_client.Counter(
            "rocketq_operator_reconcile_errors_total", "Reconcile passes that failed, by kind and error type.",
            ["kind", "error"], registry=self.registry)
        self.pod_restarts = prometheus_client.Counter(
            "rocketq_operator_pod_restarts_total", "Broker pods the operator deleted to restart them.",
            ["reason"], registry=self.registry)
        self.failovers = prometheus_client.Counter(
            "rocketq_operator_failovers_total", "MasterSlave failovers performed.",
            ["namespace", "cluster"], registry=self.registry)
        self.groups_removed = prometheus_client.Counter(
            "rocketq_operator_broker_groups_removed_total", "Broker groups removed after draining.",
            ["namespace", "cluster"], registry=self.registry)
        self.dledger_has_leader = prometheus_client.Gauge(
            "rocketq_operator_dledger_has_leader",
            "1 while a DLedger group has a leader followed by a majority (as the operator sees it), else 0.",
            ["namespace", "cluster", "broker_group"], registry=self.registry)
        self.dledger_term = prometheus_client.Gauge(
            "rocketq_operator_dledger_term", "The highest Raft term a DLedger group's members report.",
            ["namespace", "cluster", "broker_group"], registry=self.registry)
        self.dledger_member_lag = prometheus_client.Gauge(
            "rocketq_operator_dledger_member_lag_entries",
            "Committed entries a DLedger member is behind its leader (members that answer).",
            ["namespace", "cluster", "broker_group", "pod"], registry=self.registry)
        self._dledger_groups: dict[tuple[str, str], set[str]] = {}
        self._dledger_members: dict[tuple[str, str], set[tuple[str, str]]] = {}

    def record_dledger(self, namespace: str, cluster: str, samples: Iterable[DLedgerSample]) -> None:
        """Replace a cluster's DLedger gauges with what one pass saw."""
        groups: set[str] = set()
        members: set[tuple[str, str]] = set()
        for sample in samples:
            groups.add(sample.broker_group)
            self.dledger_has_leader.labels(namespace, cluster, sample.broker_group).set(int(sample.has_leader))
            if sample.term is not None:
                self.dledger_term.labels(namespace, cluster, sample.broker_group).set(sample.term)
            else:
                with contextlib.suppress(KeyError):  # nobody answers: no term rather than a stale one
                    self.dledger_term.remove(namespace, cluster, sample.broker_group)
            for pod, lag in sample.lags.items():
                members.add((sample.broker_group, pod))
                self.dledger_member_lag.labels(namespace, cluster, sample.broker_group, pod).set(lag)
        self._drop(namespace, cluster, groups, members)

    def forget_cluster(self, namespace: str, cluster: str) -> None:
        self._drop(namespace, cluster, set(), set())

    def _drop(self, namespace: str, cluster: str, groups: set[str], members: set[tuple[str, str]]) -> None:
        key = (namespace, cluster)
        for group in self._dledger_groups.get(key, set()) - groups:
            for gauge in (self.dledger_has_leader, self.dledger_term):
                with contextlib.suppress(KeyError):
                    gauge.remove(namespace, cluster, group)
        for group, pod in self._dledger_members.get(key, set()) - members:
            with contextlib.suppress(KeyError):
                self.dledger_member_lag.remove(namespace, cluster, group, pod)
        self._dledger_groups[key], self._dledger_members[key] = groups, members
        if not groups and not members:
            del self._dledger_groups[key], self._dledger_members[key]

    def exposition(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


class MetricsServer:
    """Serves /metrics and /healthz until ``close()`` (idempotent)."""

    def __init__(self, metrics: Metrics, host: str, port: int) -> None:
        self._metrics = metrics
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def _serve_metrics(self, _request: web.Request) -> web.Response:
        return web.Response(body=self._metrics.exposition(),
                            headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})

    async def _serve_health(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._serve_metrics)
        app.router.add_get("/healthz", self._serve_health)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self._port

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            with contextlib.suppress(Exception):
                await runner.cleanup()

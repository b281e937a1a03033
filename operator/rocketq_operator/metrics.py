"""The operator's own Prometheus metrics and its /metrics + /healthz HTTP endpoint.

Metrics live in a registry owned by one ``Metrics`` object (not prometheus-client's global
default), so tests and several operators in one process never share counters. The endpoint is
a small aiohttp server inside kopf's event loop: ``/metrics`` in the Prometheus text format and
``/healthz``, which answers 200 while the loop is alive and serving. (kopf's own
``--liveness`` endpoint can be used as well; this one needs no extra flag.)

What it measures: reconcile passes by kind and result, their duration, errors by kind and
error type, pods restarted by reason (rolling, failover, manual), failovers, and broker groups
removed after draining.
"""

from __future__ import annotations

import contextlib
import enum

import prometheus_client
from aiohttp import web

DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Result(enum.Enum):
    OK = "ok"
    INVALID = "invalid"
    PAUSED = "paused"
    ERROR = "error"


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

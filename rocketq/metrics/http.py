"""A small HTTP listener every rocketq process runs beside its remoting port.

It serves two things: ``/metrics``, the Prometheus text exposition of one CollectorRegistry
(each process passes its own, so two in-process servers in a test never mix numbers), and
``/health``, 200 while the given callable says the process serves and 503 otherwise, for
Kubernetes probes. It knows nothing about what the metrics mean; the name server and the
broker define their own collectors. ``MetricsServer`` owns its aiohttp runner: ``start`` binds
(port 0 picks a free port, read back from ``port``), ``close`` stops it and may be called twice.

The listener is secondary to the process's protocol port: ``start_beside`` starts it for a
server and, when its port cannot be bound (taken by another process), logs one ERROR line and
lets the server go on serving the protocol without it rather than die.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import prometheus_client
from aiohttp import web
from prometheus_client import CollectorRegistry

from rocketq import settings
from rocketq.metrics import announcing

log = logging.getLogger(__name__)


class MetricsServer:
    def __init__(
        self,
        registry: CollectorRegistry,
        healthy: Callable[[], bool],
        *,
        host: str = "0.0.0.0",
        port: int = 0,
    ) -> None:
        self._registry = registry
        self._healthy = healthy
        self._host = host
        self._requested_port = port
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("metrics server not started")
        return self._port

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/health", self._health)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._requested_port, reuse_address=True)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = _bound_port(runner, self._requested_port)

    async def close(self) -> None:
        """Stop serving. Idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _metrics(self, _request: web.Request) -> web.Response:
        body = prometheus_client.generate_latest(self._registry)
        return web.Response(body=body, headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})

    async def _health(self, _request: web.Request) -> web.Response:
        if self._healthy():
            return web.Response(text="ok\n")
        return web.Response(status=503, text="unavailable\n")


async def start_beside(
    process: str, registry: CollectorRegistry, healthy: Callable[[], bool], *, host: str, port: int
) -> MetricsServer | None:
    """The running listener for ``process``, or None when it is off (-1) or its port is taken."""
    if port == settings.PORT_OFF:
        log.info("%s: /metrics and /health are off (metricsPort=-1)", process)
        return None
    server = MetricsServer(registry, healthy, host=host, port=port)
    try:
        await server.start()
    except OSError as exc:
        log.error("%s: cannot serve /metrics and /health on %s:%d (%s); serving without them",
                  process, host, port, exc.strerror or exc)
        return None
    log.info("%s", announcing.line(process, server.port))
    return server


def _bound_port(runner: web.AppRunner, requested: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return requested

"""A running name server: the remoting listener, the liveness scan and the metrics endpoint.

``NamesrvServer`` owns everything it starts. ``start`` loads the KV file, binds the remoting
port with the handler table from ``processor``, starts the scan task and (unless metricsPort
is -1) the HTTP listener for /metrics and /health; a metrics port that cannot be bound is logged
and the name server serves without it. ``close`` stops them in reverse order, waits for each
(a failing step is logged and the others still run), and may be called any number of times.

Broker liveness, as in RocketMQ: every REGISTER_BROKER is a heartbeat. Every
``scanNotActiveBrokerInterval`` the scan drops brokers silent for longer than
``brokerChannelExpiredTime`` (or their own heartbeatTimeoutMillis) and aborts their
connections; a broker whose connection closes is dropped at once, without waiting for the scan.
Routes live only in memory: after a restart they come back as brokers re-register (every 30 s).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable

from rocketq.metrics import http as metrics_http
from rocketq.metrics.http import MetricsServer
from rocketq.namesrv import processor
from rocketq.namesrv.kvconfig import KVConfig
from rocketq.namesrv.metrics import NamesrvMetrics, RemovalReason
from rocketq.namesrv.routes import RouteTable
from rocketq.namesrv.settings import NamesrvSettings
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingServer
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)


class State(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    CLOSED = "closed"


class NamesrvServer:
    def __init__(self, settings: NamesrvSettings, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.state = State.NEW
        self.routes = RouteTable(delete_topic_with_registration=settings.delete_topic_with_broker_registration)
        self.metrics = NamesrvMetrics(self.routes)
        self._clock = clock
        self._remoting: RemotingServer | None = None
        self._http: MetricsServer | None = None
        self._scan_task = OwnedTask("namesrv-scan-not-active-broker", self._scan_loop)

    @property
    def port(self) -> int:
        if self._remoting is None:
            raise RuntimeError("name server not started")
        return self._remoting.port

    @property
    def metrics_port(self) -> int | None:
        return None if self._http is None else self._http.port

    async def start(self) -> None:
        if self.state is not State.NEW:
            raise RuntimeError(f"cannot start a name server that is {self.state.value}")
        self.state = State.STARTING
        try:
            await self._start()
        except BaseException:
            await self.close()
            raise
        self.state = State.RUNNING

    async def _start(self) -> None:
        s = self.settings
        kv = await asyncio.to_thread(KVConfig.load, s.kv_config_path)
        ctx = processor.Context(self.routes, kv, self._clock, s.order_message_enable)
        self._remoting = RemotingServer(
            processor.handlers(ctx, self.metrics.count_request),
            host=s.bind_address, port=s.listen_port, max_frame_size=s.frame_max_length,
            name="namesrv", on_connection_closed=self._connection_closed, limits=s.connection_limits)
        self.metrics.registry.register(self._remoting.collector())
        await self._remoting.start()
        self._http = await metrics_http.start_beside(
            "namesrv", self.metrics.registry, self.serving, host=s.bind_address, port=s.metrics_port)
        self._scan_task.start()

    def serving(self) -> bool:
        return self.state is State.RUNNING

    async def close(self) -> None:
        """Stop scanning, stop the metrics listener, close every connection. Idempotent."""
        if self.state is State.CLOSED:
            return
        self.state = State.CLOSED
        await self._scan_task.stop()
        http, self._http = self._http, None
        for what, closing in (("metrics listener", http), ("remoting port", self._remoting)):
            if closing is None:
                continue
            try:
                await closing.close()
            except Exception:
                log.exception("name server shutdown: closing the %s failed; continuing", what)

    # --- liveness -----------------------------------------------------------------------------------

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.scan_interval_s)
            try:
                self.scan_not_active_brokers()
            except Exception:
                # A scan that fails once must not end liveness checking for the process's life.
                log.exception("scan for silent brokers failed; retrying at the next interval")

    def scan_not_active_brokers(self) -> int:
        """One scan: drop silent brokers and abort their connections; how many were dropped."""
        expired = self.routes.expire(self._clock(), self.settings.broker_timeout_s)
        for live in expired:
            log.warning("broker %s silent for over %.0f s: removed from routes", live.broker_addr,
                        live.timeout or self.settings.broker_timeout_s)
            if isinstance(live.connection, Connection):
                live.connection.abort()
        self.metrics.count_removed(RemovalReason.EXPIRED, len(expired))
        return len(expired)

    def _connection_closed(self, conn: Connection) -> None:
        removed = self.routes.remove_by_connection(conn)
        for addr in removed:
            log.info("broker %s connection %s closed: removed from routes", addr, conn.remote_addr)
        self.metrics.count_removed(RemovalReason.CONNECTION_CLOSED, len(removed))


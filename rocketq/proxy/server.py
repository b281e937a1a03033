"""The gRPC server that serves ``MessagingService`` (grpc.aio), in either proxy mode.

CLUSTER (``rocketq proxy``): routes name the address each client dialled with the proxy's own
gRPC port, as RocketMQ's ``ClusterTopicRouteService`` does, so clients behind a Service or a
load balancer keep using that address. LOCAL (inside a broker): routes name the broker's host
(``grpcAdvertisedHost`` if set) with the gRPC port.

The same server answers ``grpc.health.v1.Health`` (grpcio-health-checking): SERVING for the
whole server ("") and for ``apache.rocketmq.v2.MessagingService`` once the port is bound,
NOT_SERVING from the moment the proxy starts to stop. Kubernetes' gRPC probes (the operator's
proxy Deployment) and ``grpc_health_probe`` ask it.
"""

from __future__ import annotations

import logging
from typing import Final

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from rocketq.acl.reload import AclTable
from rocketq.acl.settings import AclSettings
from rocketq.metrics import http as metrics_http
from rocketq.metrics.http import MetricsServer
from rocketq.proxy import routing, tls
from rocketq.proxy.backend import PROXY_PRODUCER_GROUP, Backend
from rocketq.proxy.clients import ClientTable
from rocketq.proxy.credentials import Credentials
from rocketq.proxy.metrics import ProxyMetrics
from rocketq.proxy.service import MessagingService
from rocketq.proxy.settings import ProxyMode, ProxySettings
from rocketq.proxy.transactions import Transactions
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

log = logging.getLogger(__name__)

STOP_GRACE_S: Final = 5.0
"""How long open streams (long polls, telemetry) get to finish when the proxy stops."""
MAX_MESSAGE_BYTES: Final = -1
"""No gRPC size limit of its own: the proxy checks bodies against maxMessageSize (in-band status)."""
LOOPBACK: Final = "127.0.0.1"
HEALTH_SERVICES: Final = ("", pb.DESCRIPTOR.package + ".MessagingService")
"""What the health service reports on: the server as a whole, and MessagingService by name."""


def certificate_hosts(settings: ProxySettings, local_host: str) -> tuple[str, ...]:
    """The names a test-mode certificate carries: loopback and the host routes advertise."""
    return tuple(h for h in ("localhost", LOOPBACK, settings.advertised_host, local_host) if h)


class ProxyServer:
    def __init__(self, settings: ProxySettings, namesrv_addr: str | None = None, local_host: str = LOOPBACK,
                 acl_settings: AclSettings | None = None, key_pair: tls.KeyPair | None = None,
                 credentials: Credentials | None = None, acl_table: AclTable | None = None) -> None:
        """``key_pair``: what a caller already loaded (``tls.key_pair``); else loaded here (SettingsError if bad).
        ``credentials``: the proxy's own account, signing its remoting calls (``rocketq.proxy.credentials``).
        ``acl_table``: the accounts clients are checked against when ``aclEnable`` (a LOCAL endpoint
        shares its broker's); None: the proxy loads and watches ``acl_settings``' file itself."""
        self.settings = settings
        self.acl_settings = acl_settings or AclSettings()
        self.acl_table = acl_table
        self._owns_acl_table = False
        table = ClientTable()
        self.backend = Backend(namesrv_addr or settings.namesrv_addr, max_message_size=settings.max_message_size,
                               transactions=Transactions(table, PROXY_PRODUCER_GROUP), credentials=credentials)
        self.port = settings.grpc_server_port
        self._local_host = settings.advertised_host or local_host
        self.key_pair = key_pair or tls.key_pair(settings, certificate_hosts(settings, local_host))
        self.metrics = ProxyMetrics(settings.rocketmq_cluster_name, settings.proxy_mode.value, table.count_by_type)
        self.service = MessagingService(settings, self.backend, table, self._advertised, metrics=self.metrics)
        self._server: grpc.aio.Server | None = None
        self._http: MetricsServer | None = None
        """CLUSTER mode's /metrics and /health (LOCAL: the broker serves ``metrics.registry``)."""
        self.health = health.aio.HealthServicer()

    def _advertised(self, dialled: pb.Endpoints) -> pb.Endpoints:
        if self.settings.proxy_mode is ProxyMode.CLUSTER and dialled.addresses:
            return pb.Endpoints(scheme=dialled.scheme, addresses=[
                pb.Address(host=a.host, port=self.port) for a in dialled.addresses])
        return routing.endpoints(self._local_host, self.port)

    async def start(self) -> None:
        if self.acl_settings.acl_enable:
            await self._start_acl()
        await self.backend.start()
        self.service.start()
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                                          ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
        grpc_v2.add_MessagingServiceServicer_to_server(self.service, server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        address = f"{self.settings.bind_address}:{self.settings.grpc_server_port}"
        if self.key_pair is None:
            self.port = server.add_insecure_port(address)
        else:
            self.port = server.add_secure_port(address, self.key_pair.credentials())
        if self.port == 0:
            raise OSError(f"cannot bind the gRPC port {self.settings.bind_address}:{self.settings.grpc_server_port}")
        self._server = server
        await server.start()
        for name in HEALTH_SERVICES:
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("gRPC endpoint (%s mode) on port %d", self.settings.proxy_mode.value, self.port)
        if self.settings.proxy_mode is ProxyMode.CLUSTER:
            self._http = await metrics_http.start_beside(
                "proxy", self.metrics.registry, lambda: self._server is not None,
                host=self.settings.bind_address, port=self.settings.metrics_port)
        if self.key_pair is not None:
            log.info("gRPC endpoint serves TLS, certificate SHA-256 %s%s", self.key_pair.fingerprint,
                     " (self-signed, tlsTestModeEnable)" if self.settings.tls_test_mode_enable else "")

    @property
    def metrics_port(self) -> int | None:
        return self._http.port if self._http else None

    async def _start_acl(self) -> None:
        """Check clients against plain_acl.yml (and ``acl/*.yml`` beside it), re-read when they change,
        as the broker does (``rocketq.acl.reload``). AclFileError: a config error, nothing binds."""
        table = self.acl_table
        if table is None:
            table = self.acl_table = AclTable(self.acl_settings.path())
            await table.start()
            self._owns_acl_table = True
        self.service.acl = lambda: table.config

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self._server is not None:
            await self.health.enter_graceful_shutdown()  # NOT_SERVING while streams finish
            await self._server.stop(STOP_GRACE_S)
            self._server = None
        await self.service.close()  # after the streams ended: unregisters clients, gives back held messages
        await self.backend.close()
        if self._owns_acl_table and self.acl_table is not None:
            await self.acl_table.close()

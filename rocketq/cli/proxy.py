"""``rocketq proxy``: the RocketMQ 5 gRPC endpoint in CLUSTER mode, until SIGTERM or SIGINT.

Reads an optional rmq-proxy.json (RocketMQ proxy's keys: ``grpcServerPort``,
``rocketMQClusterName``, ``namesrvAddr``, ``metricsPort``, ...); ``-n``, ``--grpc-port`` and
``--metrics-port`` override it. A bad
value stops it before anything binds (exit 2, the key named); keys it does not use are listed in
one warning; unreadable or mismatched TLS files (``tls.server.mode=enforcing``) stop it too
(exit 2). When serving it prints ``rocketq proxy listening on HOST:PORT``.
"""

from __future__ import annotations

import logging
import sys

import click

from rocketq.acl.plainacl import AclFileError
from rocketq.cli import serving
from rocketq.proxy import settings as proxy_settings
from rocketq.settings import SettingsError

log = logging.getLogger("rocketq.proxy")


@click.command("proxy")
@click.option("-c", "--config", type=click.Path(dir_okay=False), help="rmq-proxy.json (RocketMQ proxy keys)")
@click.option("-n", "--namesrv-addr", help="name servers, host:port;host:port (overrides namesrvAddr)")
@click.option("--grpc-port", type=int, help="gRPC port (overrides grpcServerPort; 0 = any free port)")
@click.option("--metrics-port", type=int,
              help="HTTP /metrics and /health port (overrides metricsPort; 0 = any free port, -1 = off)")
def command(config: str | None, namesrv_addr: str | None, grpc_port: int | None, metrics_port: int | None) -> None:
    """Serve RocketMQ 5 (gRPC) clients in front of the brokers a name server lists."""
    overrides = {"proxyMode": "CLUSTER"}
    if namesrv_addr is not None:
        overrides["namesrvAddr"] = namesrv_addr
    if grpc_port is not None:
        overrides["grpcServerPort"] = str(grpc_port)
    if metrics_port is not None:
        overrides["metricsPort"] = str(metrics_port)
    try:
        values = proxy_settings.read_json(config) if config else {}
        settings, acl, unknown = proxy_settings.load(values, overrides)
    except SettingsError as exc:
        sys.exit(serving.fail(f"invalid configuration: {exc}", serving.EXIT_BAD_CONFIG))
    if unknown:
        log.warning("ignoring config keys rocketq proxy does not use: %s", ", ".join(unknown))
    from rocketq.proxy.server import ProxyServer  # grpc loads only when a proxy runs

    try:
        server = ProxyServer(settings, acl_settings=acl)  # reads and checks the TLS files, if any
    except SettingsError as exc:
        sys.exit(serving.fail(f"invalid configuration: {exc}", serving.EXIT_BAD_CONFIG))
    sys.exit(serving.run(lambda: server,
                         lambda s: f"rocketq proxy listening on {settings.bind_address}:{s.port}",
                         (AclFileError,)))

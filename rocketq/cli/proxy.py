"""``rocketq proxy``: the RocketMQ 5 gRPC endpoint in CLUSTER mode, until SIGTERM or SIGINT.

Reads an optional rmq-proxy.json (RocketMQ proxy's keys: ``grpcServerPort``,
``rocketMQClusterName``, ``namesrvAddr``, ...); ``-n`` and ``--grpc-port`` override it. A bad
value stops it before anything binds (exit 2, the key named); keys it does not use are listed in
one warning; unreadable or mismatched TLS files (``tls.server.mode=enforcing``) stop it too
(exit 2), as does ``enableAclRpcHookForClusterMode=true`` without a usable account
(rocketq/proxy/credentials.py). When serving it prints ``rocketq proxy listening on HOST:PORT``.
"""

from __future__ import annotations

import logging
import sys

import click

from rocketq.acl.plainacl import AclFileError
from rocketq.cli import serving
from rocketq.proxy import credentials
from rocketq.proxy import settings as proxy_settings
from rocketq.settings import SettingsError

log = logging.getLogger("rocketq.proxy")


@click.command("proxy")
@click.option("-c", "--config", type=click.Path(dir_okay=False), help="rmq-proxy.json (RocketMQ proxy keys)")
@click.option("-n", "--namesrv-addr", help="name servers, host:port;host:port (overrides namesrvAddr)")
@click.option("--grpc-port", type=int, help="gRPC port (overrides grpcServerPort; 0 = any free port)")
def command(config: str | None, namesrv_addr: str | None, grpc_port: int | None) -> None:
    """Serve RocketMQ 5 (gRPC) clients in front of the brokers a name server lists."""
    overrides = {"proxyMode": "CLUSTER"}
    if namesrv_addr is not None:
        overrides["namesrvAddr"] = namesrv_addr
    if grpc_port is not None:
        overrides["grpcServerPort"] = str(grpc_port)
    try:
        values = proxy_settings.read_json(config) if config else {}
        settings, acl, unknown = proxy_settings.load(values, overrides)
        # reads tools.yml when that is where the account is
        signing = credentials.resolve(proxy_settings.load_inner_client(values, overrides))
    except SettingsError as exc:
        sys.exit(serving.fail(f"invalid configuration: {exc}", serving.EXIT_BAD_CONFIG))
    if unknown:
        log.warning("ignoring config keys rocketq proxy does not use: %s", ", ".join(unknown))
    if signing is not None and not acl.acl_enable:
        log.warning("signing broker calls as %s while aclEnable=false: every gRPC client acts with that "
                    "account's rights", signing.access_key)
    from rocketq.proxy.server import ProxyServer  # grpc loads only when a proxy runs

    try:
        # reads and checks the TLS files, if any
        server = ProxyServer(settings, acl_settings=acl, credentials=signing)
    except SettingsError as exc:
        sys.exit(serving.fail(f"invalid configuration: {exc}", serving.EXIT_BAD_CONFIG))
    sys.exit(serving.run(lambda: server,
                         lambda s: f"rocketq proxy listening on {settings.bind_address}:{s.port}",
                         (AclFileError,)))

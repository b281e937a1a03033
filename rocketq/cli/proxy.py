"""``rocketq proxy``: the RocketMQ 5 gRPC endpoint in CLUSTER mode, until SIGTERM or SIGINT.

Reads an optional rmq-proxy.json (RocketMQ proxy's keys: ``grpcServerPort``,
``rocketMQClusterName``, ``namesrvAddr``, ``metricsPort``, ...); ``-n``, ``--grpc-port`` and
``--metrics-port`` override it. A bad
value stops it before anything binds (exit 2, the key named); keys it does not use are listed in
one warning; unreadable or mismatched TLS files (``tls.server.mode=enforcing``) stop it too
(exit 2), as does ``enableAclRpcHookForClusterMode=true`` without a usable account
(rocketq/proxy/credentials.py). When serving it prints ``rocketq proxy listening on HOST:PORT``.

``rocketq proxy health --port 8081 [--tls]`` asks a running proxy's health service instead
(``rocketq.proxy.healthcheck``): exit 0 when it answers SERVING, 1 otherwise. It is the operator's
liveness probe for TLS proxies, which the kubelet's plaintext ``grpc`` probe cannot ask.
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

EXIT_NOT_SERVING = 1


@click.group("proxy", invoke_without_command=True)
@click.option("-c", "--config", type=click.Path(dir_okay=False), help="rmq-proxy.json (RocketMQ proxy keys)")
@click.option("-n", "--namesrv-addr", help="name servers, host:port;host:port (overrides namesrvAddr)")
@click.option("--grpc-port", type=int, help="gRPC port (overrides grpcServerPort; 0 = any free port)")
@click.option("--metrics-port", type=int,
              help="HTTP /metrics and /health port (overrides metricsPort; 0 = any free port, -1 = off)")
@click.pass_context
def command(ctx: click.Context, config: str | None, namesrv_addr: str | None, grpc_port: int | None,
            metrics_port: int | None) -> None:
    """Serve RocketMQ 5 (gRPC) clients in front of the brokers a name server lists."""
    if ctx.invoked_subcommand is None:
        _serve(config, namesrv_addr, grpc_port, metrics_port)


def _serve(config: str | None, namesrv_addr: str | None, grpc_port: int | None, metrics_port: int | None) -> None:
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


@command.command("health")
@click.option("--port", type=click.IntRange(1, 65535), default=proxy_settings.DEFAULT_GRPC_PORT, show_default=True,
              help="the proxy's gRPC port")
@click.option("--host", default="127.0.0.1", show_default=True, help="where the proxy listens")
@click.option("--tls", is_flag=True, help="the port speaks TLS (tls.server.mode=enforcing); the certificate "
                                          "is not verified: this checks a port, it does not authenticate it")
@click.option("--service", default="", help="the health service name; empty = the whole server")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=5.0, show_default=True,
              help="seconds for the handshake and for the call")
def health(port: int, host: str, tls: bool, service: str, timeout: float) -> None:
    """Ask a running proxy's grpc.health.v1 service: exit 0 when SERVING, 1 otherwise."""
    from rocketq.proxy import healthcheck  # grpc loads only for the check

    answer = healthcheck.check(port, host=host, tls=tls, service=service, timeout=timeout)
    if answer.serving:
        click.echo(answer.detail)
        return
    click.echo(f"not serving: {answer.detail}", err=True)
    sys.exit(EXIT_NOT_SERVING)


if __name__ == "__main__":
    # ``python -m rocketq.cli.proxy health ...``: the probe's entry, without importing every other
    # rocketq subcommand as the ``rocketq`` group does (a fifth of the CPU per probe run)
    command(prog_name="rocketq proxy")

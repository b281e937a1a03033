"""``rocketq namesrv``: run a name server until SIGTERM or SIGINT.

Reads an optional namesrv.conf with RocketMQ's keys (``listenPort``, ``kvConfigPath``, ...);
``-p`` and ``--metrics-port`` override the file. A bad value (a port outside 0..65535 included)
stops it before anything binds, with the key named and exit code 2, as does a damaged KV file;
keys it does not use are listed once in a warning (``serving`` lists the exit codes). When it
is serving it prints ``rocketq namesrv listening on HOST:PORT`` (``rocketq local`` and the tests
wait for that line), and on a signal it closes every connection and exits 0.
"""

from __future__ import annotations

import logging
import sys

import click

from rocketq import settings
from rocketq.cli import serving
from rocketq.namesrv.kvconfig import KVConfig, KVConfigError
from rocketq.namesrv.server import NamesrvServer
from rocketq.namesrv.settings import NamesrvSettings
from rocketq.settings import SettingsError

log = logging.getLogger("rocketq.namesrv")

def load(config: str | None, overrides: dict[str, str]) -> tuple[NamesrvSettings, list[str]]:
    """Settings from the file plus command-line overrides, and the keys nothing uses."""
    values = settings.read_properties(config) if config else {}
    values.update(overrides)
    return settings.build(NamesrvSettings, values), settings.unknown_keys(values, [NamesrvSettings])


@click.command("namesrv")
@click.option("-c", "--config", type=click.Path(dir_okay=False), help="namesrv.conf (RocketMQ keys)")
@click.option("-p", "--listen-port", type=int, help="remoting port (overrides listenPort; 0 = any free port)")
@click.option("--metrics-port", type=int,
              help="HTTP /metrics and /health port (overrides metricsPort; 0 = any free port, -1 = off)")
def command(config: str | None, listen_port: int | None, metrics_port: int | None) -> None:
    """Run a name server: the route registry brokers register with and clients ask."""
    overrides = {}
    if listen_port is not None:
        overrides["listenPort"] = str(listen_port)
    if metrics_port is not None:
        overrides["metricsPort"] = str(metrics_port)
    try:
        namesrv_settings, unknown = load(config, overrides)
    except SettingsError as exc:
        sys.exit(serving.fail(f"invalid configuration: {exc}", serving.EXIT_BAD_CONFIG))
    if unknown:
        log.warning("ignoring config keys rocketq namesrv does not use: %s", ", ".join(unknown))
    try:
        # Read once here so a damaged file is a one-line error, not a traceback from the loop.
        KVConfig.load(namesrv_settings.kv_config_path)
    except KVConfigError as exc:
        sys.exit(serving.fail(f"cannot load kvConfig: {exc}", serving.EXIT_BAD_CONFIG))
    server = NamesrvServer(namesrv_settings)
    sys.exit(serving.run(
        lambda: server,
        lambda _started: f"rocketq namesrv listening on {namesrv_settings.bind_address}:{server.port}",
        (KVConfigError,),
    ))

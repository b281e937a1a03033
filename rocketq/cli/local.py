"""``rocketq local up|down|status``: a whole cluster as local processes, for laptops and demos."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rocketq.local.cluster import ClusterLayout, LocalCluster, LocalClusterError, ProcessRecord

DEFAULT_DIR = Path.home() / ".rocketq" / "local"


def _cluster(directory: str, **kwargs: object) -> LocalCluster:
    return LocalCluster(ClusterLayout(Path(directory).expanduser(), **kwargs))  # type: ignore[arg-type]


@click.group("local")
def command() -> None:
    """Run a local cluster: one name server and N broker groups as processes."""


@command.command("up")
@click.option("-d", "--dir", "directory", default=str(DEFAULT_DIR), show_default=True, help="cluster directory")
@click.option("-b", "--brokers", default=2, show_default=True, type=click.IntRange(1, 26), help="broker groups")
@click.option(
    "--namesrv-port", default=9876, show_default=True, type=click.IntRange(0, 65535), help="0 = any free port"
)
@click.option(
    "--broker-port",
    default=10911,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="first broker's port; the next ones +10; 0 = free ports",
)
@click.option(
    "--metrics-port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="name server's /metrics port; brokers +1, +2, ...; 0 = each process takes a free port",
)
@click.option("--flush", type=click.Choice(["ASYNC_FLUSH", "SYNC_FLUSH"]), default="ASYNC_FLUSH", show_default=True)
def up(directory: str, brokers: int, namesrv_port: int, broker_port: int, metrics_port: int, flush: str) -> None:
    """Start the cluster and return once every process is serving."""
    cluster = _cluster(
        directory,
        broker_groups=brokers,
        namesrv_port=namesrv_port,
        broker_base_port=broker_port,
        metrics_base_port=metrics_port,
        flush_disk_type=flush,
    )
    try:
        state = cluster.up()
    except LocalClusterError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    for p in state.processes:
        click.echo(f"{p.name:<10} pid {p.pid:<8} {p.address:<22} metrics {_metrics(p)}  log {p.log}")
    click.echo(f"export NAMESRV_ADDR={state.namesrv}")


@command.command("down")
@click.option("-d", "--dir", "directory", default=str(DEFAULT_DIR), show_default=True)
def down(directory: str) -> None:
    """Stop every process the cluster directory recorded (by PID)."""
    try:
        stopped = _cluster(directory).down()
    except LocalClusterError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    for p in stopped:
        click.echo(f"stopped {p.name} (pid {p.pid})")


@command.command("status")
@click.option("-d", "--dir", "directory", default=str(DEFAULT_DIR), show_default=True)
def status(directory: str) -> None:
    """Show each recorded process and whether it is alive."""
    try:
        rows = _cluster(directory).status()
    except LocalClusterError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    for p, alive in rows:
        click.echo(f"{p.name:<10} pid {p.pid:<8} {p.address:<22} metrics {_metrics(p):<7} "
                   f"{'running' if alive else 'stopped'}")
    if not all(alive for _p, alive in rows):
        sys.exit(3)


def _metrics(record: ProcessRecord) -> str:
    return "off" if record.metrics_port is None else f":{record.metrics_port}"


@command.command("demo")
@click.option("-m", "--messages", default=100_000, show_default=True, type=click.IntRange(100),
              help="messages to produce and consume")
@click.option("-s", "--size", default=1024, show_default=True, type=click.IntRange(16, 4 * 1024 * 1024))
def demo(messages: int, size: int) -> None:
    """Start a local cluster, run a produce/consume workload, print the results, stop it."""
    from rocketq.local import demo

    try:
        ok = demo.run(demo.DemoPlan(messages=messages, size=size))
    except LocalClusterError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    sys.exit(0 if ok else 1)

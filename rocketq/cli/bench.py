"""``rocketq bench producer|consumer``: throughput and latency against a running cluster."""

from __future__ import annotations

import os

import click

from rocketq.bench.loadgen import MAX_PROCESSES, SendMode, run_consumers, run_producers


def _namesrv(value: str | None) -> str:
    addr = value or os.environ.get("NAMESRV_ADDR", "")
    if not addr:
        raise click.UsageError("give -n host:port or set NAMESRV_ADDR")
    return addr


@click.group("bench")
def command() -> None:
    """Benchmarks in the style of RocketMQ's benchmark tools (a line per second, then a summary)."""


@command.command("producer")
@click.option("-n", "--namesrv-addr", help="name servers (or NAMESRV_ADDR)")
@click.option("-t", "--topic", default="BenchmarkTest", show_default=True)
@click.option("-s", "--size", default=1024, show_default=True, type=click.IntRange(16, 4 * 1024 * 1024),
              help="message body bytes")
@click.option("-w", "--concurrency", default=32, show_default=True, type=click.IntRange(1, 4096),
              help="sends in flight at once (mode async: send_async calls kept in flight by one loop)")
@click.option("-m", "--mode", type=click.Choice([m.value for m in SendMode]), default="sync", show_default=True)
@click.option("-b", "--batch-size", default=32, show_default=True, type=click.IntRange(1, 1024),
              help="messages per batch send (mode batch)")
@click.option("-c", "--count", type=click.IntRange(1), help="messages to send")
@click.option("-d", "--duration", type=click.FloatRange(0.1), help="seconds to run (default 30 without --count)")
@click.option("-r", "--rate", type=click.FloatRange(1), help="messages per second in all (default: as fast as taken)")
@click.option("-p", "--processes", default=1, show_default=True, type=click.IntRange(1, MAX_PROCESSES),
              help="producer processes sharing the count, rate and concurrency settings (each -w in flight)")
def producer(namesrv_addr: str | None, topic: str, size: int, concurrency: int, mode: str, batch_size: int,
             count: int | None, duration: float | None, rate: float | None, processes: int) -> None:
    """Send messages as fast as the cluster takes them, or at --rate."""
    result = run_producers(
        processes, click.echo, namesrv=_namesrv(namesrv_addr), topic=topic, size=size, concurrency=concurrency,
        mode=SendMode(mode), batch_size=batch_size, total=count, duration=duration if count or duration else 30.0,
        rate=rate,
    )
    click.echo(f"sent {result.sent} in {result.elapsed:.2f}s = {result.tps:.0f} msg/s, failed {result.failed}; "
               f"send RT {result.latency.summary()}")


@command.command("consumer")
@click.option("-n", "--namesrv-addr", help="name servers (or NAMESRV_ADDR)")
@click.option("-t", "--topic", default="BenchmarkTest", show_default=True)
@click.option("-g", "--group", default="benchmark_consumer", show_default=True)
@click.option("-c", "--count", type=click.IntRange(1), help="stop after this many messages")
@click.option("-d", "--duration", default=60.0, show_default=True, type=click.FloatRange(0.1),
              help="stop after this many seconds")
@click.option("--from-first/--from-last", default=False, show_default=True, help="where a new group starts")
@click.option("-p", "--processes", default=1, show_default=True, type=click.IntRange(1, MAX_PROCESSES),
              help="consumer processes in the group (the queues are balanced over them)")
def consumer(namesrv_addr: str | None, topic: str, group: str, count: int | None, duration: float,
             from_first: bool, processes: int) -> None:
    """Consume benchmark messages and report TPS and end-to-end latency (send -> listener)."""
    result = run_consumers(processes, duration, click.echo, namesrv=_namesrv(namesrv_addr), topic=topic,
                           group=group, expected=count, consume_from_first=from_first)
    click.echo(f"received {result.received} in {result.elapsed:.2f}s = {result.tps:.0f} msg/s, "
               f"duplicates {result.duplicates}; end-to-end {result.latency.summary()}")

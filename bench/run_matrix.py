"""The benchmark matrix of docs/benchmarks.md, with one command.

    .venv/bin/python bench/run_matrix.py [--scale 1.0] [--only sync,batch,...] [--json out.json]

For each flush mode it starts a local cluster (``rocketq local up``: one name server, one
broker, free ports, a temporary directory), runs the scenarios below with ``rocketq bench`` as
separate processes, and stops the cluster. Each row reports the client's summary line, the
wall time, and the CPU time the broker process and the client processes used per message
(from /proc and the children's rusage; the client's net of its processes' start-up, measured
once per cluster with a one-message run): on a shared machine CPU per message is steadier
than throughput, and together they show which side limits. ``calibrate()`` times a fixed
Python loop before and after, to tell how fast the machine was while the rows were taken.

Scenarios (1 KiB messages, a fresh topic each):

========== =========================================================================
sync       ``bench producer -m sync -w 32`` (32 sends in flight from one process)
sync-p2    the same from two producer processes (``-p 2``, 16 in flight each)
async      ``-m async -w 32``
oneway     ``-m oneway -w 32`` (client-side rate: nothing is acknowledged)
batch      ``-m batch -w 8 -b 32`` (8 batches of 32 in flight)
consume    ``bench consumer --from-first`` over what ``batch`` stored
e2e        a consumer from the last offset while ``-m batch -b 16 -w 8 --rate 10000`` produces:
           end-to-end latency (message created -> listener) at 10 000 msg/s
e2e-oneway the same with ``-m oneway -w 32 --rate 10000``
e2e-sync   the same with ``-m sync -w 32 --rate 2000`` (what plain sync sends sustain here)
========== =========================================================================

Under SYNC_FLUSH only sync, batch and e2e run by default. Nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROCKETQ = [sys.executable, "-m", "rocketq", "--log-level", "WARNING"]
TICKS = os.sysconf("SC_CLK_TCK")
SUMMARY = re.compile(r"^(sent|received) (\d+) in ([\d.]+)s = (\d+) msg/s.*$", re.MULTILINE)
PERCENTILES = re.compile(r"p50 ([\d.]+) ms, p99 ([\d.]+) ms")


@dataclass
class Row:
    flush: str
    scenario: str
    command: str
    messages: int
    rate: float
    p50_ms: float
    p99_ms: float
    wall_s: float
    broker_us_per_msg: float
    client_us_per_msg: float
    summary: str


class Cluster:
    """``rocketq local up``/``down`` around a block, with the broker's PID for CPU accounting."""

    def __init__(self, directory: Path, flush: str) -> None:
        self.directory, self.flush = directory, flush
        self.namesrv = ""
        self.broker_pid = 0

    def __enter__(self) -> Cluster:
        out = subprocess.run(
            [*ROCKETQ, "local", "up", "-d", str(self.directory), "--namesrv-port", "0", "--broker-port", "0",
             "--metrics-port", "0", "-b", "1", "--flush", self.flush],
            check=True, capture_output=True, text=True).stdout
        self.namesrv = re.search(r"NAMESRV_ADDR=(\S+)", out).group(1)  # type: ignore[union-attr]
        self.broker_pid = int(re.search(r"broker-a\s+pid (\d+)", out).group(1))  # type: ignore[union-attr]
        return self

    def __exit__(self, *_exc: object) -> None:
        subprocess.run([*ROCKETQ, "local", "down", "-d", str(self.directory)], check=False, capture_output=True)

    def broker_cpu(self) -> float:
        fields = Path(f"/proc/{self.broker_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cluster: Cluster, args: list[str]) -> tuple[str, float, float, float]:
    """Run one ``rocketq bench`` command: its output, wall seconds, broker and client CPU seconds."""
    broker0, client0, wall0 = cluster.broker_cpu(), _children_cpu(), time.perf_counter()
    out = subprocess.run([*ROCKETQ, "bench", *args], check=True, capture_output=True, text=True,
                         env={**os.environ, "NAMESRV_ADDR": cluster.namesrv}).stdout
    return (out, time.perf_counter() - wall0, cluster.broker_cpu() - broker0, _children_cpu() - client0)


def calibrate() -> float:
    """Nanoseconds per iteration of a fixed loop of Python calls: the machine's speed right now."""
    def step(x: int) -> int:
        return x + 1

    best = float("inf")
    for _ in range(5):
        started, value = time.process_time(), 0
        for _ in range(200_000):
            value = step(value)
        best = min(best, (time.process_time() - started) / 200_000 * 1e9)
    return best


def _row(flush: str, scenario: str, args: list[str], out: str, wall: float, broker: float, client: float) -> Row:
    summary = SUMMARY.findall(out)
    line = next((m.group(0) for m in SUMMARY.finditer(out)), out.strip().splitlines()[-1] if out.strip() else "")
    messages = int(summary[-1][1]) if summary else 0
    rate = float(summary[-1][3]) if summary else 0.0
    pct = PERCENTILES.search(line)
    p50, p99 = (float(pct.group(1)), float(pct.group(2))) if pct else (0.0, 0.0)
    per = 1e6 / messages if messages else 0.0
    return Row(flush, scenario, "rocketq bench " + " ".join(args), messages, rate, p50, p99, round(wall, 2),
               round(broker * per, 1), round(client * per, 1), line)


def _producer(topic: str, mode: str, count: int, *extra: str) -> list[str]:
    return ["producer", "-t", topic, "-m", mode, "-c", str(count), *extra]


def run_flush_mode(flush: str, scenarios: list[str], scale: float, report: list[Row]) -> None:
    n_single, n_batch, n_e2e = int(50_000 * scale), int(300_000 * scale), int(100_000 * scale)
    stamp = int(time.time())
    with tempfile.TemporaryDirectory(prefix="rocketq-matrix-") as tmp, Cluster(Path(tmp), flush) as cluster:
        _out, _wall, _broker, startup = _run(cluster, _producer(f"MWarm{stamp}", "sync", 1))
        plans: dict[str, list[str]] = {
            "sync": _producer(f"MSync{stamp}", "sync", n_single, "-w", "32"),
            "sync-p2": _producer(f"MSyncP{stamp}", "sync", n_single, "-w", "16", "-p", "2"),
            "async": _producer(f"MAsync{stamp}", "async", n_single, "-w", "32"),
            "oneway": _producer(f"MOneway{stamp}", "oneway", n_single, "-w", "32"),
            "batch": _producer(f"MBatch{stamp}", "batch", n_batch, "-w", "8", "-b", "32"),
            "consume": ["consumer", "-t", f"MBatch{stamp}", "-g", f"mconsume{stamp}", "-c", str(n_batch),
                        "--from-first", "-d", "300"],
        }
        for scenario in scenarios:
            if scenario in E2E_PRODUCERS:
                producer = [*E2E_PRODUCERS[scenario][0]]
                count = int(n_e2e * E2E_PRODUCERS[scenario][1])
                report.append(_end_to_end(cluster, flush, scenario, f"M{scenario.replace('-', '')}{stamp}", count,
                                          producer, startup))
            else:
                if scenario == "consume" and "batch" not in scenarios:
                    continue  # it reads what the batch scenario stored
                out, wall, broker, client = _run(cluster, plans[scenario])
                processes = 3 if scenario == "sync-p2" else 1  # -p 2: the parent and two spawned
                report.append(_row(flush, scenario, plans[scenario], out, wall, broker,
                                   max(0.0, client - processes * startup)))
            print(_format(report[-1]), flush=True)


E2E_PRODUCERS: dict[str, tuple[list[str], float]] = {
    "e2e": (["-m", "batch", "-b", "16", "-w", "8", "--rate", "10000"], 1.0),
    "e2e-oneway": (["-m", "oneway", "-w", "32", "--rate", "10000"], 1.0),
    "e2e-sync": (["-m", "sync", "-w", "32", "--rate", "2000"], 0.2),
}
"""Producer options of each end-to-end scenario, and its share of the e2e message count."""


def _end_to_end(cluster: Cluster, flush: str, scenario: str, topic: str, count: int, producer: list[str],
                startup: float) -> Row:
    """A consumer (already subscribed, from the last offset) while a rate-limited producer sends."""
    env = {**os.environ, "NAMESRV_ADDR": cluster.namesrv}
    # the topic must exist (8 queues, as auto-creation makes) before the consumer subscribes
    subprocess.run([*ROCKETQ, "admin", "updateTopic", "-n", cluster.namesrv, "-c", "DefaultCluster", "-t", topic],
                   check=True, capture_output=True, env=env)
    consumer_args = ["consumer", "-t", topic, "-g", f"{topic.lower()}_group", "-c", str(count), "-d", "120"]
    broker0, client0, wall0 = cluster.broker_cpu(), _children_cpu(), time.perf_counter()
    consumer = subprocess.Popen([*ROCKETQ, "bench", *consumer_args], stdout=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(5)  # rebalance: the consumer owns its queues before the first timed message
        producer_args = ["producer", "-t", topic, "-c", str(count), *producer]
        subprocess.run([*ROCKETQ, "bench", *producer_args], check=True, capture_output=True, env=env)
        out, _ = consumer.communicate(timeout=180)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    wall, broker, client = time.perf_counter() - wall0, cluster.broker_cpu() - broker0, _children_cpu() - client0
    row = _row(flush, scenario, consumer_args, out, wall, broker, max(0.0, client - 2 * startup))
    row.command = f"rocketq bench {' '.join(consumer_args)} + rocketq bench {' '.join(producer_args)}"
    return row


def _format(row: Row) -> str:
    return (f"| {row.flush} | {row.scenario} | {row.rate:,.0f} | {row.p50_ms:.2f} | {row.p99_ms:.2f} | "
            f"{row.broker_us_per_msg} | {row.client_us_per_msg} | {row.messages} | {row.wall_s} |")


HEADER = ("| flush | scenario | msg/s | p50 ms | p99 ms | broker CPU us/msg | client CPU us/msg | messages | wall s |\n"
          "|---|---|---|---|---|---|---|---|---|")
ASYNC_SCENARIOS = ["sync", "sync-p2", "async", "oneway", "batch", "consume", "e2e", "e2e-oneway", "e2e-sync"]
SYNC_FLUSH_SCENARIOS = ["sync", "batch", "e2e"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every message count")
    parser.add_argument("--only", help=f"comma-separated scenarios (of {','.join(ASYNC_SCENARIOS)})")
    parser.add_argument("--flush", nargs="*", default=["ASYNC_FLUSH", "SYNC_FLUSH"],
                        choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    chosen = args.only.split(",") if args.only else None
    rows: list[Row] = []
    print(f"calibration before: {calibrate():.1f} ns per Python call", flush=True)
    print(HEADER, flush=True)
    for flush in args.flush:
        default = ASYNC_SCENARIOS if flush == "ASYNC_FLUSH" else SYNC_FLUSH_SCENARIOS
        run_flush_mode(flush, [s for s in default if chosen is None or s in chosen], args.scale, rows)
    print(f"calibration after: {calibrate():.1f} ns per Python call")
    print("\ncommands:")
    for row in rows:
        print(f"  {row.flush:<11} {row.scenario:<8} {row.command}")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))


if __name__ == "__main__":
    main()

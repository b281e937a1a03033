"""rocketq side by side with NATS JetStream and Redis Streams: issue #11's ratio table.

    .venv/bin/python bench/compare.py                 # or: make bench   (about 10 minutes)
    .venv/bin/python bench/compare.py --quick         # a smoke run on tiny counts (under a minute)
    .venv/bin/python bench/compare.py --repeats 5 --only sync,pipelined --peers redis

It starts every system on loopback with free ports and a temporary directory (rocketq: one
name server and one broker; nats-server with JetStream on a file store; redis-server with
the AOF on), installs nats-server and redis-server with apt-get if they are missing (a peer
that cannot be installed is left out, and the output says why), runs each workload on each
system in turn, repeats that ``--repeats`` times, and prints the ratio table (rocketq, the
best peer, the ratio) and a detail table with CPU per message. Everything measured is also
saved as JSON under bench/results/ (not versioned), so that later runs can be compared.
What each workload is on each system: the ``peers`` package and docs/benchmarks.md.
Nothing here asserts anything; exit status 1 means a measurement failed (see its error).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from peers import installing, plans, report, servers
from peers.clients.api import SYSTEMS
from peers.runner import Comparison, ServerStarter
from run_matrix import calibrate

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PEERS = {"nats": installing.NATS_SERVER, "redis": installing.REDIS_SERVER}


def _starters(peers: list[str], unavailable: dict[str, str]) -> dict[str, ServerStarter]:
    version = importlib.metadata.version("rocketq")
    def rocketq(directory: Path, durable: bool) -> servers.Server:
        return servers.start_rocketq(directory, durable=durable, version=version)

    starters: dict[str, ServerStarter] = {"rocketq": rocketq}
    for peer in peers:
        try:
            path = installing.ensure(PEERS[peer])
        except installing.InstallError as exc:
            unavailable[peer] = str(exc)
            print(f"{peer}: left out of this run: {exc}", flush=True)
            continue
        starters[peer] = _peer_starter(peer, path, installing.version(path))
    return starters


def _peer_starter(peer: str, binary: str, version: str) -> ServerStarter:
    start = servers.start_nats if peer == "nats" else servers.start_redis

    def starter(directory: Path, durable: bool) -> servers.Server:
        return start(binary, directory, durable=durable, version=version)

    return starter


def _machine() -> dict[str, Any]:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "python": platform.python_version(), "load_average_before": os.getloadavg()}


def _commit() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=False)
    return out.stdout.strip()


def _client_versions() -> dict[str, str]:
    versions = {}
    for dist in ("rocketq", "nats-py", "redis", "hiredis", "uvloop"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "missing"
    return versions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts, one repeat: a smoke run")
    parser.add_argument("--repeats", type=int, help="runs of every workload on every system (default 3, quick 1)")
    parser.add_argument("--only", help=f"comma-separated workloads (of {','.join(plans.WORKLOAD_KEYS)})")
    parser.add_argument("--peers", default="nats,redis", help="comma-separated peers (of nats,redis; '' for none)")
    parser.add_argument("--json", type=Path, help="where to save the results (default: bench/results/compare-*.json)")
    args = parser.parse_args()
    workloads = [w for w in plans.plan(args.quick) if not args.only or w.key in args.only.split(",")]
    peers = [p for p in args.peers.split(",") if p]
    if unknown := [p for p in peers if p not in PEERS] + [w for w in (args.only or "").split(",")
                                                         if w and w not in plans.WORKLOAD_KEYS]:
        parser.error(f"unknown: {', '.join(unknown)}")
    repeats = args.repeats or (1 if args.quick else 3)
    started = datetime.datetime.now(datetime.UTC)
    meta: dict[str, Any] = {"started": started.isoformat(timespec="seconds"), "quick": args.quick,
                            "repeats": repeats, "commit": _commit(), "machine": _machine(),
                            "clients": _client_versions(), "calibration_ns_before": round(calibrate(), 1),
                            "workloads": [{"key": w.key, "title": w.title, "params": w.params, "durable": w.durable}
                                          for w in workloads]}
    unavailable: dict[str, str] = {}
    starters = _starters(peers, unavailable)
    systems: list[str] = [s for s in SYSTEMS if s in starters]
    with tempfile.TemporaryDirectory(prefix="rocketq-compare-") as tmp:
        comparison = Comparison(starters, workloads, repeats, Path(tmp), lambda line: print(line, flush=True))
        try:
            outcome = comparison.run()
        finally:
            comparison.close()
    outcome.unavailable.update(unavailable)
    meta["machine"]["load_average_after"] = os.getloadavg()
    meta["calibration_ns_after"] = round(calibrate(), 1)
    meta["finished"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    table = report.rows(workloads, [*SYSTEMS], outcome)
    print("\n" + report.ratio_table(table) + "\n\n" + report.detail_table(workloads, systems, outcome))
    for what, why in outcome.unavailable.items():
        print(f"\nnot measured: {what}: {why}")
    path = args.json or RESULTS / f"compare-{started:%Y%m%d-%H%M%S}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.dumps(report.to_json(meta, table, outcome)))
    print(f"\nsaved {path}")
    errors = [r for r in outcome.records if r.error]
    for r in errors:
        print(f"error: repeat {r.repeat + 1} {r.workload} {r.system}: {r.error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

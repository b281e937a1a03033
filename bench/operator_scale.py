"""Scale of the operator: many RocketMQCluster, RocketMQTopic and RocketMQConsumerGroup objects.

    .venv/bin/python bench/operator_scale.py [--clusters 10] [--topics 500] [--groups 200]
        [--broker-groups 2] [--entity-interval 20] [--reconcile-interval 5]
        [--steady-seconds 45] [--timeout 900] [--out FILE]

Runs the real operator (kopf and every handler) against the kmock Kubernetes emulator as
tests/operator does (``operator_harness``: the StatefulSet emulator makes pods ready and plays
the brokers registering; the recording fake BrokerAdmin stands in for brokers and name
servers). The emulator runs in a child process (``operator_emulator``: in one process it held
the interpreter lock most of the time and the bench timed it, not the operator); the operator
runs here, in a thread, and the fake name servers' registrations are handed over once per
``POLL``. Clusters go one per namespace (``scale-000``, ...); topics and consumer groups are
spread round-robin over the clusters. The CRDs' admission checks (CEL) are off: they cost the
emulator, not the operator.

It reports:

* convergence: seconds from the operator's start until every cluster is ``Running`` and every
  topic and group is ``Ready`` on every broker group of its cluster;
* Kubernetes API requests the operator made (counted at the emulator by User-Agent: kopf's
  own watches and patches, and the reconcilers' ``rocketq-operator`` calls), per object, while
  converging and then in a steady window of ``--steady-seconds`` (per object per entity
  interval: what every re-check costs when nothing changes);
* broker admin calls (the fake's counter, by request) per object, for both phases;
* the operator's CPU seconds (its thread and its worker threads, from /proc/self/task), the
  emulator's (for comparison) and the bench process's RSS growth from just before the operator
  started (the operator's: the emulator's store is in the other process).

The machine is shared and wall-clock time moves with its load; call counts do not. It measures;
it asserts nothing. Numbers go to docs/benchmarks.md ("Scale: the operator").
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import concurrent.futures
import dataclasses
import json
import multiprocessing
import os
import pathlib
import sys
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
for shared in ("tests/operator", "tests/k8s"):
    sys.path.insert(0, str(ROOT / shared))

import operator_emulator  # noqa: E402
import operator_harness  # noqa: E402
from operator_fakes import FakeBrokerAdmin  # noqa: E402
from operator_harness import OperatorThread, fast_config  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
POLL = 0.5
"""Seconds between convergence checks (and hand-overs of the brokers' registrations)."""
OPERATOR_THREADS = ("operator", "asyncio_")
"""The operator's loop thread (OperatorThread) and its default executor's workers; the bench's
own loop gets an executor of another name, so these are the operator's alone."""


class CountingBrokerAdmin(FakeBrokerAdmin):
    """The recording fake, counting calls instead of keeping each one."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def _call(self, method: str, address: str, argument: object = None) -> None:
        self.counts[method] += 1
        if address in self.down:
            super()._call(method, address, argument)


class Emulator:
    """The child process serving the API (``operator_emulator``), one pipe request at a time."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=operator_emulator.serve, args=(child,), name="kube-emulator",
                                        daemon=True)
        self._lock = asyncio.Lock()
        self.url = ""

    async def start(self) -> None:
        self._process.start()
        self.url = await asyncio.to_thread(self._recv)

    def _recv(self) -> Any:
        if not self._conn.poll(600):
            raise TimeoutError("the emulator process does not answer")
        return self._conn.recv()

    async def ask(self, *request: Any) -> Any:
        async with self._lock:
            self._conn.send(request)
            return await asyncio.to_thread(self._recv)

    async def stop(self) -> None:
        async with self._lock:
            self._conn.send(("stop",))
        await asyncio.to_thread(self._process.join, 30)
        if self._process.is_alive():
            self._process.kill()


def operator_cpu() -> float:
    """CPU seconds (user + system) of the operator's threads, from /proc/self/task/<tid>/stat."""
    total = 0
    for thread in threading.enumerate():
        if not thread.name.startswith(OPERATOR_THREADS) or thread.native_id is None:
            continue
        try:
            stat = pathlib.Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        fields = stat.rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def rss_mb() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _per_object(counts: dict[Any, int], objects: int) -> dict[str, float]:
    out = {" ".join(key) if isinstance(key, tuple) else key: round(value / objects, 3)
           for key, value in sorted(counts.items())}
    out["total"] = round(sum(counts.values()) / objects, 3)
    return out


async def _progress(emulator: Emulator, admin: FakeBrokerAdmin) -> tuple[tuple[int, ...], dict[str, Any]]:
    """Objects done per kind; the brokers' registrations go to the operator's BrokerAdmin."""
    report = await emulator.ask("report")
    admin.registered = report["registered"]
    return tuple(report["finished"][p] for p in operator_harness.ROCKETQ_KINDS), report


async def run(args: argparse.Namespace) -> dict[str, Any]:
    asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(thread_name_prefix="bench"))
    operator_harness.quiet_logs()
    objects = args.clusters + args.topics + args.groups
    config = fast_config(entity_interval=args.entity_interval, reconcile_interval=args.reconcile_interval,
                         retry_delay=2.0, failover_grace=600.0)
    # OperatorConfig's own default (the tests' is tiny); absent in operators before the read cache.
    fields = {f.name: f for f in dataclasses.fields(config)}
    if "read_cache_ttl" in fields:
        config = dataclasses.replace(config, read_cache_ttl=fields["read_cache_ttl"].default)
    result: dict[str, Any] = {"clusters": args.clusters, "topics": args.topics, "groups": args.groups,
                              "broker_groups": args.broker_groups, "entity_interval": args.entity_interval,
                              "reconcile_interval": args.reconcile_interval}
    emulator = Emulator()
    await emulator.start()
    admin = CountingBrokerAdmin()
    operator = OperatorThread(config, admin)
    try:
        await emulator.ask("create", args.clusters, args.topics, args.groups, args.broker_groups)
        _, report = await _progress(emulator, admin)
        rss_before, cpu_before, emulator_before = rss_mb(), operator_cpu(), report["cpu_s"]
        started = time.monotonic()
        operator.start(emulator.url)
        wanted = (args.clusters, args.topics, args.groups)
        progress: tuple[int, ...] = (0, 0, 0)
        while time.monotonic() - started < args.timeout and progress != wanted:
            await asyncio.sleep(POLL)
            progress, report = await _progress(emulator, admin)
            if args.verbose:
                print(f"{time.monotonic() - started:7.1f}s {progress} operator cpu {operator_cpu() - cpu_before:.1f}s "
                      f"emulator cpu {report['cpu_s'] - emulator_before:.1f}s", file=sys.stderr)
        result["converged"] = progress == wanted
        result["progress"] = dict(zip(("clusters", "topics", "groups"), progress, strict=True))
        result["convergence_s"] = round(time.monotonic() - started, 1)
        result["converge_cpu_s"] = round(operator_cpu() - cpu_before, 1)
        result["converge_emulator_cpu_s"] = round(report["cpu_s"] - emulator_before, 1)
        result["converge_api_per_object"] = _per_object(report["counts"], objects)
        result["converge_admin_per_object"] = _per_object(admin.counts, objects)
        await emulator.ask("clear")
        admin.counts.clear()
        cpu_steady, emulator_steady = operator_cpu(), report["cpu_s"]
        steady_until = time.monotonic() + args.steady_seconds
        while time.monotonic() < steady_until:
            await asyncio.sleep(POLL)
            _, report = await _progress(emulator, admin)
        intervals = args.steady_seconds / args.entity_interval
        result["steady_cpu_s_per_interval"] = round((operator_cpu() - cpu_steady) / intervals, 2)
        result["steady_emulator_cpu_s_per_interval"] = round((report["cpu_s"] - emulator_steady) / intervals, 2)
        result["steady_api_per_object_per_interval"] = _per_object(report["counts"], round(objects * intervals))
        result["steady_admin_per_object_per_interval"] = _per_object(admin.counts, round(objects * intervals))
        result["rss_growth_mb"] = round(rss_mb() - rss_before, 1)
    finally:
        try:
            await operator.close()
        except AssertionError as exc:  # reported, not hidden: the numbers above still stand
            result["stop_problem"] = f"{exc}: {exc.__cause__!r}"
        await emulator.stop()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--topics", type=int, default=500)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--broker-groups", type=int, default=2)
    parser.add_argument("--entity-interval", type=float, default=20.0)
    parser.add_argument("--reconcile-interval", type=float, default=5.0)
    parser.add_argument("--steady-seconds", type=float, default=45.0)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--verbose", action="store_true", help="convergence progress on stderr")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

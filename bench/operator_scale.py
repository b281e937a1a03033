"""Scale of the operator: many RocketMQCluster, RocketMQTopic and RocketMQConsumerGroup objects.

    .venv/bin/python bench/operator_scale.py [--clusters 10] [--topics 500] [--groups 200]
        [--broker-groups 2] [--entity-interval 20] [--reconcile-interval 5]
        [--steady-seconds 45] [--timeout 900] [--out FILE]

Runs the real operator (kopf and every handler) against the kmock Kubernetes emulator as
tests/operator does (``operator_harness``: the StatefulSet emulator makes pods ready and plays
the brokers registering; the recording fake BrokerAdmin stands in for brokers and name
servers). Clusters go one per namespace (``scale-000``, ...); topics and consumer groups are
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
* the operator's CPU seconds (its thread and its worker threads, from /proc/self/task) and
  the process RSS growth from just before the operator started (the emulator shares the
  process: its store grows with the operator's writes, so this over-counts).

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
import os
import pathlib
import sys
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
for shared in ("tests/operator", "tests/k8s"):
    sys.path.insert(0, str(ROOT / shared))

import kmock  # noqa: E402
import operator_harness  # noqa: E402
from operator_fakes import FakeBrokerAdmin  # noqa: E402
from operator_harness import ApiServer, OperatorEnv, fast_config  # noqa: E402
from rocketq_operator import kubeapi  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
POLL = 0.5
"""Seconds between convergence checks."""
CONTROLLER_TICK = 2.0
"""The StatefulSet emulator's period (the tests' 0.05 s would cost more than the operator)."""
OPERATOR_THREADS = ("operator", "asyncio_")
"""The operator's loop thread (OperatorEnv) and its default executor's workers; the bench's
own loop gets an executor of another name, so these are the operator's alone."""


class CountingApiServer(ApiServer):
    """The harness's API server, counting requests by (client, method, resource), and which
    rocketq objects are done (``done``), from the status each PATCH leaves: reading every
    object's state from kmock takes seconds at 7 000 objects, and would stall the emulator."""

    counts: collections.Counter[tuple[str, str, str]]
    in_flight: dict[int, kmock.Request]
    finished: dict[str, set[tuple[str, str]]]
    broker_groups: int

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.counts = collections.Counter()
        self.in_flight = {}
        self.finished = collections.defaultdict(set)
        self.broker_groups = 0

    def _note(self, request: kmock.Request) -> None:
        plural = str(request.resource.plural) if request.resource is not None else ""
        if request.method != "PATCH" or plural not in operator_harness.ROCKETQ_KINDS or request.name is None:
            return
        key = (request.resource, request.namespace, request.name)
        if key not in self.objects or self.objects[key].deleted:
            return
        status = self.objects[key].raw.get("status") or {}
        if done(plural, status, self.broker_groups):
            self.finished[plural].add((str(request.namespace), request.name))
        else:
            self.finished[plural].discard((str(request.namespace), request.name))

    async def _handle(self, request: kmock.Request) -> Any:
        agent = request.headers.get("User-Agent", "")
        client = "kopf" if agent.startswith("kopf") else "reconcilers" if agent.startswith(kubeapi.USER_AGENT) else ""
        if client:
            plural = request.resource.plural if request.resource is not None else "-"
            self.counts[client, request.method, str(plural)] += 1
        # kmock logs every request and matches each new one by walking the whole log: quadratic.
        # Only requests still being served need to be found there.
        self.in_flight[id(request)] = request
        self._requests[:] = list(self.in_flight.values())
        try:
            response = await super()._handle(request)
            self._note(request)
            return response
        finally:
            self.in_flight.pop(id(request), None)


class CountingBrokerAdmin(FakeBrokerAdmin):
    """The recording fake, counting calls instead of keeping each one."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def _call(self, method: str, address: str, argument: object = None) -> None:
        self.counts[method] += 1
        if address in self.down:
            super()._call(method, address, argument)


def _namespace(index: int) -> str:
    return f"scale-{index:03d}"


def _cluster(index: int) -> str:
    return f"c{index:03d}"


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


def done(plural: str, status: dict[str, Any], broker_groups: int) -> bool:
    """A cluster is Running; a topic or group is Ready on every broker group."""
    if plural == "rocketmqclusters":
        return status.get("phase") == "Running"
    return status.get("phase") == "Ready" and len(status.get("brokers") or []) == broker_groups


async def create_objects(env: OperatorEnv, args: argparse.Namespace) -> None:
    for index in range(args.clusters):
        await env.create("RocketMQCluster", _cluster(index), {"brokers": {"groups": args.broker_groups}},
                         namespace=_namespace(index))
    for kind, count, prefix in (("RocketMQTopic", args.topics, "topic"),
                                ("RocketMQConsumerGroup", args.groups, "group")):
        for number in range(count):
            index = number % args.clusters
            await env.create(kind, f"{prefix}-{number:05d}", {"clusterRef": _cluster(index)},
                             namespace=_namespace(index))


def _per_object(counts: collections.Counter[Any], objects: int) -> dict[str, float]:
    out = {" ".join(key) if isinstance(key, tuple) else key: round(value / objects, 3)
           for key, value in sorted(counts.items())}
    out["total"] = round(sum(counts.values()) / objects, 3)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(thread_name_prefix="bench"))
    operator_harness.TICK = CONTROLLER_TICK
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
    async with CountingApiServer(admission=False) as server, kmock.Server(server):
        server.broker_groups = args.broker_groups
        admin = CountingBrokerAdmin()
        env = OperatorEnv(server, config, admin)
        operator_harness.declare_resources(server)
        await create_objects(env, args)
        rss_before, cpu_before = rss_mb(), operator_cpu()
        started = time.monotonic()
        await env.start()
        try:
            progress: tuple[int, ...] = (0, 0, 0)
            while time.monotonic() - started < args.timeout:
                await asyncio.sleep(POLL)
                progress = tuple(len(server.finished[p]) for p in operator_harness.ROCKETQ_KINDS)
                if args.verbose:
                    print(f"{time.monotonic() - started:7.1f}s {progress}", file=sys.stderr)
                if progress == (args.clusters, args.topics, args.groups):
                    break
            result["converged"] = progress == (args.clusters, args.topics, args.groups)
            result["progress"] = dict(zip(("clusters", "topics", "groups"), progress, strict=True))
            result["convergence_s"] = round(time.monotonic() - started, 1)
            result["converge_cpu_s"] = round(operator_cpu() - cpu_before, 1)
            result["converge_api_per_object"] = _per_object(server.counts, objects)
            result["converge_admin_per_object"] = _per_object(admin.counts, objects)
            server.counts.clear()
            admin.counts.clear()
            cpu_steady = operator_cpu()
            await asyncio.sleep(args.steady_seconds)
            intervals = args.steady_seconds / args.entity_interval
            result["steady_cpu_s_per_interval"] = round((operator_cpu() - cpu_steady) / intervals, 2)
            result["steady_api_per_object_per_interval"] = _per_object(server.counts, round(objects * intervals))
            result["steady_admin_per_object_per_interval"] = _per_object(admin.counts, round(objects * intervals))
            result["rss_growth_mb"] = round(rss_mb() - rss_before, 1)
        finally:
            try:
                await env.close()
            except AssertionError as exc:  # reported, not hidden: the numbers above still stand
                result["stop_problem"] = f"{exc}: {exc.__cause__!r}"
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

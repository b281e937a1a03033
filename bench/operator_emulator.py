"""The Kubernetes side of bench/operator_scale.py, in a process of its own.

What runs here: the harness's API server (kmock with the indexed store,
tests/operator/indexedstore.py), counting the operator's requests, and its StatefulSet
emulator (pods made ready, brokers registering). The operator runs in the bench's own
process. Why apart: in one process the emulator and the operator share one interpreter lock,
and the emulator, serving thousands of requests, held it most of the time: the bench timed the
emulator and the lock's hand-offs, not the operator (at 100 clusters no cluster was Running
after minutes, with the emulator's thread busy and the operator's waiting). Apart, each has
its own core, and the operator's CPU and RSS are its own.

The bench talks to it over a ``multiprocessing`` pipe, one request and one answer at a time:

- ``("create", clusters, topics, groups, broker_groups)``: create the objects (answer: None);
- ``("report",)``: requests counted so far by (client, method, resource), how many rocketq
  objects of each kind are done (from the statuses the operator wrote), what the brokers have
  registered (the fake name servers' view, which the bench hands to the operator's
  BrokerAdmin), and this process's CPU seconds;
- ``("clear",)``: reset the request counts; ``("stop",)``: shut down.

It measures nothing itself and asserts nothing.
"""

from __future__ import annotations

import asyncio
import collections
import pathlib
import resource
import sys
from multiprocessing.connection import Connection
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
for shared in ("tests/operator", "tests/k8s"):
    if str(ROOT / shared) not in sys.path:
        sys.path.insert(0, str(ROOT / shared))

import kmock  # noqa: E402
import operator_harness  # noqa: E402
from operator_fakes import FakeBrokerAdmin  # noqa: E402
from operator_harness import PATHS, ApiServer, StatefulSetController  # noqa: E402
from rocketq_operator import kubeapi  # noqa: E402

CONTROLLER_TICK = 2.0
"""The StatefulSet emulator's period (the tests' 0.05 s would cost more than the operator)."""
USER_AGENTS = (("kopf", "kopf"), (kubeapi.USER_AGENT, "reconcilers"))
"""User-Agent prefix -> the client counted: kopf's own requests, and the reconcilers'."""


def namespace_of(index: int) -> str:
    return f"scale-{index:03d}"


def cluster_of(index: int) -> str:
    return f"c{index:03d}"


def done(plural: str, status: dict[str, Any], broker_groups: int) -> bool:
    """A cluster is Running; a topic or group is Ready on every broker group."""
    if plural == "rocketmqclusters":
        return status.get("phase") == "Running"
    return status.get("phase") == "Ready" and len(status.get("brokers") or []) == broker_groups


class CountingApiServer(ApiServer):
    """The harness's API server, counting requests by (client, method, resource), and which
    rocketq objects are done (``finished``), from the status each PATCH leaves."""

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
        client = next((name for prefix, name in USER_AGENTS if agent.startswith(prefix)), "")
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


async def create_objects(server: ApiServer, clusters: int, topics: int, groups: int, broker_groups: int) -> None:
    """Clusters one per namespace; topics and groups round-robin over them."""
    async def create(kind: str, name: str, spec: dict[str, Any], namespace: str) -> None:
        body = {"apiVersion": "rocketq.io/v1alpha1", "kind": kind,
                "metadata": {"name": name, "namespace": namespace}, "spec": spec}
        response = await server.post(PATHS[kind].format(ns=namespace), json=body)
        assert response.status < 300, await response.text()

    for index in range(clusters):
        await create("RocketMQCluster", cluster_of(index), {"brokers": {"groups": broker_groups}},
                     namespace_of(index))
    for kind, count, prefix in (("RocketMQTopic", topics, "topic"), ("RocketMQConsumerGroup", groups, "group")):
        for number in range(count):
            index = number % clusters
            await create(kind, f"{prefix}-{number:05d}", {"clusterRef": cluster_of(index)}, namespace_of(index))


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _serve(conn: Connection) -> None:
    operator_harness.TICK = CONTROLLER_TICK
    operator_harness.quiet_logs()
    loop = asyncio.get_running_loop()
    async with CountingApiServer(admission=False) as server, kmock.Server(server):
        operator_harness.declare_resources(server)
        registrations = FakeBrokerAdmin()  # only its `registered` is used: the brokers' view
        controller = StatefulSetController(server, registrations)
        controller.start()
        conn.send(str(server.url))
        try:
            while True:
                request = await loop.run_in_executor(None, conn.recv)
                if request[0] == "create":
                    server.broker_groups = request[4]
                    await create_objects(server, *request[1:])
                    conn.send(None)
                elif request[0] == "report":
                    conn.send({"counts": dict(server.counts),
                               "finished": {plural: len(server.finished[plural])
                                            for plural in operator_harness.ROCKETQ_KINDS},
                               "registered": registrations.registered, "cpu_s": _cpu_seconds()})
                elif request[0] == "clear":
                    server.counts.clear()
                    conn.send(None)
                else:
                    break
        finally:
            await controller.close()


def serve(conn: Connection) -> None:
    """The child process's entry point: serve until told to stop."""
    asyncio.run(_serve(conn))

"""Scale: tens of thousands of topics and thousands of clients on one broker and one name server.

    .venv/bin/python bench/scale.py [--topics 1000,10000,50000] [--concurrency 64] [--no-slave]
                                    [--clients 5000] [--groups 1000] [--idle-seconds 60] [--out FILE]

Starts ``rocketq namesrv`` and ``rocketq broker`` as processes on 127.0.0.1 (temporary store),
then, for each topic count in turn, grows the broker's table to that count through the admin
client (UPDATE_AND_CREATE_TOPIC with 8 queues, ``--concurrency`` creates in flight) and reports:

* create rate and latency percentiles, for the whole step and for its last ``WINDOW`` creates
  (the rate *at* that table size, which is what issue #14's ">= 500 topics/s at 50 000" means);
* broker and name-server RSS (``/proc/<pid>/status``);
* the full registration body as the broker sends it (compressed above 1 000 topics) and the time
  to encode it, and the name server's CPU to apply it (sent once by a probe broker identity);
* route lookup latency (GET_ROUTEINFO_BY_TOPIC of random topics);
* broker restart time (SIGTERM, start, until the name server routes a topic again).

At the largest size, ``--slave`` (on by default) starts a slave of that broker and reports its
metadata sync (``rocketq.ha.metasync``) from the slave's runtime info: the first copy (requests,
bytes, time until converged), an unchanged round (requests, bytes, CPU of both processes), and the
round after one topic is created on the master; next to the whole-table answer's size, which is
what every 10 s round fetched before the sync paged and skipped unchanged tables.

Then the many-clients run: ``--clients`` connections in ``--groups`` consumer groups send
HEART_BEAT (joining, then every 30 s as clients do), ask GET_CONSUMER_LIST_BY_GROUP, and the
broker's CPU is read over ``--idle-seconds`` of heartbeats only.

Wall-clock numbers move with whatever else runs on the machine; CPU seconds (``/proc``) move
less. It measures; it asserts nothing. Numbers go to docs/benchmarks.md ("Scale").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from rocketq.admin import adminbodies
from rocketq.admin.client import AdminClient
from rocketq.local import processes
from rocketq.local.ports import free_port
from rocketq.local.processes import ServerProcess
from rocketq.namesrv import registerbodies
from rocketq.protocol import headers
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.sharedbodies import DataVersion
from rocketq.remoting.client import RemotingClient

WINDOW = 1000
"""Creates at the end of each step whose rate is reported as the rate at that table size."""
QUEUES = 8
ROUTE_LOOKUPS = 2000
HEARTBEAT_PERIOD_S = 30.0


# --- processes ---------------------------------------------------------------------------------


def start_broker(work: Path, namesrv: ServerProcess, port: int, ha_port: int, name: str = "scale-broker",
                 *settings: str, log_name: str | None = None) -> ServerProcess:
    return processes.start_broker(work, namesrv.addr, name, "autoCreateSubscriptionGroup=true", *settings,
                                  port=port, ha_port=ha_port, metrics_port=-1, log_name=log_name)


# --- measuring ---------------------------------------------------------------------------------


def percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {}
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)

    return {"p50_ms": at(0.50), "p90_ms": at(0.90), "p99_ms": at(0.99), "max_ms": at(1.0)}


@dataclass
class Timings:
    wall_s: float
    latencies: list[float]
    finished: list[float]
    """perf_counter at each completion, in completion order."""

    def tail_rate(self, last: int) -> float:
        """Completions per second over the last ``last`` completions."""
        tail = self.finished[-last:]
        return (len(tail) - 1) / (tail[-1] - tail[0]) if len(tail) > 1 and tail[-1] > tail[0] else 0.0


async def timed_concurrently(count: int, concurrency: int, work: Callable[[int], Awaitable[None]]) -> Timings:
    """Run ``work(i)`` for i in range(count) with ``concurrency`` in flight."""
    latencies: list[float] = [0.0] * count
    finished: list[float] = []
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            i = next_index
            next_index += 1
            began = time.perf_counter()
            await work(i)
            done = time.perf_counter()
            latencies[i] = done - began
            finished.append(done)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Timings(time.perf_counter() - began, latencies, finished)


async def grow_topics(admin: AdminClient, broker: str, start_at: int, target: int, concurrency: int
                      ) -> dict[str, Any]:
    async def create(i: int) -> None:
        await admin.create_topic(broker, adminbodies.TopicConfig(f"ScaleTopic{start_at + i}", QUEUES, QUEUES))

    timings = await timed_concurrently(target - start_at, concurrency, create)
    window = timings.latencies[-WINDOW:]
    return {"created": target - start_at, "rate_per_s": round((target - start_at) / timings.wall_s, 1),
            "latency": percentiles(timings.latencies),
            "at_size": {"creates": len(window), "rate_per_s": round(timings.tail_rate(WINDOW), 1),
                        "latency": percentiles(window)}}


async def registration_cost(admin: AdminClient, namesrv: ServerProcess, broker_addr: str) -> dict[str, Any]:
    """The broker's full registration body at this size, its encoding time, and what the name
    server spends applying it (sent once under a probe identity, whose table is then new)."""
    table = await admin.all_topic_config(broker_addr)
    body = registerbodies.RegisterBrokerBody(tuple(table.values()), DataVersion(int(time.time() * 1000), 1))
    compress = len(body.topic_configs) > 1000
    began = time.process_time()
    data = registerbodies.encode_register_body(body, compress=compress)
    encode_cpu = time.process_time() - began
    header = headers.RegisterBrokerRequestHeader(
        broker_name="scale-probe", broker_addr=f"127.0.0.1:{free_port()}", cluster_name="ScaleProbe",
        ha_server_addr="127.0.0.1:1", broker_id=0, compressed=compress,
        body_crc32=registerbodies.java_crc32(data))
    client = RemotingClient(name="scale-probe")
    try:
        cpu_before = namesrv.cpu_s()
        began = time.perf_counter()
        answer = await client.invoke(namesrv.addr, RemotingCommand(
            code=RequestCode.REGISTER_BROKER, ext_fields=header.to_ext(), body=data), 60)
        wall = time.perf_counter() - began
        cpu = namesrv.cpu_s() - cpu_before
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        again_began = time.perf_counter()  # the periodic registration of an unchanged table
        await client.invoke(namesrv.addr, RemotingCommand(
            code=RequestCode.REGISTER_BROKER, ext_fields=header.to_ext(), body=data), 60)
        unchanged_wall = time.perf_counter() - again_began
        unregister = headers.UnregisterBrokerRequestHeader(
            broker_name="scale-probe", broker_addr=header.broker_addr, cluster_name="ScaleProbe", broker_id=0)
        await client.invoke(namesrv.addr, RemotingCommand(
            code=RequestCode.UNREGISTER_BROKER, ext_fields=unregister.to_ext()), 60)
    finally:
        await client.close()
    return {"topics": len(body.topic_configs), "compressed": compress, "body_bytes": len(data),
            "json_bytes": len(registerbodies.encode_register_body(body)) if compress else len(data),
            "encode_cpu_ms": round(encode_cpu * 1000, 1), "namesrv_apply_ms": round(wall * 1000, 1),
            "namesrv_apply_cpu_ms": round(cpu * 1000, 1),
            "namesrv_unchanged_ms": round(unchanged_wall * 1000, 1)}


async def route_lookups(admin: AdminClient, topics: int) -> dict[str, float]:
    latencies = []
    for _ in range(ROUTE_LOOKUPS):
        topic = f"ScaleTopic{random.randrange(topics)}"
        began = time.perf_counter()
        await admin.topic_route(topic)
        latencies.append(time.perf_counter() - began)
    return percentiles(latencies)


async def wait_routable(namesrv_addr: str, topic: str) -> None:
    async with AdminClient(namesrv_addr) as admin:
        while True:
            try:
                route = await admin.topic_route(topic)
                if route.master_addrs():
                    return
            except Exception:  # not registered yet
                pass
            await asyncio.sleep(0.02)


# --- many clients ------------------------------------------------------------------------------


def heartbeat(n: int, groups: int) -> bytes:
    group = f"scale-group-{n % groups}"
    return orjson.dumps({
        "clientID": f"127.0.0.1@scale-{n}", "producerDataSet": [],
        "consumerDataSet": [{"groupName": group, "consumeType": "CONSUME_PASSIVELY",
                             "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                             "subscriptionDataSet": [{"topic": f"ScaleTopic{n % groups}", "subString": "*"}]}]})


async def many_clients(broker: ServerProcess, clients: int, groups: int, idle_seconds: float) -> dict[str, Any]:
    conns = [RemotingClient(name=f"scale-client-{n}") for n in range(clients)]
    addr = broker.addr

    async def beat(n: int) -> None:
        answer = await conns[n].invoke(addr, RemotingCommand(code=RequestCode.HEART_BEAT,
                                                             body=heartbeat(n, groups)), 60)
        assert answer.code == ResponseCode.SUCCESS, answer.remark

    try:
        cpu_before = broker.cpu_s()
        joined = await timed_concurrently(clients, 200, beat)
        join_cpu = broker.cpu_s() - cpu_before
        rss_joined = broker.rss_mb()

        async def ask_members(n: int) -> None:
            group = f"scale-group-{n % groups}"
            answer = await conns[n].invoke(addr, RemotingCommand(
                code=RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext_fields={"consumerGroup": group}), 60)
            assert answer.code == ResponseCode.SUCCESS, answer.remark

        listed = await timed_concurrently(clients, 200, ask_members)
        # idle: every client heartbeats once per HEARTBEAT_PERIOD_S, spread over the period
        cpu_before, began = broker.cpu_s(), time.monotonic()
        spacing = HEARTBEAT_PERIOD_S / clients
        beats = 0
        while time.monotonic() - began < idle_seconds:
            await beat(beats % clients)
            beats += 1
            await asyncio.sleep(max(0.0, began + beats * spacing - time.monotonic()))
        idle_wall = time.monotonic() - began
        idle_cpu = broker.cpu_s() - cpu_before
    finally:
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
    return {"clients": clients, "groups": groups,
            "join": {"wall_s": round(joined.wall_s, 2), "broker_cpu_s": round(join_cpu, 2),
                     "latency": percentiles(joined.latencies)},
            "consumer_list_latency": percentiles(listed.latencies),
            "broker_rss_mb": round(rss_joined, 1),
            "idle": {"seconds": round(idle_wall, 1), "heartbeats": beats,
                     "broker_cpu_percent": round(100 * idle_cpu / idle_wall, 2)}}


# --- a slave's metadata sync -------------------------------------------------------------------


SLAVE_PROBE_TOPIC = "ScaleSlaveProbe"


async def slave_runtime(admin: AdminClient, slave: ServerProcess, after_rounds: int) -> dict[str, str]:
    """The slave's runtime info once it has done more than ``after_rounds`` metadata sync rounds."""
    while True:
        info = await admin.runtime_info(slave.addr)
        if int(info.get("metadataSyncRounds", "0")) > after_rounds:
            return info
        await asyncio.sleep(0.1)


def sync_round(info: dict[str, str]) -> dict[str, Any]:
    return {"requests": int(info["metadataSyncLastRequests"]), "millis": int(info["metadataSyncLastMillis"]),
            "topic_bytes": int(info["metadataSyncLastTopicBytes"]),
            "all_bytes": sum(int(v) for k, v in info.items()
                             if k.startswith("metadataSyncLast") and k.endswith("Bytes"))}


async def slave_sync(work: Path, namesrv: ServerProcess, master: ServerProcess) -> dict[str, Any]:
    """Start a slave of the grown broker and measure its metadata sync: the first copy, an
    unchanged round, and the round after one topic was created on the master. For comparison,
    the whole-table GET_ALL_TOPIC_CONFIG answer: what every round fetched before paging."""
    whole_client = RemotingClient(name="scale-whole")
    try:
        whole = await whole_client.invoke(master.addr, RemotingCommand(code=RequestCode.GET_ALL_TOPIC_CONFIG), 60)
    finally:
        await whole_client.close()
    began = time.perf_counter()
    slave = start_broker(work, namesrv, free_port(), free_port(), "scale-broker", "brokerId=1", "brokerRole=SLAVE",
                         log_name="scale-slave")
    try:
        async with AdminClient(namesrv.addr, timeout=60) as admin:
            first = await slave_runtime(admin, slave, 0)
            converged_s = time.perf_counter() - began
            topics_on_slave = len(await admin.all_topic_config(slave.addr))
            master_cpu, slave_cpu = master.cpu_s(), slave.cpu_s()
            idle = await slave_runtime(admin, slave, int(first["metadataSyncRounds"]))
            idle_cpu = {"master_cpu_ms": round((master.cpu_s() - master_cpu) * 1000),
                        "slave_cpu_ms": round((slave.cpu_s() - slave_cpu) * 1000)}
            await admin.create_topic(master.addr, adminbodies.TopicConfig(SLAVE_PROBE_TOPIC, QUEUES, QUEUES))
            created = time.perf_counter()
            changed = await slave_runtime(admin, slave, int(idle["metadataSyncRounds"]))
            while SLAVE_PROBE_TOPIC not in await admin.all_topic_config(slave.addr):
                changed = await slave_runtime(admin, slave, int(changed["metadataSyncRounds"]))
            arrived_s = time.perf_counter() - created
    finally:
        slave.stop()
    return {"topics_on_slave": topics_on_slave, "whole_table_bytes": len(whole.body),
            "first_copy": {**sync_round(first), "converged_s": round(converged_s, 2)},
            "unchanged_round": {**sync_round(idle), **idle_cpu},
            "after_one_create": {**sync_round(changed), "arrived_s": round(arrived_s, 2)}}


# --- driver ------------------------------------------------------------------------------------


async def topic_steps(args: argparse.Namespace, work: Path, namesrv: ServerProcess, broker: ServerProcess,
                      ports: tuple[int, int]) -> tuple[ServerProcess, list[dict[str, Any]]]:
    results = []
    have = 0
    async with AdminClient(namesrv.addr, timeout=60) as admin:
        for target in args.topics:
            print(f"growing to {target} topics ...", file=sys.stderr, flush=True)
            step: dict[str, Any] = {"topics": target}
            step["create"] = await grow_topics(admin, broker.addr, have, target, args.concurrency)
            have = target
            step["broker_rss_mb"] = round(broker.rss_mb(), 1)
            step["namesrv_rss_mb"] = round(namesrv.rss_mb(), 1)
            step["registration"] = await registration_cost(admin, namesrv, broker.addr)
            step["route_lookup"] = await route_lookups(admin, have)
            broker.stop()
            began = time.perf_counter()
            broker = start_broker(work, namesrv, *ports)
            listening = time.perf_counter() - began
            await wait_routable(namesrv.addr, f"ScaleTopic{have - 1}")
            step["restart"] = {"listening_s": round(listening, 2),
                               "routable_s": round(time.perf_counter() - began, 2)}
            print(json.dumps(step), file=sys.stderr, flush=True)
            results.append(step)
    return broker, results


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rocketq-scale-") as tmp:
        work = Path(tmp)
        ns_port = free_port()
        namesrv = processes.start_namesrv(work, port=ns_port, metrics_port=-1)
        ports = (free_port(), free_port())
        broker = start_broker(work, namesrv, *ports)
        report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg()[0]}}
        try:
            broker, report["topic_steps"] = await topic_steps(args, work, namesrv, broker, ports)
            if args.slave:
                print("a slave's metadata sync ...", file=sys.stderr, flush=True)
                report["slave_sync"] = await slave_sync(work, namesrv, broker)
            if args.clients:
                print(f"{args.clients} clients in {args.groups} groups ...", file=sys.stderr, flush=True)
                report["many_clients"] = await many_clients(broker, args.clients, args.groups, args.idle_seconds)
            report["machine"]["load_at_end"] = os.getloadavg()[0]
        finally:
            broker.stop()
            namesrv.stop()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", default="1000,10000", help="table sizes to grow to, in order")
    parser.add_argument("--concurrency", type=int, default=64, help="creates in flight")
    parser.add_argument("--clients", type=int, default=5000)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--slave", action=argparse.BooleanOptionalAction, default=True,
                        help="measure a slave's metadata sync at the largest table size")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    args = parser.parse_args()
    args.topics = [int(t) for t in args.topics.split(",")]
    if args.topics != sorted(args.topics):
        parser.error("--topics must grow")
    report = asyncio.run(run(args))
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    print(f"median create p50 over steps: "
          f"{statistics.median(s['create']['latency']['p50_ms'] for s in report['topic_steps'])} ms",
          file=sys.stderr)


if __name__ == "__main__":
    main()

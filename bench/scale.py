"""Scale: tens of thousands of topics and thousands of clients on one broker and one name server.

    .venv/bin/python bench/scale.py [--topics 1000,10000,50000] [--concurrency 64]
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
import re
import signal
import statistics
import subprocess
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
from rocketq.local.ports import free_port
from rocketq.namesrv import registerbodies
from rocketq.protocol import headers
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.sharedbodies import DataVersion
from rocketq.remoting.client import RemotingClient

ROCKETQ = str(Path(sys.executable).with_name("rocketq"))
READY = re.compile(rb"listening on (\S+)")
START_DEADLINE_S = 120.0
WINDOW = 1000
"""Creates at the end of each step whose rate is reported as the rate at that table size."""
QUEUES = 8
ROUTE_LOOKUPS = 2000
HEARTBEAT_PERIOD_S = 30.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- processes ---------------------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(60)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def start(name: str, args: list[str], log: Path, port: int) -> Proc:
    with log.open("wb") as sink:
        popen = subprocess.Popen([ROCKETQ, *args], stdout=sink, stderr=subprocess.STDOUT,
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})
    proc = Proc(name, popen, log, port)
    deadline = time.monotonic() + START_DEADLINE_S
    while not READY.search(log.read_bytes()):
        if popen.poll() is not None or time.monotonic() > deadline:
            proc.stop()
            raise SystemExit(f"{name} did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.02)
    return proc


def start_broker(work: Path, namesrv: Proc, port: int, ha_port: int) -> Proc:
    args = ["broker", "-n", namesrv.addr, "-p", str(port), "--store-dir", str(work / "store"),
            "--metrics-port", "-1", "--set", "brokerName=scale-broker", "--set", "brokerIP1=127.0.0.1",
            "--set", f"haListenPort={ha_port}", "--set", "autoCreateSubscriptionGroup=true"]
    return start("broker", args, work / "broker.log", port)


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


async def registration_cost(admin: AdminClient, namesrv: Proc, broker_addr: str) -> dict[str, Any]:
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


async def many_clients(broker: Proc, clients: int, groups: int, idle_seconds: float) -> dict[str, Any]:
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


# --- driver ------------------------------------------------------------------------------------


async def topic_steps(args: argparse.Namespace, work: Path, namesrv: Proc, broker: Proc,
                      ports: tuple[int, int]) -> tuple[Proc, list[dict[str, Any]]]:
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
        namesrv = start("namesrv", ["namesrv", "-p", str(ns_port), "--metrics-port", "-1"],
                        work / "namesrv.log", ns_port)
        ports = (free_port(), free_port())
        broker = start_broker(work, namesrv, *ports)
        report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg()[0]}}
        try:
            broker, report["topic_steps"] = await topic_steps(args, work, namesrv, broker, ports)
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

"""The gRPC endpoint next to remoting: one broker, measured both ways in the same run.

    .venv/bin/python bench/run_grpc.py [--scale 1.0] [--rounds 2] [--in-flight 32] [--receivers 4]

It starts a local cluster (``rocketq local up``: one name server, one broker, free ports, a
temporary directory) and a ``rocketq proxy`` (CLUSTER mode) in front of it, then runs, per round:

============== ================================================================================
remoting-1     ``rocketq bench producer -m sync -w 1``: one send at a time, remoting
remoting-N     ``-m sync -w N``: N sends in flight
remoting-pull  ``rocketq bench consumer --from-first`` over what remoting-N stored (pull)
grpc-1         SendMessage with one message, one call at a time (grpc.aio, rocketq/proxy/v2 stubs)
grpc-N         N SendMessage calls in flight (N tasks, one message each)
grpc-receive   R receivers: ReceiveMessage (batch 32, long polling) then one AckMessage for the
               batch, over what grpc-N stored (POP on the broker, through the proxy)
============== ================================================================================

Rounds alternate which side goes first, so a change in the shared machine's speed hits both.
Each row gives msg/s and CPU time per message of the broker, of the proxy (both from /proc)
and of the client (remoting: the ``rocketq bench`` process net of its start-up; gRPC: this
process's own CPU, grpc's threads included). Every body is 1 KiB. Nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import duration_pb2
from run_dledger import cpu_seconds
from run_ha import free_port, start, stop
from run_matrix import ROCKETQ, SUMMARY, Cluster, _producer, _run, calibrate

from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

BODY = b"x" * 1024
MAX_BATCH = 32
INVISIBLE_S = 60
POLL_S = 5
CALL_TIMEOUT_S = 30.0
ID = (("x-mq-client-id", "run-grpc@bench"),)
COUNTS = {"single": 3_000, "inflight": 20_000}
"""Messages per scenario at --scale 1 (the receive scenarios read what the in-flight ones stored)."""


@dataclass
class Row:
    scenario: str
    messages: int
    wall_s: float
    broker_s: float
    proxy_s: float
    client_s: float
    rate: float | None = None
    """What ``rocketq bench`` printed (its own clock, without its start-up); None: messages / wall."""

    def line(self) -> str:
        per = 1e6 / self.messages if self.messages else 0.0
        rate = self.rate if self.rate is not None else (self.messages / self.wall_s if self.wall_s else 0.0)
        return (f"| {self.scenario} | {self.messages} | {rate:,.0f} | {self.broker_s * per:.0f} | "
                f"{self.proxy_s * per:.0f} | {self.client_s * per:.0f} |")


class Meter:
    """CPU seconds of the broker, the proxy and this process over a block, and its wall time."""

    def __init__(self, cluster: Cluster, proxy_pid: int) -> None:
        self.cluster, self.proxy_pid = cluster, proxy_pid

    def snapshot(self) -> tuple[float, float, float, float]:
        return (time.perf_counter(), self.cluster.broker_cpu(), cpu_seconds(self.proxy_pid), time.process_time())

    def row(self, scenario: str, messages: int, before: tuple[float, float, float, float],
            client_s: float | None = None) -> Row:
        after = self.snapshot()
        wall, broker, proxy, own = (a - b for a, b in zip(after, before, strict=True))
        return Row(scenario, messages, wall, broker, proxy, own if client_s is None else client_s)


def message(topic: str, n: int) -> pb.Message:
    return pb.Message(topic=pb.Resource(name=topic), body=BODY,
                      system_properties=pb.SystemProperties(message_id=f"BENCH{n:020d}"))


async def send_all(stub: grpc_v2.MessagingServiceStub, topic: str, count: int, in_flight: int) -> None:
    ids = iter(range(count))

    async def worker() -> None:
        for n in ids:  # the shared iterator hands each number to one worker
            answer = await stub.SendMessage(spb.SendMessageRequest(messages=[message(topic, n)]), metadata=ID,
                                            timeout=CALL_TIMEOUT_S)
            if answer.status.code != Code.OK:
                raise RuntimeError(f"send failed: {answer.status}")

    await asyncio.gather(*(worker() for _ in range(in_flight)))


async def receive_all(stub: grpc_v2.MessagingServiceStub, topic: str, group: str, broker: str, count: int,
                      receivers: int) -> int:
    """Receive and ack until ``count`` messages are acked (or a whole poll finds nothing); how many were.

    The receivers still long-polling when the last ack lands are cancelled then, so the idle
    tail does not count."""
    acked = 0
    all_acked = asyncio.Event()
    queue = pb.MessageQueue(topic=pb.Resource(name=topic), id=-1, broker=pb.Broker(name=broker))
    poll = pb.FilterExpression(type=pb.TAG, expression="*")

    async def receiver() -> None:
        nonlocal acked
        while acked < count:
            request = spb.ReceiveMessageRequest(
                group=pb.Resource(name=group), message_queue=queue, filter_expression=poll, batch_size=MAX_BATCH,
                invisible_duration=_seconds(INVISIBLE_S), long_polling_timeout=_seconds(POLL_S))
            got = [a.message async for a in stub.ReceiveMessage(request, metadata=ID, timeout=CALL_TIMEOUT_S)
                   if a.HasField("message")]
            if not got:
                return
            entries = [spb.AckMessageEntry(message_id=m.system_properties.message_id,
                                           receipt_handle=m.system_properties.receipt_handle) for m in got]
            answer = await stub.AckMessage(spb.AckMessageRequest(group=pb.Resource(name=group),
                                                                 topic=pb.Resource(name=topic), entries=entries),
                                           metadata=ID, timeout=CALL_TIMEOUT_S)
            if answer.status.code != Code.OK:
                raise RuntimeError(f"ack failed: {answer.status}")
            acked += len(entries)
        all_acked.set()

    tasks = [asyncio.create_task(receiver()) for _ in range(receivers)]
    waiter = asyncio.create_task(all_acked.wait())
    pending: set[asyncio.Task[object]] = {waiter, *tasks}
    while not waiter.done() and pending != {waiter}:  # until all acked, or every receiver found nothing
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not waiter and (failure := task.exception()) is not None:
                raise failure
    for task in pending:
        task.cancel()  # the receivers still long-polling
    await asyncio.gather(*pending, return_exceptions=True)
    return acked


def _seconds(n: int) -> duration_pb2.Duration:
    return duration_pb2.Duration(seconds=n)


async def broker_name(stub: grpc_v2.MessagingServiceStub, topic: str) -> str:
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while True:
        answer = await stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name=topic)), metadata=ID,
                                       timeout=CALL_TIMEOUT_S)
        if answer.status.code == Code.OK and answer.message_queues:
            return str(answer.message_queues[0].broker.name)
        if time.monotonic() > deadline:
            raise RuntimeError(f"no route for {topic} through the proxy: {answer.status}")
        await asyncio.sleep(0.5)


async def grpc_rows(endpoint: str, meter: Meter, topic: str, counts: dict[str, int], in_flight: int,
                    receivers: int) -> list[Row]:
    rows = []
    async with grpc.aio.insecure_channel(endpoint) as channel:
        stub = grpc_v2.MessagingServiceStub(channel)
        broker = await broker_name(stub, topic + "1")
        await send_all(stub, topic + "1", 50, 1)  # warm-up: channel, routes, the proxy's broker connection
        before = meter.snapshot()
        await send_all(stub, topic + "1", counts["single"], 1)
        rows.append(meter.row("grpc-1", counts["single"], before))
        before = meter.snapshot()
        await send_all(stub, topic + "N", counts["inflight"], in_flight)
        rows.append(meter.row(f"grpc-{in_flight}", counts["inflight"], before))
        before = meter.snapshot()
        acked = await receive_all(stub, topic + "N", f"{topic}_grpc_group", broker, counts["inflight"], receivers)
        rows.append(meter.row(f"grpc-receive ({receivers} receivers)", acked, before))
    return rows


def remoting_rows(cluster: Cluster, meter: Meter, topic: str, counts: dict[str, int], in_flight: int,
                  startup: float) -> list[Row]:
    plans = [("remoting-1", counts["single"], _producer(topic + "1", "sync", counts["single"], "-w", "1")),
             (f"remoting-{in_flight}", counts["inflight"],
              _producer(topic + "N", "sync", counts["inflight"], "-w", str(in_flight))),
             ("remoting-pull", counts["inflight"], ["consumer", "-t", topic + "N", "-g", f"{topic}_pull_group",
                                                    "-c", str(counts["inflight"]), "--from-first", "-d", "300"])]
    rows = []
    for scenario, count, args in plans:
        proxy0 = cpu_seconds(meter.proxy_pid)
        out, wall, broker, client = _run(cluster, args)
        done = SUMMARY.findall(out)
        messages = int(done[-1][1]) if done else count
        rows.append(Row(scenario, messages, wall, broker, cpu_seconds(meter.proxy_pid) - proxy0,
                        max(0.0, client - startup), float(done[-1][3]) if done else None))
    return rows


def create_topics(cluster: Cluster, topics: list[str]) -> None:
    for topic in topics:
        subprocess.run([*ROCKETQ, "admin", "updateTopic", "-n", cluster.namesrv, "-c", "DefaultCluster", "-t", topic],
                       check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the message counts")
    parser.add_argument("--rounds", type=int, default=2, help="rounds; each alternates which side goes first")
    parser.add_argument("--in-flight", type=int, default=32, help="sends in flight (N)")
    parser.add_argument("--receivers", type=int, default=4, help="concurrent ReceiveMessage callers (R)")
    args = parser.parse_args()
    counts = {k: max(1, int(v * args.scale)) for k, v in COUNTS.items()}
    print(f"calibration {calibrate():.0f} ns/call", flush=True)
    print("| scenario | messages | msg/s | broker CPU µs/msg | proxy CPU µs/msg | client CPU µs/msg |")
    print("|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="rocketq-grpc-") as tmp, Cluster(Path(tmp), "ASYNC_FLUSH") as cluster:
        proxy, address = start([*ROCKETQ[3:], "proxy", "-n", cluster.namesrv, "--grpc-port", str(free_port())],
                               Path(tmp) / "proxy.log")
        try:
            meter = Meter(cluster, proxy.pid)
            endpoint = address.replace("0.0.0.0", "127.0.0.1")
            _out, _wall, _broker, startup = _run(cluster, _producer("GWarm", "sync", 1))
            for round_no, order in zip(range(args.rounds), itertools.cycle(("remoting", "grpc")), strict=False):
                stamp = f"R{round_no}T{int(time.time())}"
                create_topics(cluster, [f"Rem{stamp}1", f"Rem{stamp}N", f"Grpc{stamp}1", f"Grpc{stamp}N"])
                sides = {"remoting": lambda s=stamp: remoting_rows(cluster, meter, f"Rem{s}", counts,
                                                                   args.in_flight, startup),
                         "grpc": lambda s=stamp: asyncio.run(grpc_rows(endpoint, meter, f"Grpc{s}", counts,
                                                                       args.in_flight, args.receivers))}
                for side in (order, "grpc" if order == "remoting" else "remoting"):
                    for row in sides[side]():
                        print(row.line(), flush=True)
        finally:
            stop([proxy], Path(tmp))
    print(f"calibration {calibrate():.0f} ns/call", flush=True)


if __name__ == "__main__":
    main()

"""The gRPC endpoint next to remoting: one broker, measured both ways in the same run.

    .venv/bin/python bench/run_grpc.py [--scale 1.0] [--rounds 2] [--in-flight 32] [--receivers 4]
        [--batch 16] [--grpc-only] [--proxy NAME=TREE ...] [--profile DIR]

It starts a local cluster (``rocketq local up``: one name server, one broker, free ports, a
temporary directory) and a ``rocketq proxy`` (CLUSTER mode) in front of it, then runs, per round:

============== ================================================================================
remoting-1     ``rocketq bench producer -m sync -w 1``: one send at a time, remoting
remoting-N     ``-m sync -w N``: N sends in flight
remoting-pull  ``rocketq bench consumer --from-first`` over what remoting-N stored (pull)
grpc-1         SendMessage with one message, one call at a time (grpc.aio, rocketq/proxy/v2 stubs)
grpc-N         N SendMessage calls in flight (N tasks, one message each)
grpc-batchB    N/4 SendMessage calls in flight, B messages each
grpc-receive   R receivers: ReceiveMessage (batch 32, long polling) then one AckMessage for the
               batch, over what grpc-N stored (POP on the broker, through the proxy)
============== ================================================================================

Rounds alternate which side goes first, so a change in the shared machine's speed hits both.
``--grpc-only`` leaves remoting out. ``--proxy NAME=TREE`` (repeatable) runs one proxy per source
tree (a checkout with its ``rocketq`` package, e.g. ``base=/tmp/main-copy``, ``new=.``) in
front of the same broker and measures them in turn, the order alternating per round: the
interleaved before/after of a proxy change. ``--profile DIR`` runs each proxy under cProfile
(``DIR/NAME.prof``, written when it stops; the CPU figures then include the profiler's cost).
Each row gives msg/s and CPU time per message of the broker, of the proxy (both from /proc)
and of the client (remoting: the ``rocketq bench`` process net of its start-up; gRPC: this
process's own CPU, grpc's threads included). Every body is 1 KiB. Nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import duration_pb2
from run_dledger import cpu_seconds
from run_ha import READY, free_port, stop
from run_matrix import ROCKETQ, SUMMARY, Cluster, _producer, _run, calibrate

from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

ROOT = Path(__file__).resolve().parent.parent
BODY = b"x" * 1024
MAX_BATCH = 32
INVISIBLE_S = 60
POLL_S = 5
CALL_TIMEOUT_S = 30.0
ID = (("x-mq-client-id", "run-grpc@bench"),)
COUNTS = {"single": 3_000, "inflight": 20_000, "batch": 20_000}
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


async def send_all(stub: grpc_v2.MessagingServiceStub, topic: str, count: int, in_flight: int,
                   batch: int = 1) -> None:
    """``count`` messages, ``batch`` per SendMessage, ``in_flight`` calls at a time."""
    firsts = iter(range(0, count, batch))

    async def worker() -> None:
        for first in firsts:  # the shared iterator hands each call's first number to one worker
            request = spb.SendMessageRequest(messages=[message(topic, n) for n in range(first, min(first + batch,
                                                                                                   count))])
            answer = await stub.SendMessage(request, metadata=ID, timeout=CALL_TIMEOUT_S)
            if answer.status.code != Code.OK or len(answer.entries) != len(request.messages):
                raise RuntimeError(f"send failed: {answer.status}, {len(answer.entries)} entries")

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
                    receivers: int, batch: int, label: str = "") -> list[Row]:
    rows = []
    async with grpc.aio.insecure_channel(endpoint) as channel:
        stub = grpc_v2.MessagingServiceStub(channel)
        broker = await broker_name(stub, topic + "1")
        await send_all(stub, topic + "1", 50, 1)  # warm-up: channel, routes, the proxy's broker connection
        before = meter.snapshot()
        await send_all(stub, topic + "1", counts["single"], 1)
        rows.append(meter.row(f"{label}grpc-1", counts["single"], before))
        before = meter.snapshot()
        await send_all(stub, topic + "N", counts["inflight"], in_flight)
        rows.append(meter.row(f"{label}grpc-{in_flight}", counts["inflight"], before))
        before = meter.snapshot()
        await send_all(stub, topic + "B", counts["batch"], max(1, in_flight // 4), batch)
        rows.append(meter.row(f"{label}grpc-batch{batch}", counts["batch"], before))
        before = meter.snapshot()
        acked = await receive_all(stub, topic + "N", f"{topic}_grpc_group", broker, counts["inflight"], receivers)
        rows.append(meter.row(f"{label}grpc-receive ({receivers} receivers)", acked, before))
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


def start_proxy(cluster: Cluster, name: str, tree: Path, tmp: Path,
                profile: Path | None) -> tuple[subprocess.Popen[bytes], str]:
    """A ``rocketq proxy`` run from ``tree``'s rocketq package (its working directory comes first
    on ``-m``'s path); under cProfile when ``profile`` names a directory."""
    args = ["proxy", "-n", cluster.namesrv, "--grpc-port", str(free_port())]
    log = tmp / f"proxy-{name}.log"
    out = open(log, "wb")  # noqa: SIM115 - kept open for the process's life
    runner = ["-m", "cProfile", "-o", str(profile / f"{name}.prof")] if profile is not None else []
    proc = subprocess.Popen([*ROCKETQ[:1], *runner, "-m", "rocketq", *args], stdout=out, stderr=subprocess.STDOUT,
                            cwd=tree)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if READY in line:
                return proc, line.rsplit(READY, 1)[1].strip().replace("0.0.0.0", "127.0.0.1")
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(log.read_text(errors="replace")[-2000:])


def _proxy_trees(specs: list[str]) -> dict[str, Path]:
    trees = {}
    for spec in specs or [f"proxy={ROOT}"]:
        name, _, tree = spec.partition("=")
        trees[name] = Path(tree or ROOT).resolve()
    return trees


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the message counts")
    parser.add_argument("--rounds", type=int, default=2, help="rounds; each alternates which side goes first")
    parser.add_argument("--in-flight", type=int, default=32, help="sends in flight (N)")
    parser.add_argument("--receivers", type=int, default=4, help="concurrent ReceiveMessage callers (R)")
    parser.add_argument("--batch", type=int, default=16, help="messages per SendMessage of grpc-batchB")
    parser.add_argument("--grpc-only", action="store_true", help="leave the remoting rows out")
    parser.add_argument("--proxy", action="append", default=[], metavar="NAME=TREE",
                        help="a proxy run from this source tree (repeat to compare, interleaved)")
    parser.add_argument("--profile", type=Path, help="run the proxies under cProfile, writing DIR/NAME.prof")
    args = parser.parse_args()
    counts = {k: max(1, int(v * args.scale)) for k, v in COUNTS.items()}
    trees = _proxy_trees(args.proxy)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    print(f"calibration {calibrate():.0f} ns/call", flush=True)
    print("| scenario | messages | msg/s | broker CPU µs/msg | proxy CPU µs/msg | client CPU µs/msg |")
    print("|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="rocketq-grpc-") as tmp, Cluster(Path(tmp), "ASYNC_FLUSH") as cluster:
        proxies = {name: start_proxy(cluster, name, tree, Path(tmp), args.profile) for name, tree in trees.items()}
        try:
            _out, _wall, _broker, startup = _run(cluster, _producer("GWarm", "sync", 1))
            for round_no in range(args.rounds):
                stamp = f"R{round_no}T{int(time.time())}"
                sides: list[tuple[str, Callable[[], list[Row]]]] = []
                for name, (proc, endpoint) in proxies.items():
                    prefix = f"Grpc{name}{stamp}"
                    create_topics(cluster, [prefix + "1", prefix + "N", prefix + "B"])
                    label = f"{name}: " if len(proxies) > 1 else ""
                    meter = Meter(cluster, proc.pid)
                    sides.append((name, lambda p=prefix, e=endpoint, m=meter, lb=label: asyncio.run(
                        grpc_rows(e, m, p, counts, args.in_flight, args.receivers, args.batch, lb))))
                if not args.grpc_only:
                    create_topics(cluster, [f"Rem{stamp}1", f"Rem{stamp}N"])
                    meter = Meter(cluster, next(iter(proxies.values()))[0].pid)
                    sides.append(("remoting", lambda s=stamp, m=meter: remoting_rows(
                        cluster, m, f"Rem{s}", counts, args.in_flight, startup)))
                shift = round_no % len(sides)
                for _name, side in sides[shift:] + sides[:shift]:
                    for row in side():
                        print(row.line(), flush=True)
        finally:
            stop([proc for proc, _endpoint in proxies.values()], Path(tmp))
    print(f"calibration {calibrate():.0f} ns/call", flush=True)


if __name__ == "__main__":
    main()

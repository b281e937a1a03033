"""Short fault scenarios against a real broker process: hostile or careless peers.

Each starts a name server and a broker, lets peers misbehave at the broker's remoting port, and
then checks the broker is alive, still serves ordinary clients, and kept its memory (RSS) and
log bounded: a peer that pipelines tens of thousands of requests and reads no answer; idle
connections under a low open-file limit; garbage frames from many connections.
"""

from __future__ import annotations

import asyncio
import os
import random
import resource
import struct
import urllib.request
from pathlib import Path

from clusterprocs import Proc, Processes
from prometheus_client.parser import text_string_to_metric_families

from rocketq.client import Message, Producer, PullConsumer
from rocketq.local.ports import free_port
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader

TOPIC = "HostileIT"
PIPELINED = 40_000
MAX_RSS_MB = 300
"""Far above a broker's ~70 MB at rest, far below the gigabytes an unbounded backlog reached."""
FILE_LIMIT = 256
IDLE_SECONDS = 3
FLOOD = 300
"""Idle connections opened against a broker limited to FILE_LIMIT descriptors."""
GARBAGE_CONNECTIONS = 200


class NonReader(asyncio.Protocol):
    """A peer that writes whatever it is given and never reads a byte."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.pause_reading()  # type: ignore[attr-defined]


def _rss_mb(proc: Proc) -> float:
    for line in Path(f"/proc/{proc.popen.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


def _remoting_metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels.get("process") == "broker":
                return float(sample.value)
    raise AssertionError(f"{name} not exported")


def _broker(processes: Processes, metrics_port: int, **kwargs: object) -> tuple[Proc, Proc]:
    ns = processes.namesrv()
    return ns, processes.broker(ns.address, extra=("--metrics-port", str(metrics_port)), **kwargs)  # type: ignore[arg-type]


def _pull_frame() -> bytes:
    header = PullMessageRequestHeader(
        consumer_group="hostile-cg", topic=TOPIC, queue_id=0, queue_offset=0, max_msg_nums=32, sys_flag=4,
        commit_offset=0, suspend_timeout_millis=0, subscription="*", expression_type="TAG")
    return RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=1, ext_fields=header.to_ext()).encode()


def _send_frame() -> bytes:
    fields = {"a": "hostile-pg", "b": TOPIC, "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "0", "h": "0"}
    return RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, opaque=1, ext_fields=fields, body=b"x" * 64).encode()


async def _served(namesrv: str, topic: str, body: bytes) -> list[bytes]:
    """Send one message as an ordinary client, then pull its queue from the start."""
    async with Producer("ordinary-pg", namesrv_addr=namesrv) as producer, \
            PullConsumer("ordinary-cg", namesrv_addr=namesrv) as consumer:
        sent = await producer.send(Message(topic, body), selector=lambda queues: queues[0])
        result = await consumer.pull(sent.message_queue, "*", 0, max_nums=32)
        return [m.body for m in result.messages]


async def test_a_peer_that_pipelines_and_never_reads_costs_bounded_memory(processes: Processes) -> None:
    metrics_port = free_port()
    ns, broker = _broker(processes, metrics_port)
    async with Producer("hostile-setup-pg", namesrv_addr=ns.address) as producer:
        for _ in range(32):  # each pull answer: 32 messages of 1 KB
            await producer.send(Message(TOPIC, bytes(1024)), selector=lambda queues: queues[0])
    host, port = broker.address.rsplit(":", 1)
    loop = asyncio.get_running_loop()
    hostile = []
    try:
        for frame in (_pull_frame(), _send_frame()):
            transport, _ = await loop.create_connection(NonReader, host, int(port))
            transport.write(frame * PIPELINED)
            hostile.append(transport)
        await asyncio.sleep(3)  # the broker works through whatever it reads
        assert await _served(ns.address, "HostileOtherIT", b"meanwhile") == [b"meanwhile"]
        rss = _rss_mb(broker)
        print(f"broker RSS with two non-reading peers of {PIPELINED} requests each: {rss:.0f} MB")
        assert rss < MAX_RSS_MB
        assert _remoting_metric(metrics_port, "rocketmq_remoting_reads_paused_total") >= 1
    finally:
        for transport in hostile:
            transport.abort()
    assert broker.popen.poll() is None


def _low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


async def test_idle_connections_close_and_a_low_file_limit_starves_no_client(processes: Processes) -> None:
    metrics_port = free_port()
    ns, broker = _broker(processes, metrics_port, preexec_fn=_low_file_limit,
                         config={"serverChannelMaxIdleTimeSeconds": str(IDLE_SECONDS)})
    host, port = broker.address.rsplit(":", 1)
    async with Producer("idle-pg", namesrv_addr=ns.address) as producer:
        await producer.send(Message("IdleBeforeIT", b"before"))
        flood = [await asyncio.open_connection(host, int(port)) for _ in range(FLOOD)]
        try:
            # within the idle time, on the producer's open connection: a new topic means new store files
            await producer.send(Message("IdleDuringIT", b"during"))
            print(f"{len(os.listdir(f'/proc/{broker.popen.pid}/fd'))} descriptors open in the broker "
                  f"during a flood of {FLOOD} connections")
            async with asyncio.timeout(IDLE_SECONDS * 5):  # refused at once, or closed when idle
                while not all(reader.at_eof() for reader, _ in flood):
                    await asyncio.sleep(0.1)
        finally:
            for _, writer in flood:
                writer.close()
        refused = _remoting_metric(metrics_port, "rocketmq_remoting_connections_refused_total")
        idle_closed = _remoting_metric(metrics_port, "rocketmq_remoting_idle_closed_total")
        assert refused >= 1 and idle_closed >= 1 and refused + idle_closed >= FLOOD
        # the producer's own connection went idle too: its next send reconnects by itself
        await producer.send(Message("IdleAfterIT", b"after"))
    for topic, body in (("IdleBeforeIT", b"before"), ("IdleDuringIT", b"during")):
        async with PullConsumer(f"idle-cg-{topic}", namesrv_addr=ns.address) as consumer:
            pulled = [m.body for mq in await consumer.fetch_subscribe_queues(topic)
                      for m in (await consumer.pull(mq, "*", 0, max_nums=32)).messages]
            assert pulled == [body]
    log = broker.log.read_text(errors="replace")
    assert "Too many open files" not in log and "EMFILE" not in log
    assert broker.popen.poll() is None


def _garbage(rng: random.Random, i: int) -> bytes:
    if i % 2:
        return b"GET /metrics HTTP/1.1\r\nHost: broker\r\n\r\n"  # a length of 1.2 GB: refused unread
    header = b"\xff" + rng.randbytes(rng.randrange(8, 200))  # never JSON: not even UTF-8
    return struct.pack(">iI", 4 + len(header), len(header)) + header


async def _closed_after(host: str, port: int, data: bytes) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(data)
    try:
        async with asyncio.timeout(10):
            await reader.read()
    finally:
        writer.close()


async def test_garbage_from_many_connections_is_counted_and_logged_sparingly(processes: Processes) -> None:
    metrics_port = free_port()
    ns, broker = _broker(processes, metrics_port)
    host, port = broker.address.rsplit(":", 1)
    rng = random.Random(20261124)
    for start in range(0, GARBAGE_CONNECTIONS, 50):
        await asyncio.gather(*(_closed_after(host, int(port), _garbage(rng, i))
                               for i in range(start, start + 50)))
    assert _remoting_metric(metrics_port, "rocketmq_remoting_bad_frames_total") == GARBAGE_CONNECTIONS
    lines = [line for line in broker.log.read_text(errors="replace").splitlines() if "bad frame" in line]
    assert 1 <= len(lines) <= 2, lines  # one per peer host per 10 s, and the test takes less
    assert await _served(ns.address, "GarbageIT", b"still here") == [b"still here"]
    assert _rss_mb(broker) < MAX_RSS_MB and broker.popen.poll() is None

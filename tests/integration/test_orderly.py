"""Orderly consumption end to end: per-key order across a rebalance and a consumer's SIGKILL.

Messages of eight keys go to a 4-queue topic with ``hash_by_key``, so each key lives in one
queue. Consumer A (a process) starts alone and holds every queue; consumer B (a process) joins,
so A gives two queues away (committing, then unlocking) and B locks them; then A is killed with
SIGKILL and, once the broker's lock expires (rebalanceLockMaxLiveTime, 3 s here), B takes A's
queues too. Every consumed message is logged with its wall time by the process that consumed
it. Per key, in time order, each message must be the next one; only where the key's queue
changed owner may the new owner replay from an earlier point (messages consumed but not yet
committed). Two members consuming one queue at the same time, a member consuming a queue out
of order or twice, or a skipped message would each break that.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from test_sdk_push import FAST, wait_until

from rocketq.admin.client import AdminClient
from rocketq.admin.stats import MessageQueue as AdminQueue
from rocketq.client.messages import Message
from rocketq.client.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.selectors import hash_by_key
from rocketq.protocol import codes

TOPIC = "OrderIT"
GROUP = "order-cg"
KEYS = [f"key-{i}" for i in range(8)]
PER_KEY = 40
WORKER = Path(__file__).with_name("orderly_worker.py")


def start_worker(namesrv: str, out: Path) -> subprocess.Popen[bytes]:
    with open(out.with_suffix(".log"), "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen([sys.executable, str(WORKER), namesrv, GROUP, TOPIC, str(out)],
                                stdout=subprocess.PIPE, stderr=log)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def records(*files: Path) -> list[tuple[float, str, str, int]]:
    """(time, consumer, key, seq) of every consumption logged, in time order."""
    out = []
    for path in files:
        if path.exists():
            for line in path.read_text().splitlines():
                stamp, body = line.split(" ", 1)
                key, seq = body.rsplit(":", 1)
                out.append((float(stamp), path.stem, key, int(seq)))
    return sorted(out)


def order_breaks(consumed: list[tuple[float, str, str, int]]) -> list[str]:
    """Where a key's sequence is not next-in-line. Only when the key's queue changed owner may
    the new owner replay from an earlier point (what was consumed but not yet committed)."""
    last: dict[str, tuple[str, int]] = {}
    breaks = []
    for _, consumer, key, seq in consumed:
        owner, previous = last.get(key, (consumer, -1))
        if seq != previous + 1 and (owner == consumer or seq > previous):
            breaks.append(f"{key}: {seq} after {previous} ({owner} then {consumer})")
        last[key] = (consumer, seq)
    return breaks


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


async def test_key_order_survives_a_rebalance_and_a_killed_consumer(processes: Any, tmp_path: Path) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config={"rebalanceLockMaxLiveTime": "3000"})
    async with Producer("order-pg", namesrv_addr=ns.address, default_topic_queue_nums=4) as producer:
        for seq in range(PER_KEY):
            for key in KEYS:
                await producer.send(Message(TOPIC, f"{key}:{seq}".encode(), keys=key), selector=hash_by_key(key))
    a_out, b_out = tmp_path / "a.txt", tmp_path / "b.txt"
    a = start_worker(ns.address, a_out)
    b = None
    try:
        await wait_until(lambda: lines(a_out) >= 20)
        b = start_worker(ns.address, b_out)
        await wait_until(lambda: lines(b_out) >= 10)  # B got queues A gave away
        assert lines(a_out) + lines(b_out) < len(KEYS) * PER_KEY, "the kill must land mid-stream"
        a.kill()
        killed_at = time.time()
        a.wait(10)
        everything = {(key, seq) for key in KEYS for seq in range(PER_KEY)}
        await wait_until(lambda: {(k, s) for _, _c, k, s in records(a_out, b_out)} >= everything, limit=90)
    finally:
        stop(a)
        if b is not None:
            stop(b)
    consumed = records(a_out, b_out)
    assert order_breaks(consumed) == []
    b_before = {k for t, _c, k, _s in records(b_out) if t < killed_at}
    taken_over = {k for t, _c, k, _s in records(b_out) if t > killed_at} - b_before
    assert taken_over & {k for _, _c, k, _s in records(a_out)}, "B took over keys A was consuming when killed"
    assert b_before, "B consumed queues A gave away in the rebalance"


async def test_an_orderly_message_past_max_reconsume_times_is_dead_lettered_and_the_queue_moves_on(
        processes: Any) -> None:
    # RocketMQ's orderly client sends the message to %RETRY%group with RECONSUME_TIME and
    # MAX_RECONSUME_TIMES; the broker must turn that send into one to %DLQ%group
    ns = processes.namesrv()
    broker = processes.broker(ns.address)
    topic, group = "OrderDLQ", "order-dlq-cg"
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs: list[Any], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        ctx.suspend_current_queue_time_millis = 50
        seen.extend((m.body, m.reconsume_times) for m in msgs)
        if any(m.body == b"poison" for m in msgs):
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    bodies = [b"poison"] + [f"after-{i}".encode() for i in range(5)]
    async with Producer("order-dlq-pg", namesrv_addr=ns.address, default_topic_queue_nums=1) as producer:
        for body in bodies:
            await producer.send(Message(topic, body), selector=hash_by_key("one"))
    consumer = PushConsumer(group, namesrv_addr=ns.address, max_reconsume_times=1, **FAST)
    consumer.subscribe(topic, "*")
    consumer.register_orderly_listener(listener)
    async with consumer:
        await wait_until(lambda: len([b for b, _ in seen if b != b"poison"]) >= 5)
    assert seen[:2] == [(b"poison", 0), (b"poison", 1)]
    assert [b for b, _ in seen[2:]] == bodies[1:]
    async with AdminClient(ns.address) as admin:
        dead = await admin.pull(broker.address, AdminQueue(codes.dlq_topic(group), "broker-a", 0), 0)
        retried = await admin.max_offset(broker.address, codes.retry_topic(group), 0)
    assert [(m.body, m.topic, m.reconsume_times) for m in dead.messages] == [(b"poison", codes.dlq_topic(group), 1)]
    assert dead.messages[0].properties["RETRY_TOPIC"] == topic
    assert retried == 0

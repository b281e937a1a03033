"""Chaos run: a seeded fault schedule over one SYNC_MASTER + SYNC_FLUSH broker group, with a
ledger of acknowledged sends checked against a full read at the end.

One name server, a master and its slave, all on 127.0.0.1 with free ports and a temp dir. A
producer sends continuously (sync sends); a message enters the ledger only when answered
SEND_OK. Meanwhile faults drawn from ``random.Random(seed)`` hit the group:

- ``promote``: kill -9 the master, promote the slave (NOTIFY_BROKER_ROLE_CHANGED, what
  ``rocketq admin electMaster`` sends), restart the old master as its slave through role.json
  (it cuts its unreplicated tail by epochs);
- ``kill_slave``: kill -9 the slave and restart it;
- ``stop_master`` / ``stop_slave``: SIGSTOP for a few seconds, then SIGCONT.

Recovery time of a fault is from the fault to the SEND_OK of the first send made after it (an
answer already on its way says nothing about the group after the fault). At the end every queue
is read from the current master: an acknowledged key missing there is lost (the run's one
assertion); a key read twice is a duplicate (counted, not asserted: a resent timed-out send may
store twice).

Every process is stopped by PID in a ``finally``. Usage:
``python -m e2e.chaos.runner --faults 100 --duration 1800 --seed 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TESTS = Path(__file__).resolve().parents[2] / "tests"
for _sub in ("integration", "ha"):
    if str(_TESTS / _sub) not in sys.path:
        sys.path.insert(0, str(_TESTS / _sub))

from clusterprocs import Processes  # noqa: E402 - importable once the path above is set
from haprocs import (  # noqa: E402
    FIXTURES,
    Broker,
    read_keys,
    restart,
    runtime,
    start_broker,
    wait_slave_connected,
)

from rocketq.admin.client import AdminClient  # noqa: E402
from rocketq.client.producer import Producer  # noqa: E402
from rocketq.client.sending import SendStatus  # noqa: E402
from rocketq.protocol.messagetypes import Message  # noqa: E402

TOPIC = "ChaosIT"
FAULTS = ("promote", "kill_slave", "stop_master", "stop_slave")
STOP_SECONDS = (1.0, 4.0)
"""How long a SIGSTOP lasts (uniform in this range)."""
RECOVERY_LIMIT = 60.0
"""A fault with no SEND_OK this long after it fails the run (the group did not recover)."""
SETTLE_LIMIT = 60.0
"""How long to wait for the slave to reconnect before the next fault."""


@dataclass
class Ledger:
    acked: list[str] = field(default_factory=list)
    last_ok: float = 0.0
    ack_times: list[tuple[float, float]] = field(default_factory=list)
    """(sent, answered) of each acknowledged send, monotonic, ascending (one send at a time)."""
    errors: Counter[str] = field(default_factory=Counter)


@dataclass
class Result:
    seed: int
    faults: list[str]
    recoveries: list[float]
    acked: int
    lost: list[str]
    duplicates: int
    errors: dict[str, int]

    def summary(self) -> str:
        return (f"seed={self.seed} faults={len(self.faults)} {dict(Counter(self.faults))} "
                f"acked={self.acked} lost={len(self.lost)} duplicates={self.duplicates} "
                f"recovery {spread(self.recoveries)} send errors={self.errors}")


def spread(seconds: list[float]) -> str:
    """p50, p99 and max of some durations, as a summary prints them."""
    ordered = sorted(seconds)
    p50 = statistics.median(ordered) if ordered else 0.0
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
    return f"p50={p50:.2f}s p99={p99:.2f}s max={max(ordered, default=0):.2f}s"


async def produce(namesrv: str, ledger: Ledger, stop: asyncio.Event, **options: Any) -> None:
    """Sends until ``stop``; ``options`` are the producer's settings (e.g. pollNameServerInterval)."""
    async with Producer("chaos-pg", namesrv_addr=namesrv, **options) as producer:
        i = 0
        while not stop.is_set():
            key = f"k{i}"
            sent = time.monotonic()
            i += 1
            try:
                result = await asyncio.wait_for(
                    producer.send(Message(TOPIC, key.encode(), properties={"KEYS": key})), 10)
            except Exception as exc:  # every failure is a non-ack; the kind is reported
                ledger.errors[type(exc).__name__] += 1
                await asyncio.sleep(0.05)
                continue
            if result.status is SendStatus.SEND_OK:
                ledger.acked.append(key)
                ledger.last_ok = time.monotonic()
                ledger.ack_times.append((sent, ledger.last_ok))
            else:
                ledger.errors[result.status.name] += 1
                await asyncio.sleep(0.05)


class Group:
    """The master/slave pair; ``promote`` swaps which is which."""

    def __init__(self, procs: Processes, namesrv: str) -> None:
        self.procs = procs
        self.master = start_broker(procs, FIXTURES / "2m-2s-sync" / "broker-a.properties", namesrv,
                                   procs.tmp / "a", "flushDiskType=SYNC_FLUSH")
        self.slave = start_broker(procs, FIXTURES / "2m-2s-async" / "broker-a-s.properties", namesrv,
                                  procs.tmp / "a-s", "flushDiskType=SYNC_FLUSH")

    async def promote(self, admin: AdminClient) -> None:
        old, new = self.master, self.slave
        old.proc.kill9()
        await admin.change_broker_role(new.address, "SYNC_MASTER", 0)
        (old.store / "config").mkdir(parents=True, exist_ok=True)
        (old.store / "config" / "role.json").write_text(json.dumps({"brokerRole": "SLAVE", "brokerId": 1}))
        self.master, self.slave = new, old
        await self.restart(old)

    async def kill_slave(self) -> None:
        self.slave.proc.kill9()
        await self.restart(self.slave)

    async def restart(self, broker: Broker) -> None:
        # in a thread: starting waits for the ready line, and the producer must go on meanwhile
        # (else the restart's seconds count as the group's recovery)
        await asyncio.to_thread(restart, self.procs, broker)

    @staticmethod
    async def pause(broker: Broker, seconds: float) -> None:
        os.kill(broker.proc.popen.pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)
        finally:
            os.kill(broker.proc.popen.pid, signal.SIGCONT)


async def inject(group: Group, admin: AdminClient, fault: str, rng: random.Random) -> None:
    if fault == "promote":
        await group.promote(admin)
    elif fault == "kill_slave":
        await group.kill_slave()
    elif fault == "stop_master":
        await Group.pause(group.master, rng.uniform(*STOP_SECONDS))
    else:
        await Group.pause(group.slave, rng.uniform(*STOP_SECONDS))


async def wait_recovered(ledger: Ledger, since: float) -> float:
    while ledger.last_ok <= since:
        if time.monotonic() - since > RECOVERY_LIMIT:
            raise AssertionError(f"no SEND_OK within {RECOVERY_LIMIT}s of a fault")
        await asyncio.sleep(0.05)
    return ledger.last_ok - since


async def recovered(ledger: Ledger, moment: float) -> float:
    """Seconds from ``moment`` to the SEND_OK of the first send made after it (an answer already
    on its way at ``moment`` says nothing about the group after the fault)."""
    while not ledger.ack_times or ledger.ack_times[-1][0] <= moment:
        if time.monotonic() - moment > RECOVERY_LIMIT:
            raise AssertionError(f"no SEND_OK within {RECOVERY_LIMIT}s of a fault")
        await asyncio.sleep(0.05)
    at = bisect.bisect_right(ledger.ack_times, moment, key=lambda sent_answered: sent_answered[0])
    return ledger.ack_times[at][1] - moment


async def run(tmp: Path, *, faults: int, duration: float, seed: int) -> Result:
    rng = random.Random(seed)
    deadline = time.monotonic() + duration
    procs = Processes(tmp)
    try:
        namesrv = procs.namesrv().address
        group = Group(procs, namesrv)
        ledger, stop = Ledger(), asyncio.Event()
        async with AdminClient(namesrv) as admin:
            await wait_slave_connected(group.master, SETTLE_LIMIT)
            producer = asyncio.create_task(produce(namesrv, ledger, stop))
            await wait_recovered(ledger, time.monotonic())
            await until_slave_has_topic(admin, group)
            done: list[str] = []
            recoveries: list[float] = []
            while len(done) < faults and time.monotonic() < deadline:
                fault = rng.choice(FAULTS)
                start = time.monotonic()
                await inject(group, admin, fault, rng)
                recoveries.append(await recovered(ledger, start))
                done.append(fault)
                await wait_slave_connected(group.master, SETTLE_LIMIT)
                await until_slave_has_topic(admin, group)
                await asyncio.sleep(rng.uniform(0.2, 1.0))
            stop.set()
            await producer
        keys = await read_keys(namesrv, TOPIC, "chaos-cg")
        lost = sorted(set(ledger.acked) - set(keys))
        dups = sum(n - 1 for n in Counter(keys).values() if n > 1)
        return Result(seed, done, recoveries, len(ledger.acked), lost, dups, dict(ledger.errors))
    finally:
        procs.stop_all()


async def until_slave_has_topic(admin: AdminClient, group: Group) -> None:
    """A slave promoted before metadata sync brought it the topic would not own its queues."""
    deadline = time.monotonic() + SETTLE_LIMIT
    while TOPIC not in await admin.all_topic_config(group.slave.address):
        if time.monotonic() > deadline:
            raise AssertionError("slave never learned the topic")
        await asyncio.sleep(0.2)
    await runtime(group.master.address)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, default=100)
    parser.add_argument("--duration", type=float, default=1800, help="seconds; the run stops injecting after it")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rocketq-chaos-") as tmp:
        result = asyncio.run(run(Path(tmp), faults=args.faults, duration=args.duration, seed=args.seed))
    print(result.summary())
    if result.lost:
        print(f"LOST {len(result.lost)} acknowledged: {result.lost[:20]}")
        sys.exit(1)


if __name__ == "__main__":
    main()

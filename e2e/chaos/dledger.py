"""Chaos run over a DLedger group: a seeded fault schedule against three real broker processes
that elect their own leader, with a ledger of acknowledged sends checked against a full read at
the end (issue #9, "What must be shown").

One name server and the members n0, n1, n2 of Apache's ``dledger/broker-n*.conf`` (ports and
paths changed), all on 127.0.0.1 with free ports and a temp dir. The producer and the ledger
are the master/slave run's (``e2e/chaos/runner.py``): a key enters the ledger only when answered
SEND_OK, which a DLedger leader answers once a majority holds the entry. Faults, in rounds of
every kind once, each round's order drawn from ``random.Random(seed)``:

- ``kill_leader``: kill -9 the leader; once another member leads, restart it (it rejoins as a
  follower and cuts what never committed);
- ``kill_member``: kill -9 a random member (leader or not), restart it after a moment;
- ``stop_leader``: SIGSTOP the leader longer than the followers wait for heartbeats, so the
  others elect a new leader; SIGCONT (the old one finds a higher term and follows);
- ``stop_member``: SIGSTOP one random member for a few seconds (no majority is lost);
- ``stop_majority``: SIGSTOP two members for a few seconds: the one left can commit nothing, so
  no send may be acknowledged meanwhile (counted as ``acked_without_majority``).

Leader change time, for the faults that take the leader away, is from the fault to the moment
another member leads and has registered as the group's master. Recovery time is from the kill
or SIGSTOP to the SEND_OK of the first send made after it (a stop's length included). Before
the next fault every member must be back and caught up. At the end the run reads every queue
from the leader: an acknowledged key missing is lost (the run fails), a key read twice is a
duplicate (counted: a resent timed-out send may be stored twice).

Every process is stopped by PID in a ``finally``. Usage:
``python -m e2e.chaos.dledger --faults 100 --duration 2400 --seed 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from e2e.chaos.runner import TOPIC, Group, Ledger, Result, produce, recovered, spread, wait_recovered

_DLEDGER_TESTS = Path(__file__).resolve().parents[2] / "tests" / "dledger"
if str(_DLEDGER_TESTS) not in sys.path:
    sys.path.insert(0, str(_DLEDGER_TESTS))

from clusterprocs import Processes  # noqa: E402 - importable once runner set the paths
from dledgerprocs import start_group, wait_caught_up, wait_leader  # noqa: E402
from haprocs import Broker, read_keys, restart  # noqa: E402

log = logging.getLogger(__name__)

FAULTS = ("kill_leader", "kill_member", "stop_leader", "stop_member", "stop_majority")
STOP_SECONDS = (1.0, 4.0)
"""How long a ``stop_member`` / ``stop_majority`` SIGSTOP lasts (uniform in this range)."""
KILLED_SECONDS = (0.5, 3.0)
"""How long a ``kill_member`` victim stays down before its restart."""
NO_MAJORITY_GRACE = 2.0
"""An answer may still arrive this long after a majority stops (its commit came just before)."""
LEADER_CHANGE_LIMIT = 60.0
"""A leader taken away and no successor this long after: the run fails."""
SETTLE_LIMIT = 90.0
"""How long every member may take to be back and caught up before the next fault."""
ROUTE_REFRESH_MS = 30_000
"""The producer's pollNameServerInterval: the client's default. The SDK asks the name servers
again as soon as a send fails as after a leader change (docs/sdk.md, Failover), so the new
leader is found without this timer; ``--route-refresh-ms`` still sets it."""
DEFAULT_HEARTBEAT_MS = 2000
"""DLedger's default heartBeatTimeIntervalMs (a follower gives up on a leader after 3 of them)."""
MAX_HEARTBEAT_LEAK = 3


@dataclass
class DLedgerResult(Result):
    leader_changes: list[float] = field(default_factory=list)
    acked_without_majority: int = 0

    def summary(self) -> str:
        pairs = list(zip(self.faults, self.recoveries, strict=True))
        by_fault = "; ".join(f"{kind} {spread([r for f, r in pairs if f == kind])}"
                             for kind in sorted(set(self.faults)))
        return (f"{super().summary()} leader change {spread(self.leader_changes)} "
                f"(n={len(self.leader_changes)}) acked_without_majority={self.acked_without_majority}; "
                f"recovery by fault: {by_fault}")


@dataclass
class Members:
    """The group and the faults' bookkeeping."""

    procs: Processes
    brokers: list[Broker]
    ledger: Ledger
    rng: random.Random
    leader_changes: list[float] = field(default_factory=list)
    acked_without_majority: int = 0
    struck: float = 0.0
    """When the last fault hit (its kill or SIGSTOP): recovery is measured from here."""

    def strike(self) -> None:
        self.struck = time.monotonic()

    async def leader(self) -> Broker:
        return await wait_leader(self.brokers, LEADER_CHANGE_LIMIT)

    async def new_leader_after(self, old: Broker, since: float) -> None:
        """Waits for a member other than ``old`` to lead and records how long it took."""
        await wait_leader([b for b in self.brokers if b is not old], LEADER_CHANGE_LIMIT)
        self.leader_changes.append(time.monotonic() - since)

    async def restart(self, broker: Broker) -> None:
        # in a thread: starting waits for the ready line, and the producer must go on meanwhile
        await asyncio.to_thread(restart, self.procs, broker)

    async def kill_leader(self) -> None:
        old = await self.leader()
        old.proc.kill9()
        self.strike()
        await self.new_leader_after(old, self.struck)
        await self.restart(old)

    async def kill_member(self) -> None:
        victim = self.rng.choice(self.brokers)
        victim.proc.kill9()
        self.strike()
        await asyncio.sleep(self.rng.uniform(*KILLED_SECONDS))
        await self.restart(victim)

    async def stop_leader(self) -> None:
        old = await self.leader()
        self.strike()
        stopped = asyncio.create_task(Group.pause(old, LEADER_CHANGE_LIMIT))
        try:
            await self.new_leader_after(old, self.struck)
        finally:
            stopped.cancel()  # its finally sends SIGCONT
            await asyncio.gather(stopped, return_exceptions=True)

    async def stop_member(self) -> None:
        self.strike()
        await Group.pause(self.rng.choice(self.brokers), self.rng.uniform(*STOP_SECONDS))

    async def stop_majority(self) -> None:
        seconds = NO_MAJORITY_GRACE + self.rng.uniform(*STOP_SECONDS)
        self.strike()
        pauses = asyncio.gather(*(Group.pause(b, seconds) for b in self.rng.sample(self.brokers, 2)))
        await asyncio.sleep(NO_MAJORITY_GRACE)
        before = len(self.ledger.acked)
        await pauses
        self.acked_without_majority += len(self.ledger.acked) - before

    async def settle(self) -> None:
        await wait_caught_up(self.brokers, SETTLE_LIMIT)


def schedule(rng: random.Random) -> Iterator[str]:
    """Fault kinds in rounds, each round every kind once in a random order: a short run of
    len(FAULTS) faults already hits each."""
    while True:
        yield from rng.sample(FAULTS, len(FAULTS))


async def run(tmp: Path, *, faults: int, duration: float, seed: int,
              heartbeat_ms: int = DEFAULT_HEARTBEAT_MS, route_refresh_ms: int = ROUTE_REFRESH_MS) -> DLedgerResult:
    rng = random.Random(seed)
    deadline = time.monotonic() + duration
    procs = Processes(tmp)
    try:
        namesrv = procs.namesrv().address
        brokers = start_group(procs, namesrv, f"heartBeatTimeIntervalMs={heartbeat_ms}",
                              f"maxHeartBeatLeak={MAX_HEARTBEAT_LEAK}", metrics=False)
        ledger, stop = Ledger(), asyncio.Event()
        members = Members(procs, brokers, ledger, rng)
        await members.settle()
        producer = asyncio.create_task(produce(namesrv, ledger, stop, poll_name_server_interval=route_refresh_ms))
        try:
            await wait_recovered(ledger, time.monotonic())
            done: list[str] = []
            recoveries: list[float] = []
            kinds = schedule(rng)
            while len(done) < faults and time.monotonic() < deadline:
                fault = next(kinds)
                await getattr(members, fault)()
                recoveries.append(await recovered(ledger, members.struck))
                done.append(fault)
                log.info("fault %d %s: recovered in %.2f s, %d acknowledged so far",
                         len(done), fault, recoveries[-1], len(ledger.acked))
                await members.settle()
                await asyncio.sleep(rng.uniform(0.2, 1.0))
        finally:
            stop.set()
            await producer
        await members.settle()
        keys = await read_keys(namesrv, TOPIC, "chaos-cg")
        lost = sorted(set(ledger.acked) - set(keys))
        dups = sum(n - 1 for n in Counter(keys).values() if n > 1)
        return DLedgerResult(seed, done, recoveries, len(ledger.acked), lost, dups, dict(ledger.errors),
                             members.leader_changes, members.acked_without_majority)
    finally:
        procs.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, default=100)
    parser.add_argument("--duration", type=float, default=2400, help="seconds; the run stops injecting after it")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--heartbeat-ms", type=int, default=DEFAULT_HEARTBEAT_MS,
                        help="heartBeatTimeIntervalMs of the members (DLedger's default 2000)")
    parser.add_argument("--route-refresh-ms", type=int, default=ROUTE_REFRESH_MS,
                        help="the producer's pollNameServerInterval (the client's default is 30000)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("rocketq").setLevel(logging.ERROR)  # the producer's warnings while members are down
    with tempfile.TemporaryDirectory(prefix="rocketq-chaos-dledger-") as tmp:
        result = asyncio.run(run(Path(tmp), faults=args.faults, duration=args.duration, seed=args.seed,
                                 heartbeat_ms=args.heartbeat_ms, route_refresh_ms=args.route_refresh_ms))
    print(result.summary())
    if result.lost or result.acked_without_majority:
        print(f"LOST {len(result.lost)} acknowledged: {result.lost[:20]}; "
              f"acknowledged without a majority: {result.acked_without_majority}")
        sys.exit(1)


if __name__ == "__main__":
    main()

"""Raft's safety properties, checked over a RaftGroup while faults hit it (the fault and model tests).

A :class:`SafetyMonitor` watches a group: every member's role listener, plus a sampler that reads
every running member's state and every member's log (the logs of stopped members too: they are
their disks) every ``SAMPLE_INTERVAL``. What it finds wrong it records in ``violations`` rather
than raising, because a listener's exception would be swallowed by the member that called it.

- **Election safety**: at most one leader per term, over every leader ever seen.
- **Log matching**: for any two logs, if the entries at an index have the same term, every entry
  up to it is identical (checked at the highest such index, which covers every lower one).
- **Leader completeness**: an entry that ``wait_committed`` acknowledged in term T is, at its
  index, in the log of every leader of a term after T (whenever that leader is seen).

:meth:`SafetyMonitor.check_converged`, once the group has healed, adds **no acknowledged loss**
and **state machine safety**: every acknowledged entry is at its index on every member, and the
committed prefixes are identical everywhere. :func:`start` and :func:`send` drive a group the
way the broker does, telling the monitor what the leader acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from itertools import combinations
from typing import Final

from memlog import MemLog
from raftgroup import RaftGroup, until, write

from rocketq.dledger.contract import Entry, MemberState, Role

SAMPLE_INTERVAL: Final = 0.02
"""Seconds between two looks at every member: a leader of a term lasts far longer than this."""
ACK_TIMEOUT: Final = 1.0
"""Seconds a test write waits for its commit (the broker's maxWaitAckTimeMs, shortened)."""


class SafetyMonitor:
    def __init__(self, group: RaftGroup) -> None:
        self.group = group
        self.leaders_by_term: dict[int, set[str]] = defaultdict(set)
        self.acknowledged: dict[int, Entry] = {}
        self.violations: list[str] = []
        self.samples = 0

    def watch(self, member_id: str) -> None:
        """Listen to a (re)started member's role changes."""
        self.group.nodes[member_id].add_role_listener(self._on_state)

    def acknowledge(self, entry: Entry) -> None:
        """``entry`` was acknowledged by ``wait_committed`` of the leader that appended it."""
        self.acknowledged[entry.index] = entry

    @contextlib.asynccontextmanager
    async def sampling(self) -> AsyncIterator[None]:
        """Sample the group in the background while the body runs."""
        task = asyncio.get_running_loop().create_task(self._sample_forever())
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self.sample()

    async def _sample_forever(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(SAMPLE_INTERVAL)

    def sample(self) -> None:
        self.samples += 1
        for node in self.group.running():
            self._on_state(node.state())
        for (a, log_a), (b, log_b) in combinations(self.group.logs.items(), 2):
            self._check_matching(a, log_a, b, log_b)

    def _on_state(self, state: MemberState) -> None:
        if state.role is not Role.LEADER:
            return
        leaders = self.leaders_by_term[state.term]
        leaders.add(state.self_id)
        if len(leaders) > 1:
            self._violation(f"election safety: leaders {sorted(leaders)} in term {state.term}")
        log = self.group.logs[state.self_id]
        for entry in self.acknowledged.values():
            if entry.term < state.term and _entry_at(log, entry.index) != entry:
                self._violation(f"leader completeness: {state.self_id}, leader of term {state.term}, has "
                                f"{_entry_at(log, entry.index)} where {entry} was acknowledged")

    def _check_matching(self, a: str, log_a: MemLog, b: str, log_b: MemLog) -> None:
        common = min(log_a.last_index, log_b.last_index)
        same_term = next((i for i in range(common, 0, -1) if log_a.term_at(i) == log_b.term_at(i)), 0)
        if log_a.entries[:same_term] != log_b.entries[:same_term]:
            self._violation(f"log matching: {a} and {b} agree on the term at index {same_term} "
                            f"but differ below it")

    def _violation(self, text: str) -> None:
        if text not in self.violations:
            self.violations.append(text)

    async def check_converged(self) -> None:
        """Once healed and every member runs: all commit the last acknowledged entry, and then
        hold every acknowledged entry with identical committed prefixes."""
        assert self.acknowledged, "the scenario acknowledged nothing"
        top = max(self.acknowledged)
        logs = self.group.logs.values()
        await until(lambda: all(log.committed >= top for log in logs), what="all members commit")
        for member_id, log in self.group.logs.items():
            for index, entry in self.acknowledged.items():
                assert _entry_at(log, index) == entry, f"{member_id} lost acknowledged {entry}"
        prefix = min(log.committed for log in logs)
        first = self.group.logs[self.group.ids[0]].entries[:prefix]
        assert all(log.entries[:prefix] == first for log in logs), "committed prefixes differ"


async def start(group: RaftGroup, monitor: SafetyMonitor, member_id: str | None = None) -> None:
    """Start one member (or all) with the monitor listening to it."""
    await group.start(member_id)
    for i in [member_id] if member_id else group.ids:
        monitor.watch(i)


async def send(group: RaftGroup, monitor: SafetyMonitor, payloads: list[bytes], timeout: float = ACK_TIMEOUT,
               leader_wait: float = 0.0) -> None:
    """Write ``payloads`` (one entry each) to the ready leader, waiting up to ``leader_wait`` seconds
    for there to be one (none then: nothing is written); record what it acknowledges."""
    deadline = time.monotonic() + leader_wait
    while (leader := group.ready_leader()) is None and time.monotonic() < deadline:
        await asyncio.sleep(SAMPLE_INTERVAL)
    if leader is None:
        return
    term = leader.leader_term()
    assert term is not None
    indexes = [await write(leader, [payload]) for payload in payloads]
    acks = await asyncio.gather(*(leader.wait_committed(i, timeout) for i in indexes))
    for index, payload, ok in zip(indexes, payloads, acks, strict=True):
        if ok:
            monitor.acknowledge(Entry(index, term, payload))


def _entry_at(log: MemLog, index: int) -> Entry | None:
    return log.entries[index - 1] if 1 <= index <= log.last_index else None

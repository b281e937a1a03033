"""Random faults against a 3-member group: Raft's safety properties must hold throughout.

Rounds of network cuts, heals, crashes (close) and restarts, with writes to whoever leads.
Checked: one leader per term at most (election safety), every acknowledged entry is at its
index on every member once the group heals (no acknowledged loss, leader completeness), and
committed prefixes are identical everywhere (log matching).
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from pathlib import Path

import pytest
from raftgroup import RaftGroup, until, write

from rocketq.dledger.contract import MemberState, Role

ROUNDS = 12


@pytest.mark.parametrize("seed", [1, 2])
async def test_random_faults_keep_raft_safe(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    group = RaftGroup(tmp_path)
    leaders_by_term: dict[int, set[str]] = defaultdict(set)
    acknowledged: dict[int, bytes] = {}

    def watch(state: MemberState) -> None:
        if state.role is Role.LEADER:
            leaders_by_term[state.term].add(state.self_id)

    async def start(member_id: str | None = None) -> None:
        await group.start(member_id)
        for i in [member_id] if member_id else group.ids:
            group.nodes[i].add_role_listener(watch)

    async def send(k: int) -> None:
        leader = group.ready_leader()
        if leader is None:
            return
        payload = b"s%d-%d" % (seed, k)
        index = await write(leader, [payload])
        if await leader.wait_committed(index, timeout=1.0):
            acknowledged[index] = payload

    try:
        await start()
        k = 0
        for _round in range(ROUNDS):
            victim = rng.choice(group.ids)
            fault = rng.choice(["cut", "crash"])
            if fault == "cut":
                group.cut(victim)
            elif victim in group.nodes:
                await group.stop(victim)
            for _ in range(rng.randint(3, 8)):
                k += 1
                await send(k)
                await asyncio.sleep(rng.uniform(0, 0.15))
            group.heal(victim)
            if victim not in group.nodes:
                await start(victim)
        await group.wait_leader()
        k += 1
        await send(k)  # commits everything before it in the final leader's term
        top = max(acknowledged)
        await until(lambda: all(log.committed >= top for log in group.logs.values()), what="all members commit")
    finally:
        await group.close()

    assert len(acknowledged) > ROUNDS  # the scenario did write, through several leaders
    assert all(len(ids) == 1 for ids in leaders_by_term.values()), dict(leaders_by_term)
    assert len(leaders_by_term) > 1
    for log in group.logs.values():
        for index, payload in acknowledged.items():
            assert log.entries[index - 1].payload == payload
    prefix = min(log.committed for log in group.logs.values())
    first = group.logs[group.ids[0]].entries[:prefix]
    assert all(log.entries[:prefix] == first for log in group.logs.values())

"""Random faults against a 3-member group: Raft's safety properties must hold throughout.

Rounds of network cuts, heals, crashes (close) and restarts, with writes to whoever leads.
Checked (``raftsafety``): one leader per term at most (election safety), log matching and
leader completeness throughout; once the group heals, every acknowledged entry is at its index
on every member (no acknowledged loss) and committed prefixes are identical everywhere.
Message-level faults (drops, delays, reorders) are test_dledger_model.py's.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from raftgroup import RaftGroup
from raftsafety import SafetyMonitor, send, start

ROUNDS = 12


@pytest.mark.parametrize("seed", [1, 2])
async def test_random_faults_keep_raft_safe(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    group = RaftGroup(tmp_path)
    monitor = SafetyMonitor(group)
    try:
        async with monitor.sampling():
            await start(group, monitor)
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
                    await send(group, monitor, [b"s%d-%d" % (seed, k)])
                    await asyncio.sleep(rng.uniform(0, 0.15))
                group.heal(victim)
                if victim not in group.nodes:
                    await start(group, monitor, victim)
            await group.wait_leader()
            await send(group, monitor, [b"s%d-last" % seed])  # commits everything before it in the final term
            await monitor.check_converged()
    finally:
        await group.close()

    assert len(monitor.acknowledged) > ROUNDS  # the scenario did write, through several leaders
    assert monitor.violations == []
    assert len(monitor.leaders_by_term) > 1

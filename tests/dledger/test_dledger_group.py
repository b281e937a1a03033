"""A 3-member DLedger group in one event loop over loopback TCP: election, replication, failover."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from memlog import MemLog
from raftgroup import FAST, RaftGroup, until, write

from rocketq.dledger import transport, wire
from rocketq.dledger.contract import Entry, Role
from rocketq.dledger.settings import DLedgerSettings
from rocketq.dledger.termstore import TermStore, TermVote


@pytest.fixture
async def group(tmp_path: Path) -> AsyncIterator[RaftGroup]:
    g = RaftGroup(tmp_path)
    try:
        yield g
    finally:
        await g.close()


async def test_elects_one_leader_and_commits_on_every_member(group: RaftGroup) -> None:
    started = time.monotonic()
    await group.start()
    leader = await group.wait_leader(timeout=5)
    assert time.monotonic() - started < 5
    last = await write(leader, [b"m%d" % i for i in range(50)])
    assert await leader.wait_committed(last, timeout=10)
    await until(lambda: all(log.committed >= last for log in group.logs.values()), what="commit everywhere")
    expected = [b"m%d" % i for i in range(50)]
    assert all(log.payloads(last) == expected for log in group.logs.values())
    states = {n.self_id: n.state() for n in group.running()}
    assert [s.role for s in states.values()].count(Role.LEADER) == 1
    assert states[leader.self_id].match_index == {i: last for i in group.ids if i != leader.self_id}


async def test_new_leader_after_leader_loss_holds_every_committed_entry(group: RaftGroup) -> None:
    await group.start()
    old = await group.wait_leader()
    last = await write(old, [b"a", b"b", b"c"])
    assert await old.wait_committed(last, timeout=10)
    await group.stop(old.self_id)
    new = await group.wait_leader()
    assert new.self_id != old.self_id
    assert new.state().term > group.logs[old.self_id].entries[-1].term
    assert group.logs[new.self_id].payloads()[:3] == [b"a", b"b", b"c"]
    last = await write(new, [b"d"])
    assert await new.wait_committed(last, timeout=10)
    # The old leader comes back as a follower and catches up.
    await group.start(old.self_id)
    await until(lambda: group.logs[old.self_id].committed >= last, what="the old leader catching up")
    assert group.logs[old.self_id].payloads() == [b"a", b"b", b"c", b"d"]
    assert group.nodes[old.self_id].state().leader_id == new.self_id


async def test_minority_leader_stops_acknowledging_and_its_tail_is_truncated_on_rejoin(group: RaftGroup) -> None:
    await group.start()
    old = await group.wait_leader()
    committed = await write(old, [b"kept"])
    assert await old.wait_committed(committed, timeout=10)
    group.cut(old.self_id)
    lost = await write(old, [b"lost-1", b"lost-2"])
    assert not await old.wait_committed(lost, timeout=1.5)  # no majority: never acknowledged
    await until(lambda: old.state().role is not Role.LEADER, what="the cut-off leader stepping down")
    assert old.leader_term() is None
    new = await group.wait_leader()
    assert new.self_id != old.self_id
    last = await write(new, [b"new"])
    assert await new.wait_committed(last, timeout=10)
    group.heal(old.self_id)
    await until(lambda: group.logs[old.self_id].committed >= last, what="the deposed leader catching up")
    assert group.logs[old.self_id].payloads() == [b"kept", b"new"]
    assert all(b"lost-1" not in log.payloads(log.last_index) for log in group.logs.values())


async def test_a_minority_cannot_commit(group: RaftGroup) -> None:
    await group.start()
    leader = await group.wait_leader()
    for other in [i for i in group.ids if i != leader.self_id]:
        group.cut(other)
    last = await write(leader, [b"x"])
    assert not await leader.wait_committed(last, timeout=1.5)
    await until(lambda: leader.state().role is not Role.LEADER, what="the leader stepping down")
    assert all(log.committed < last for log in group.logs.values())
    # Nobody can win an election while every link is down.
    assert group.ready_leader() is None


async def test_pre_vote_keeps_a_rejoining_member_from_bumping_the_term(group: RaftGroup) -> None:
    await group.start()
    leader = await group.wait_leader()
    follower = next(n for n in group.running() if n is not leader)
    group.cut(follower.self_id)
    term = leader.state().term
    last = await write(leader, [b"while-away-%d" % i for i in range(5)])
    assert await leader.wait_committed(last, timeout=10)
    # Cut off for several election timeouts: it campaigns (pre-votes) over and over, in vain.
    await until(lambda: follower.state().leader_id is None, what="the cut-off member losing its leader")
    await asyncio.sleep(1.5)
    assert follower.state().term == term
    assert follower.elections == 0
    group.heal(follower.self_id)
    await until(lambda: group.logs[follower.self_id].committed >= last, what="the member catching up")
    assert leader.state().role is Role.LEADER and leader.state().term == term
    assert follower.state().leader_id == leader.self_id


async def test_transfer_leadership(group: RaftGroup) -> None:
    await group.start()
    leader = await group.wait_leader()
    last = await write(leader, [b"before"])
    assert await leader.wait_committed(last, timeout=10)
    target = next(i for i in group.ids if i != leader.self_id)
    assert await leader.transfer_leadership(target, timeout=5)
    new = await group.wait_leader()
    assert new.self_id == target
    assert leader.state().leader_id == target and leader.state().role is Role.FOLLOWER
    last = await write(new, [b"after"])
    assert await new.wait_committed(last, timeout=10)
    assert group.logs[target].payloads() == [b"before", b"after"]


async def test_preferred_leader_takes_over(tmp_path: Path) -> None:
    group = RaftGroup(tmp_path, preferred_leader_id="n2")
    try:
        await group.start()
        await until(lambda: (leader := group.ready_leader()) is not None and leader.self_id == "n2",
                    what="n2, the preferred leader, leading")
        leader = group.ready_leader()
        assert leader is not None
        last = await write(leader, [b"x"])
        assert await leader.wait_committed(last, timeout=10)
    finally:
        await group.close()


async def test_a_restarted_member_never_votes_twice_in_one_term(group: RaftGroup) -> None:
    await group.start("n2")  # alone: its own pre-votes fail, so its term only moves when asked
    voter = group.nodes["n2"].group.members["n2"]
    # one connection per candidate: a member speaks only for itself on its connection
    clients = {name: transport.PeerClient(voter.host, voter.port) for name in ("n0", "n1")}
    try:
        async def vote(candidate: str) -> wire.Answer:
            request = wire.VoteRequest(5, "g", candidate, last_index=0, last_term=0)
            return await clients[candidate].call(request, timeout=5)

        assert (await vote("n0")).ok
        # On disk before the answer was sent.
        assert TermStore(tmp_dir := group.root / "n2").load() == TermVote(5, "n0")
        await group.stop("n2")
        await group.start("n2")
        again = await vote("n1")
        assert again.status is wire.Status.ALREADY_VOTED and again.term == 5
        assert (await vote("n0")).ok  # the same candidate may ask again
        assert TermStore(tmp_dir).load() == TermVote(5, "n0")
    finally:
        for client in clients.values():
            await client.close()


async def test_default_timing_elects_within_5s_and_replaces_a_lost_leader_within_10s(tmp_path: Path) -> None:
    defaults = DLedgerSettings()
    group = RaftGroup(tmp_path, **{name: getattr(defaults, name) for name in FAST})
    try:
        started = time.monotonic()
        await group.start()
        old = await group.wait_leader(timeout=5)
        assert time.monotonic() - started < 5
        lost = time.monotonic()
        await group.stop(old.self_id)
        new = await group.wait_leader(timeout=10)
        assert new.self_id != old.self_id
        assert time.monotonic() - lost < 10
    finally:
        await group.close()


async def test_a_failed_election_step_does_not_end_elections(tmp_path: Path) -> None:
    class FailingOnce(MemLog):
        failed = False

        def append(self, entries: Sequence[Entry]) -> None:
            if not self.failed:
                self.failed = True
                raise OSError("disk full")
            super().append(entries)

    group = RaftGroup(tmp_path, size=1)
    group.logs["n0"] = FailingOnce()
    try:
        await group.start()
        leader = await group.wait_leader()
        assert group.logs["n0"].failed  # type: ignore[attr-defined]
        assert await leader.wait_committed(await write(leader, [b"x"]), timeout=10)
    finally:
        await group.close()

"""SYNC_MASTER's waiters: one acknowledgement releases every send it covers; timeouts answer False."""

from __future__ import annotations

import asyncio

from rocketq.ha import syncwait
from rocketq.ha.syncwait import ReplicaWaiters


async def test_one_ack_releases_every_waiter_it_covers() -> None:
    waiters = ReplicaWaiters()
    tasks = [asyncio.create_task(waiters.wait(end, 5)) for end in (100, 200, 300)]
    await asyncio.sleep(0)
    assert len(waiters) == 3
    waiters.acknowledge(250)
    _done, pending = await asyncio.wait(tasks, timeout=0.1)
    assert [t.result() for t in tasks[:2]] == [True, True] and pending == {tasks[2]}
    waiters.acknowledge(120)  # an older, smaller report moves nothing back
    assert waiters.acked == 250
    waiters.acknowledge(300)
    assert await tasks[2]


async def test_already_acknowledged_answers_at_once_and_timeouts_are_false() -> None:
    waiters = ReplicaWaiters()
    waiters.acknowledge(10)
    assert await waiters.wait(10, 0)
    assert not await waiters.wait(11, 0.01)


async def test_release_all_answers_false() -> None:
    waiters = ReplicaWaiters()
    task = asyncio.create_task(waiters.wait(5, 5))
    await asyncio.sleep(0)
    waiters.release_all()
    assert await task is False and len(waiters) == 0


async def test_timed_out_waiters_do_not_pile_up(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(syncwait, "PRUNE_AT", 4)
    waiters = ReplicaWaiters()
    results = await asyncio.gather(*(waiters.wait(1000 + i, 0.01) for i in range(10)))
    assert not any(results)
    assert len(waiters) <= 4

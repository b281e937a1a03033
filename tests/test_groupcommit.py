"""Group commit: callers arriving during a run share the next one, and each is covered by a run
that started after it called."""

from __future__ import annotations

import asyncio

import pytest

from rocketq.groupcommit import GroupCommit


class SlowWork:
    """Records the state each run saw; a run takes a few loop turns (as a write in a thread does)."""

    def __init__(self) -> None:
        self.state = 0
        self.seen: list[int] = []
        self.fail = False
        self.started = 0

    async def run(self) -> None:
        self.started += 1
        observed = self.state
        await asyncio.sleep(0.01)
        if self.fail:
            raise OSError("disk full")
        self.seen.append(observed)


async def test_concurrent_callers_share_runs_and_each_is_covered() -> None:
    work = SlowWork()
    commit = GroupCommit("test", work.run)

    async def change_then_commit(value: int) -> int:
        work.state = max(work.state, value)
        await commit.commit()
        return max(work.seen)

    results = await asyncio.gather(*(change_then_commit(i) for i in range(1, 101)))
    assert all(covered >= i for i, covered in zip(range(1, 101), results, strict=True))
    assert commit.runs <= 3  # one run for the first caller, one for everybody who came meanwhile
    assert commit.idle


async def test_a_caller_arriving_during_a_run_waits_for_the_next_one() -> None:
    work = SlowWork()
    commit = GroupCommit("test", work.run)
    first = asyncio.create_task(commit.commit())
    while not work.started:  # the first run has started and read state 0
        await asyncio.sleep(0)
    work.state = 7
    await commit.commit()
    await first
    assert work.seen == [0, 7]


async def test_a_failed_run_raises_in_its_callers_and_the_next_run_is_fresh() -> None:
    work = SlowWork()
    work.fail = True
    commit = GroupCommit("test", work.run)
    results = await asyncio.gather(commit.commit(), commit.commit(), return_exceptions=True)
    assert all(isinstance(r, OSError) for r in results)
    work.fail = False
    await commit.commit()
    assert work.seen == [0]


async def test_commit_soon_runs_without_a_waiter_and_close_waits_for_it() -> None:
    work = SlowWork()
    commit = GroupCommit("test", work.run)
    work.state = 3
    commit.commit_soon()
    await commit.close()
    assert work.seen == [3]
    await commit.close()  # idempotent


async def test_a_cancelled_caller_does_not_cancel_the_shared_run() -> None:
    work = SlowWork()
    commit = GroupCommit("test", work.run)
    waiter = asyncio.create_task(commit.commit())
    other = asyncio.create_task(commit.commit())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await other
    assert work.seen == [0]

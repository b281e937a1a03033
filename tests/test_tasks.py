from __future__ import annotations

import asyncio

from rocketq import tasks
from rocketq.tasks import OwnedTask


async def test_start_is_idempotent_and_stop_waits_for_the_end() -> None:
    started: list[int] = []
    cleaned: list[int] = []

    async def loop() -> None:
        started.append(1)
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits must finish before stop returns
            cleaned.append(1)

    task = OwnedTask("t", loop)
    await task.stop()  # before start: nothing to do
    task.start()
    task.start()
    await asyncio.sleep(0)
    assert task.running and started == [1]
    await task.stop()
    await task.stop()
    assert not task.running and cleaned == [1]


async def test_a_crashed_loop_is_logged_and_stop_still_completes(caplog) -> None:
    async def crash() -> None:
        raise RuntimeError("boom")

    task = OwnedTask("crasher", crash)
    task.start()
    await asyncio.sleep(0.01)
    assert not task.running
    assert "background task crasher died" in caplog.text
    await task.stop()


async def test_a_stop_in_the_turn_its_event_is_set_still_stops_the_loop() -> None:
    """``asyncio.wait_for(event.wait(), t)`` loses this cancellation in 3.11 and stop() hangs."""
    wake = asyncio.Event()
    rounds: list[bool] = []

    async def loop() -> None:
        while True:
            rounds.append(await tasks.wait_event(wake, 3600))
            wake.clear()

    owner = OwnedTask("t", loop)
    owner.start()
    await asyncio.sleep(0)
    wake.set()  # the event and the cancellation arrive in the same turn
    await asyncio.wait_for(owner.stop(), 5)
    assert not owner.running


async def test_wait_event_tells_a_set_event_from_a_timeout() -> None:
    wake = asyncio.Event()
    assert await tasks.wait_event(wake, 0.01) is False
    wake.set()
    assert await tasks.wait_event(wake, 0.01) is True

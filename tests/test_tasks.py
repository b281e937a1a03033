from __future__ import annotations

import asyncio

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

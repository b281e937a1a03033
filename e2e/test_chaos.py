"""Short chaos run (e2e/chaos/runner.py): a few seeded faults over a SYNC_MASTER + SYNC_FLUSH
group lose no acknowledged message. ``make chaos`` runs the long one."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.chaos.runner import run

FAULTS = 4
DURATION = 40.0
"""Seconds after which no new fault is started (the run then drains and reads everything)."""


@pytest.mark.slow
async def test_no_acknowledged_message_is_lost_under_kills_stops_and_promotions(tmp_path: Path) -> None:
    result = await run(tmp_path, faults=FAULTS, duration=DURATION, seed=1)
    print(result.summary())
    assert result.faults, "at least one fault was injected"
    assert result.acked > 0
    assert result.lost == [], result.summary()

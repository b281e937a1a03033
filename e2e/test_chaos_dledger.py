"""Short DLedger chaos run (e2e/chaos/dledger.py): a few seeded faults (kill -9 and SIGSTOP of
the leader, of any member, of a majority) over a 3-member group lose no acknowledged message
and acknowledge nothing while a majority is stopped. ``make chaos`` runs the long one."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.chaos.dledger import run

FAULTS = 6
DURATION = 60.0
"""Seconds after which no new fault is started (the run then drains and reads everything)."""
HEARTBEAT_MS = 500
"""Short heartbeats (failure detection in 1.5 s instead of 6 s) keep the run short."""


@pytest.mark.slow
async def test_a_dledger_group_loses_no_acknowledged_message_under_kills_and_stops(tmp_path: Path) -> None:
    result = await run(tmp_path, faults=FAULTS, duration=DURATION, seed=1, heartbeat_ms=HEARTBEAT_MS)
    print(result.summary())
    assert result.faults, "at least one fault was injected"
    assert result.acked > 0
    assert result.lost == [], result.summary()
    assert result.acked_without_majority == 0, result.summary()

"""LogLimiter: the first line per key passes, then one per interval, suppressed ones counted."""

from __future__ import annotations

import logging

import pytest

from rocketq.ratelimit import LogLimiter


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_line_per_key_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    limiter = LogLimiter(logging.getLogger("t.rl"), interval=10, clock=clock)
    with caplog.at_level(logging.WARNING, logger="t.rl"):
        assert limiter.warning("peer-a", "bad frame from %s", "peer-a")
        assert not limiter.warning("peer-a", "bad frame from %s", "peer-a")
        assert not limiter.warning("peer-a", "bad frame from %s", "peer-a")
        assert limiter.warning("peer-b", "bad frame from %s", "peer-b")
        clock.now += 10
        assert limiter.warning("peer-a", "bad frame from %s", "peer-a")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "bad frame from peer-a",
        "bad frame from peer-b",
        "bad frame from peer-a (2 similar lines suppressed)",
    ]


def test_keys_are_bounded() -> None:
    clock = _Clock()
    limiter = LogLimiter(logging.getLogger("t.rl2"), interval=10, max_keys=3, clock=clock)
    for i in range(100):
        limiter.warning(f"k{i}", "x")
    assert len(limiter._last) == 3
    # the oldest keys were forgotten, so k0 speaks again at once
    assert limiter.warning("k0", "x")

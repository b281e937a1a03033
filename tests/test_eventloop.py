"""rocketq.eventloop: uvloop by default, asyncio's loop with ROCKETQ_UVLOOP=0, the collector set."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from rocketq import eventloop


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


@pytest.fixture
def thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


@pytest.mark.parametrize("value", ["0", "false", "No", " off "])
def test_the_switch_turns_uvloop_off(value: str, monkeypatch: pytest.MonkeyPatch, thresholds: None) -> None:
    monkeypatch.setenv(eventloop.SWITCH, value)
    assert not eventloop.uvloop_wanted() and eventloop.loop_name() == "asyncio"
    assert eventloop.run(_loop_module()).startswith("asyncio")


@pytest.mark.skipif(eventloop._uvloop() is None, reason="uvloop not installed")
@pytest.mark.parametrize("value", [None, "1", "yes"])
def test_uvloop_by_default(value: str | None, monkeypatch: pytest.MonkeyPatch, thresholds: None) -> None:
    if value is None:
        monkeypatch.delenv(eventloop.SWITCH, raising=False)
    else:
        monkeypatch.setenv(eventloop.SWITCH, value)
    assert eventloop.loop_name() == "uvloop"
    assert eventloop.run(_loop_module()).startswith("uvloop")


def test_run_sets_the_collector_unless_told_not_to(monkeypatch: pytest.MonkeyPatch, thresholds: None) -> None:
    monkeypatch.setenv(eventloop.SWITCH, "0")
    gc.set_threshold(700, 10, 10)
    eventloop.run(_loop_module(), tune=False)
    assert gc.get_threshold() == (700, 10, 10)
    eventloop.run(_loop_module())
    assert gc.get_threshold() == eventloop.GC_THRESHOLDS


class CountsRepr:
    reprs = 0

    def __repr__(self) -> str:
        CountsRepr.reprs += 1
        return "CountsRepr()"


async def _returns_counted() -> CountsRepr:
    return CountsRepr()


@pytest.mark.parametrize("switch", ["0", "1"])
def test_the_result_is_returned_without_being_repred(switch: str, monkeypatch: pytest.MonkeyPatch,
                                                     thresholds: None) -> None:
    # Python 3.11's asyncio.Runner formats the main task (its result included) when it puts
    # the SIGINT handler back; a benchmark's result holds every latency sample, and formatting it
    # (twice) cost ~0.8 µs of client CPU per message measured.
    monkeypatch.setenv(eventloop.SWITCH, switch)
    CountsRepr.reprs = 0
    assert isinstance(eventloop.run(_returns_counted()), CountsRepr)
    assert CountsRepr.reprs == 0

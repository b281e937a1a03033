"""The comparison's arithmetic: medians and ranges, the best peer, and which way a ratio reads."""

from __future__ import annotations

import pytest
from peers import report
from peers.plans import Metric, Workload
from peers.runner import MemoryRecord, Outcome, RunRecord
from peers.workloads import Measurement

THROUGHPUT = Workload("sync", "sync sends", "sync", Metric.THROUGHPUT)
LATENCY = Workload("e2e", "end to end", "e2e", Metric.LATENCY)
SYSTEMS = ["rocketq", "nats", "redis"]


def _rate(repeat: int, system: str, rate: float) -> RunRecord:
    return RunRecord(repeat, "sync", system, Measurement(messages=int(rate), seconds=1.0))


def _e2e(repeat: int, system: str, p99: float, *, kept_up: bool = True) -> RunRecord:
    m = Measurement(messages=100, seconds=1.0, latency_ms={"p50": p99 / 4, "p99": p99, "max": p99 * 2},
                    kept_up=kept_up)
    return RunRecord(repeat, "e2e", system, m)


def test_throughput_ratio_is_rocketq_over_the_fastest_peer_by_median() -> None:
    outcome = Outcome(records=[
        _rate(0, "rocketq", 3000), _rate(1, "rocketq", 1000), _rate(2, "rocketq", 2000),
        _rate(0, "nats", 4000), _rate(1, "nats", 4000), _rate(2, "nats", 4000),
        # redis has the single fastest run but the lower median: the median decides
        _rate(0, "redis", 9000), _rate(1, "redis", 1000), _rate(2, "redis", 1000),
    ])
    row = report.rows([THROUGHPUT], SYSTEMS, outcome)[0]
    assert row.best_peer() is row.cells["nats"]
    assert row.ratio() == 0.5
    assert row.cells["rocketq"].text == "2 000 msg/s (1 000-3 000)"
    assert "| sync sends | 2 000 msg/s (1 000-3 000) | NATS 4 000 msg/s | 0.50x (0.25-0.75) |" in \
        report.ratio_table([row])


def test_the_ratio_pairs_measurements_of_the_same_repeat() -> None:
    # repeat 0 ran while the machine was slow for both: paired, rocketq and NATS are even in
    # two repeats of three; a ratio of the medians (3 000 / 1 000) would say 3x
    outcome = Outcome(records=[
        _rate(0, "rocketq", 1000), _rate(1, "rocketq", 3000), _rate(2, "rocketq", 3000),
        _rate(0, "nats", 1000), _rate(1, "nats", 3000), _rate(2, "nats", 1000),
    ])
    row = report.rows([THROUGHPUT], SYSTEMS, outcome)[0]
    assert row.ratio() == 1.0
    assert row.ratios() == report.Spread(1.0, 1.0, 3.0)


def test_latency_ratio_is_the_best_peer_p99_over_rocketq_and_says_who_fell_behind() -> None:
    outcome = Outcome(records=[
        _e2e(0, "rocketq", 5.0), _e2e(1, "rocketq", 5.0, kept_up=False),
        _e2e(0, "nats", 2.0), _e2e(1, "nats", 2.0),
        _e2e(0, "redis", 1.0), _e2e(1, "redis", 2.0),
    ])
    row = report.rows([LATENCY], SYSTEMS, outcome)[0]
    assert row.best_peer() is row.cells["redis"]  # median p99 1.5 ms
    assert row.ratio() == pytest.approx(0.3)  # paired: 1/5 and 2/5
    assert row.cells["rocketq"].text.endswith("fell behind (1 of 2)")
    assert row.cells["nats"].text.endswith("kept up")


def test_a_system_without_results_shows_why_and_has_no_ratio() -> None:
    outcome = Outcome(records=[_rate(0, "rocketq", 1000), RunRecord(0, "sync", "nats", error="boom")])
    row = report.rows([THROUGHPUT], SYSTEMS, outcome)[0]
    assert row.cells["nats"].text == "error"
    assert row.cells["redis"].text == "not measured"
    assert row.best_peer() is None and row.ratio() is None
    assert "| no peer measured | - |" in report.ratio_table([row])


def test_memory_row_compares_the_default_servers_peaks_smaller_is_better() -> None:
    outcome = Outcome(memory=[
        MemoryRecord(0, "rocketq", False, 200 * 1024, 50 * 1024),
        MemoryRecord(0, "rocketq", True, 900 * 1024, 90 * 1024),  # the durable variant is not this row
        MemoryRecord(0, "nats", False, 100 * 1024, 80 * 1024),
        MemoryRecord(0, "redis", False, 400 * 1024, 390 * 1024),
    ])
    row = report.rows([], SYSTEMS, outcome)[-1]
    assert row.key == report.MEMORY_KEY
    assert row.best_peer() is row.cells["nats"]
    assert row.ratio() == 0.5
    assert row.cells["rocketq"].text == "200 MiB [50.0 MiB]"


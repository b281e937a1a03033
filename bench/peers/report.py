"""From raw measurements to issue #11's ratio table, a detail table, and a JSON file.

Every figure is the median over the repeats, with the range (lowest-highest) beside it.
Each row compares rocketq with the *best peer* of that row, and the ratio always reads
"more than 1x: rocketq is ahead":

- throughput rows: rocketq's msg/s / the best peer's (the peer with the highest median);
- end-to-end rows: the best peer's p99 / rocketq's p99 (the peer with the lowest median p99);
  each system's cell also says whether it kept up with the offered rate (every repeat);
- memory: the best peer's peak RSS / rocketq broker's (the peer with the lowest median peak).

A system with no successful measurement in a row shows why ("error", "not measured").
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from peers.plans import Metric, Workload
from peers.runner import MemoryRecord, Outcome, RunRecord
from peers.workloads import Measurement

NAMES: Final = {"rocketq": "rocketq", "nats": "NATS", "redis": "Redis"}
MEMORY_KEY: Final = "memory"
MEMORY_TITLE: Final = "server RSS under load (peak; anonymous part in brackets)"


@dataclass
class Spread:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread | None:
        return cls(statistics.median(values), min(values), max(values)) if values else None


@dataclass
class Cell:
    """One system's figure in one row."""

    system: str
    value: Spread | None
    """msg/s, p99 ms or peak RSS MiB: what the row ranks by."""
    text: str


@dataclass
class Row:
    key: str
    title: str
    higher_is_better: bool
    cells: dict[str, Cell]

    def best_peer(self) -> Cell | None:
        peers = [c for s, c in self.cells.items() if s != "rocketq" and c.value is not None]
        if not peers:
            return None
        pick = max if self.higher_is_better else min
        return pick(peers, key=lambda c: c.value.median if c.value else 0.0)

    def ratio(self) -> float | None:
        ours, best = self.cells.get("rocketq"), self.best_peer()
        if ours is None or ours.value is None or best is None or best.value is None:
            return None
        if self.higher_is_better:
            return ours.value.median / best.value.median if best.value.median else None
        return best.value.median / ours.value.median if ours.value.median else None


def _num(value: float) -> str:
    """Thousands separated by spaces (docs/benchmarks.md's style); one decimal under 100."""
    return f"{value:,.0f}".replace(",", " ") if value >= 100 else f"{value:.1f}"


def _spread(s: Spread, unit: str = "") -> str:
    head = f"{_num(s.median)} {unit}".rstrip()
    return head if s.low == s.high else f"{head} ({_num(s.low)}-{_num(s.high)})"


def _throughput_cell(system: str, runs: list[Measurement], errors: list[str]) -> Cell:
    spread = Spread.of([m.rate for m in runs])
    if spread is None:
        return Cell(system, None, "error" if errors else "not measured")
    text = _spread(spread, "msg/s")
    failures = sum(m.failures for m in runs)
    return Cell(system, spread, text + (f", {failures} failed" if failures else ""))


def _latency_cell(system: str, runs: list[Measurement], errors: list[str]) -> Cell:
    runs = [m for m in runs if m.latency_ms]
    p99 = Spread.of([m.latency_ms["p99"] for m in runs])
    if p99 is None:
        return Cell(system, None, "error" if errors else "not measured")
    p50 = statistics.median(m.latency_ms["p50"] for m in runs)
    worst = max(m.latency_ms["max"] for m in runs)
    behind = sum(1 for m in runs if not m.kept_up) + len(errors)
    kept = "kept up" if behind == 0 else f"fell behind ({behind} of {len(runs) + len(errors)})"
    return Cell(system, p99, f"p50 {_num(p50)}, p99 {_spread(p99, 'ms')}, max {_num(worst)} ms; {kept}")


def _memory_cell(system: str, records: list[MemoryRecord]) -> Cell:
    rss = Spread.of([r.rss_kib / 1024 for r in records if r.rss_kib])
    if rss is None:
        return Cell(system, None, "not measured")
    anon = statistics.median(r.anon_kib / 1024 for r in records if r.rss_kib)
    return Cell(system, rss, f"{_spread(rss, 'MiB')} [{_num(anon)} MiB]")


def rows(workloads: list[Workload], systems: list[str], outcome: Outcome) -> list[Row]:
    out = []
    for workload in workloads:
        make: Callable[[str, list[Measurement], list[str]], Cell] = (
            _throughput_cell if workload.metric is Metric.THROUGHPUT else _latency_cell)
        cells = {}
        for system in systems:
            mine = [r for r in outcome.records if r.workload == workload.key and r.system == system]
            runs = [r.measurement for r in mine if r.measurement is not None]
            cells[system] = make(system, runs, [r.error for r in mine if r.error])
        out.append(Row(workload.key, workload.title, workload.metric is Metric.THROUGHPUT, cells))
    memory = {s: _memory_cell(s, [m for m in outcome.memory if m.system == s and not m.durable]) for s in systems}
    out.append(Row(MEMORY_KEY, MEMORY_TITLE, False, memory))
    return out


def ratio_table(table: list[Row]) -> str:
    lines = ["| workload | rocketq | best peer | ratio |", "|---|---|---|---|"]
    for row in table:
        best, ratio = row.best_peer(), row.ratio()
        ours = row.cells["rocketq"].text if "rocketq" in row.cells else "not measured"
        peer = f"{NAMES[best.system]} {best.text}" if best is not None else "no peer measured"
        lines.append(f"| {row.title} | {ours} | {peer} | {f'{ratio:.2f}x' if ratio is not None else '-'} |")
    return "\n".join(lines)


def detail_table(workloads: list[Workload], systems: list[str], outcome: Outcome) -> str:
    """Every system's median rate and CPU per message (client, server) for each workload."""
    lines = ["| workload | system | msg/s | client CPU us/msg | server CPU us/msg |", "|---|---|---|---|---|"]
    for workload in workloads:
        for system in systems:
            runs = [r.measurement for r in outcome.records
                    if r.workload == workload.key and r.system == system and r.measurement is not None]
            if not runs:
                continue
            rate = Spread.of([m.rate for m in runs])
            client = statistics.median(_per_msg(m.client_cpu_s, m) for m in runs)
            server = statistics.median(_per_msg(m.server_cpu_s, m) for m in runs)
            lines.append(f"| {workload.key} | {NAMES[system]} | {_spread(rate) if rate else '-'} | "
                         f"{client:.0f} | {server:.0f} |")
    return "\n".join(lines)


def _per_msg(seconds: float, m: Measurement) -> float:
    return seconds * 1e6 / m.messages if m.messages else 0.0


def to_json(meta: dict[str, Any], table: list[Row], outcome: Outcome) -> dict[str, Any]:
    def record(r: RunRecord) -> dict[str, Any]:
        raw = dataclasses.asdict(r)
        if r.measurement is not None:
            raw["measurement"]["rate"] = r.measurement.rate
        return raw

    return {
        **meta,
        "rows": [{"key": row.key, "title": row.title, "ratio": row.ratio(),
                  "best_peer": (row.best_peer() or Cell("", None, "")).system or None,
                  "cells": {s: {"text": c.text, "value": dataclasses.asdict(c.value) if c.value else None}
                            for s, c in row.cells.items()}} for row in table],
        "records": [record(r) for r in outcome.records],
        "memory": [dataclasses.asdict(m) for m in outcome.memory],
        "servers": outcome.servers,
        "unavailable": outcome.unavailable,
    }


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"

"""From raw measurements to issue #11's ratio table, a detail table, and a JSON file.

Every figure is the median over the repeats, with the range (lowest-highest) beside it.
Each row compares rocketq with the *best peer* of that row (the peer with the best median),
and the ratio always reads "more than 1x: rocketq is ahead":

- throughput rows: rocketq's msg/s / the best peer's;
- end-to-end rows: the best peer's p99 / rocketq's p99; each system's cell also says whether
  it kept up with the offered rate (in every repeat);
- memory: the best peer's peak RSS / rocketq broker's.

The ratio is *paired*: it is worked out per repeat, from the two measurements taken a few
seconds apart, and the median of those per-repeat ratios is reported (with their range).
On a shared machine whose speed drifts between repeats, a ratio of two medians could pair a
fast moment of one system with a slow moment of the other; a paired ratio cannot.

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
MEMORY_TITLE: Final = "broker RSS under load (peak; anonymous memory in brackets)"


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
    by_repeat: dict[int, float]
    """msg/s, p99 ms or peak RSS MiB, what the row ranks by, of each repeat that succeeded."""
    text: str

    @property
    def value(self) -> Spread | None:
        return Spread.of(list(self.by_repeat.values()))


@dataclass
class Row:
    key: str
    title: str
    higher_is_better: bool
    cells: dict[str, Cell]

    def best_peer(self) -> Cell | None:
        peers = [(c, c.value) for s, c in self.cells.items() if s != "rocketq"]
        ranked = [(cell, spread.median) for cell, spread in peers if spread is not None]
        if not ranked:
            return None
        pick = max if self.higher_is_better else min
        return pick(ranked, key=lambda pair: pair[1])[0]

    def ratios(self) -> Spread | None:
        """rocketq against the best peer, paired by repeat (median and range of those ratios)."""
        ours, best = self.cells.get("rocketq"), self.best_peer()
        if ours is None or best is None:
            return None
        pairs = [(ours.by_repeat[r], best.by_repeat[r]) for r in ours.by_repeat if r in best.by_repeat]
        if self.higher_is_better:
            return Spread.of([mine / theirs for mine, theirs in pairs if theirs > 0])
        return Spread.of([theirs / mine for mine, theirs in pairs if mine > 0])

    def ratio(self) -> float | None:
        spread = self.ratios()
        return spread.median if spread is not None else None


def _num(value: float) -> str:
    """Thousands separated by spaces (docs/benchmarks.md's style); one decimal under 100."""
    return f"{value:,.0f}".replace(",", " ") if value >= 100 else f"{value:.1f}"


def _spread(s: Spread, unit: str = "") -> str:
    head = f"{_num(s.median)} {unit}".rstrip()
    return head if s.low == s.high else f"{head} ({_num(s.low)}-{_num(s.high)})"


Runs = dict[int, Measurement]
"""A system's successful measurements in one row, by repeat."""


def _throughput_cell(system: str, runs: Runs, errors: list[str]) -> Cell:
    cell = Cell(system, {r: m.rate for r, m in runs.items()}, "error" if errors else "not measured")
    if cell.value is not None:
        failures = sum(m.failures for m in runs.values())
        cell.text = _spread(cell.value, "msg/s") + (f", {failures} failed" if failures else "")
    return cell


def _latency_cell(system: str, runs: Runs, errors: list[str]) -> Cell:
    runs = {r: m for r, m in runs.items() if m.latency_ms}
    cell = Cell(system, {r: m.latency_ms["p99"] for r, m in runs.items()}, "error" if errors else "not measured")
    if cell.value is not None:
        p50 = statistics.median(m.latency_ms["p50"] for m in runs.values())
        worst = max(m.latency_ms["max"] for m in runs.values())
        behind = sum(1 for m in runs.values() if not m.kept_up) + len(errors)
        kept = "kept up" if behind == 0 else f"fell behind ({behind} of {len(runs) + len(errors)})"
        cell.text = f"p50 {_num(p50)}, p99 {_spread(cell.value, 'ms')}, max {_num(worst)} ms; {kept}"
    return cell


def _memory_cell(system: str, records: list[MemoryRecord]) -> Cell:
    measured = [r for r in records if r.rss_kib]
    cell = Cell(system, {r.repeat: r.rss_kib / 1024 for r in measured}, "not measured")
    if cell.value is not None:
        anon = statistics.median(r.anon_kib / 1024 for r in measured)
        cell.text = f"{_spread(cell.value, 'MiB')} [{_num(anon)} MiB]"
    return cell


def rows(workloads: list[Workload], systems: list[str], outcome: Outcome) -> list[Row]:
    out = []
    for workload in workloads:
        make: Callable[[str, Runs, list[str]], Cell] = (
            _throughput_cell if workload.metric is Metric.THROUGHPUT else _latency_cell)
        cells = {}
        for system in systems:
            mine = [r for r in outcome.records if r.workload == workload.key and r.system == system]
            runs = {r.repeat: r.measurement for r in mine if r.measurement is not None}
            cells[system] = make(system, runs, [r.error for r in mine if r.error])
        out.append(Row(workload.key, workload.title, workload.metric is Metric.THROUGHPUT, cells))
    memory = {s: _memory_cell(s, [m for m in outcome.memory if m.system == s and not m.durable]) for s in systems}
    out.append(Row(MEMORY_KEY, MEMORY_TITLE, False, memory))
    return out


def ratio_table(table: list[Row]) -> str:
    lines = ["| workload | rocketq | best peer | ratio |", "|---|---|---|---|"]
    for row in table:
        best, ratios = row.best_peer(), row.ratios()
        ours = row.cells["rocketq"].text if "rocketq" in row.cells else "not measured"
        peer = f"{NAMES[best.system]} {best.text}" if best is not None else "no peer measured"
        lines.append(f"| {row.title} | {ours} | {peer} | {_ratio(ratios)} |")
    return "\n".join(lines)


def _ratio(ratios: Spread | None) -> str:
    if ratios is None:
        return "-"
    if ratios.low == ratios.high:
        return f"{ratios.median:.2f}x"
    return f"{ratios.median:.2f}x ({ratios.low:.2f}-{ratios.high:.2f})"


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
        "rows": [_row_json(row) for row in table],
        "records": [record(r) for r in outcome.records],
        "memory": [dataclasses.asdict(m) for m in outcome.memory],
        "servers": outcome.servers,
        "unavailable": outcome.unavailable,
    }


def _row_json(row: Row) -> dict[str, Any]:
    best, ratios = row.best_peer(), row.ratios()
    return {"key": row.key, "title": row.title, "ratio": row.ratio(),
            "ratio_range": dataclasses.asdict(ratios) if ratios else None,
            "best_peer": best.system if best else None,
            "cells": {s: {"text": c.text, "value": dataclasses.asdict(c.value) if c.value else None,
                          "by_repeat": c.by_repeat} for s, c in row.cells.items()}}


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"

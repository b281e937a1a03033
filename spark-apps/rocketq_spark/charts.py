"""PNG charts of the jobs' results (matplotlib, no display needed).

Pure in the sense that matters: plain Python values in, one PNG file out; no Spark here. Each
function returns the path it wrote, or None when there was nothing to draw.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: render to files, never to a screen

import matplotlib.pyplot as plt


def _when(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def lag_over_time(points: Iterable[tuple[str, int, int]], path: Path) -> Path | None:
    """One line per group: (group, run epoch ms, total lag) points."""
    series: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for group, run_ms, lag in points:
        series[group].append((run_ms, lag))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for group, values in sorted(series.items()):
        values.sort()
        times: Any = [_when(t) for t, _ in values]  # matplotlib's stubs know no datetimes; it plots them
        ax.plot(times, [lag for _, lag in values], marker="o", label=group)
    ax.set_title("Consumer lag per group")
    ax.set_xlabel("run time (UTC)")
    ax.set_ylabel("messages behind")
    ax.legend(loc="upper left", fontsize="small")
    ax.grid(alpha=0.3)
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def bars(labels: Sequence[str], values: Sequence[float], title: str, unit: str, path: Path) -> Path | None:
    """A horizontal bar chart, largest first (slowest consumers, latency percentiles)."""
    if not labels:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(labels) + 1.5))
    ax.barh(list(labels)[::-1], list(values)[::-1])
    ax.set_title(title)
    ax.set_xlabel(unit)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

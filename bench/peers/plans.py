"""The workloads of the comparison (issue #11's table), and how many messages each uses.

A ``Workload`` names what is measured, which agent operation does it, whether it runs
against the durable servers (SYNC_FLUSH / fsync always) and whether its figure is a
throughput (higher is better) or an end-to-end latency (lower is better). ``plan(quick)``
gives the full counts or the smoke-test ones; the full ones take about two minutes per
repeat on the 2-core machine, the quick ones a few seconds in all.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final

PIPELINE_WINDOW: Final = 1000
"""Single messages un-acknowledged at most in the pipelined workload (the issue's number)."""
BATCH: Final = 32
"""Messages per batch, as ``bench/run_matrix.py``'s batch scenario."""
BATCHES_IN_FLIGHT: Final = 8


class Metric(enum.Enum):
    THROUGHPUT = "msg/s"
    LATENCY = "ms"


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    op: str
    metric: Metric
    params: dict[str, Any] = field(default_factory=dict)
    durable: bool = False
    timeout_s: float = 300.0
    """The agent gives up on one measurement after this long."""


def plan(quick: bool) -> list[Workload]:
    """The workloads in the order they run; ``quick``: tiny counts for a smoke test."""
    def n(full: int, small: int) -> int:
        return small if quick else full

    batching = {"batch": BATCH, "in_flight": BATCHES_IN_FLIGHT}
    return [
        Workload("sync", "sync, one producer, one send at a time", "sync", Metric.THROUGHPUT,
                 {"count": n(5_000, 100)}),
        Workload("pipelined", f"pipelined single messages (up to {PIPELINE_WINDOW:,} in flight)".replace(",", " "),
                 "pipelined", Metric.THROUGHPUT, {"count": n(30_000, 1_000), "window": PIPELINE_WINDOW}),
        Workload("batched", f"batched produce ({BATCH} per batch, {BATCHES_IN_FLIGHT} in flight)", "batched",
                 Metric.THROUGHPUT, {"count": n(100_000, 2_000), **batching}),
        Workload("consume", "consume (drain stored messages)", "consume", Metric.THROUGHPUT,
                 {"count": n(100_000, 2_000), **batching}),
        Workload("e2e-1000", "end-to-end at 1 000 msg/s offered", "e2e", Metric.LATENCY,
                 {"count": n(10_000, 300), "rate": 1_000.0}),
        Workload("e2e-5000", "end-to-end at 5 000 msg/s offered", "e2e", Metric.LATENCY,
                 {"count": n(30_000, 1_000), "rate": 5_000.0}),
        Workload("sync-flush-batched", "SYNC_FLUSH batched produce (fsync before the ack)", "batched",
                 Metric.THROUGHPUT, {"count": n(30_000, 1_000), **batching}, durable=True),
    ]


WORKLOAD_KEYS: Final = tuple(w.key for w in plan(quick=True))

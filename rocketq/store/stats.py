"""Store statistics: counters the broker reports in GET_BROKER_RUNTIME_INFO and as metrics.

Plain counters updated on the put and get paths (integer additions, no locks: the store runs
on one event loop; ``MessageStore._count_puts`` adds a whole group of puts at once) and the
put-latency histogram with RocketMQ's buckets, rendered in RocketMQ's
``putMessageDistributeTime`` text form. Nothing here reads the disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

PUT_LATENCY_BOUNDS_MS: Final = (0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)
"""Upper bounds of the put-latency buckets; a last bucket holds everything slower."""
PUT_LATENCY_LABELS: Final = ("<=0ms", "0~10ms", "10~50ms", "50~100ms", "100~200ms", "200~500ms",
                             "500ms~1s", "1~2s", "2~3s", "3~4s", "4~5s", "5~10s", "10s~")


@dataclass(slots=True)
class StoreStats:
    put_message_times: int = 0
    """Messages stored (a batch counts each message)."""
    put_message_bytes: int = 0
    put_requests: int = 0
    put_failures: int = 0
    flush_timeouts: int = 0
    get_message_times_found: int = 0
    get_message_times_miss: int = 0
    get_message_transferred: int = 0
    max_put_lock_ms: float = 0.0
    put_latency: list[int] = field(default_factory=lambda: [0] * len(PUT_LATENCY_LABELS))

    def latency_text(self) -> str:
        """``[<=0ms]:3 [0~10ms]:5 ...`` as RocketMQ's broker reports it."""
        return " ".join(f"[{label}]:{count}" for label, count in zip(PUT_LATENCY_LABELS, self.put_latency,
                                                                      strict=True))

    @property
    def average_put_size(self) -> int:
        return self.put_message_bytes // self.put_message_times if self.put_message_times else 0

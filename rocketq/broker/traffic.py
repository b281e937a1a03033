"""Traffic rates for metrics: messages per second in and out, per topic and per consumer group.

Rates come from positions the broker already keeps, sampled on a timer: a topic's put rate is
how fast the sum of its queues' max offsets grows, a group's consume rate how fast its committed
offsets grow. Nothing is counted on the send or pull path, so metrics cost the hot path nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

TopicOffsets = Callable[[], dict[str, dict[int, int]]]
GroupOffsets = Callable[[], Iterable[tuple[str, str, dict[int, int]]]]


@dataclass
class TrafficRates:
    """The latest per-second rates; replaced as a whole at each sample."""

    put_tps: dict[str, float] = field(default_factory=dict)
    consume_tps: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def broker_put_tps(self) -> float:
        return sum(self.put_tps.values())

    @property
    def broker_get_tps(self) -> float:
        return sum(self.consume_tps.values())


class TrafficSampler:
    def __init__(self, topic_offsets: TopicOffsets, group_offsets: GroupOffsets,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._topic_offsets = topic_offsets
        self._group_offsets = group_offsets
        self._clock = clock
        self._last_at: float | None = None
        self._last_puts: dict[str, int] = {}
        self._last_commits: dict[tuple[str, str], int] = {}
        self.rates = TrafficRates()
        self.on_sample: Callable[[dict[str, int], dict[tuple[str, str], int]], None] | None = None
        """Given each sample's deltas: messages put per topic, committed per (group, topic)."""

    def sample(self) -> TrafficRates:
        now = self._clock()
        puts = {topic: sum(queues.values()) for topic, queues in self._topic_offsets().items()}
        commits = {(group, topic): sum(queues.values()) for topic, group, queues in self._group_offsets()}
        if self._last_at is not None and now > self._last_at:
            elapsed = now - self._last_at
            put_deltas = {t: max(0, n - self._last_puts.get(t, n)) for t, n in puts.items()}
            commit_deltas = {k: max(0, n - self._last_commits.get(k, n)) for k, n in commits.items()}
            self.rates = TrafficRates({t: d / elapsed for t, d in put_deltas.items()},
                                      {k: d / elapsed for k, d in commit_deltas.items()})
            if self.on_sample is not None:
                self.on_sample(put_deltas, commit_deltas)
        self._last_at, self._last_puts, self._last_commits = now, puts, commits
        return self.rates

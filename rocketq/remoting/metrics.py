"""The Prometheus collector for what the remoting layer counts (``stats.RemotingStats``).

A process's ``RemotingServer`` owns one ``RemotingStats``; the broker and the name server
register a ``RemotingCollector`` over their server in their own metrics registry, so the
remoting layer never imports them and their metrics code never reaches into a connection.

Every family carries a ``process`` label (``broker``, ``namesrv``): the server's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from rocketq.remoting.stats import RemotingStats

_COUNTERS = (
    ("rocketmq_remoting_bad_frames", "connections closed for an undecodable frame", "bad_frames"),
    ("rocketmq_remoting_reads_paused", "times reading stopped because the peer did not read its answers",
     "reads_paused"),
    ("rocketmq_remoting_backlog_aborts", "connections aborted for a backlog of answers their peer did not read",
     "backlog_aborts"),
    ("rocketmq_remoting_idle_closed", "connections closed after the idle time without traffic", "idle_closed"),
    ("rocketmq_remoting_connections_refused", "connections closed on accept (connection cap, descriptor reserve)",
     "refused"),
)


class RemotingCollector(Collector):
    """Reports one server's ``RemotingStats`` and its open connections at scrape time."""

    def __init__(self, stats: RemotingStats, open_connections: Callable[[], int], process: str) -> None:
        self._stats = stats
        self._open = open_connections
        self._process = process

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        labels = ["process"]
        for name, doc, attr in _COUNTERS:
            family = CounterMetricFamily(name, doc, labels=labels)
            family.add_metric([self._process], getattr(self._stats, attr))
            yield family
        gauge = GaugeMetricFamily("rocketmq_remoting_connections", "open remoting connections", labels=labels)
        gauge.add_metric([self._process], self._open())
        yield gauge

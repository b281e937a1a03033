"""Broker metrics, read from live state at scrape time (no counters on the hot path).

Names follow rocketmq-exporter so existing dashboards and alerts work: ``rocketmq_producer_tps``
style per-topic put rates come from the store's counters; ``rocketmq_group_diff`` and
``rocketmq_consumer_lag_messages`` are a group's backlog per topic on this broker.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from rocketq.broker.server import BrokerServer


class BrokerCollector(Collector):
    def __init__(self, broker: BrokerServer) -> None:
        self._broker = broker

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        b = self._broker
        labels = ["cluster", "broker"]
        ident = [b.identity.broker_cluster_name, b.identity.broker_name]
        stats = b.store.stats
        put = CounterMetricFamily("rocketmq_broker_messages_put", "messages appended to the CommitLog", labels=labels)
        put.add_metric(ident, stats.put_message_times)
        yield put
        put_bytes = CounterMetricFamily("rocketmq_broker_bytes_put", "bytes appended to the CommitLog", labels=labels)
        put_bytes.add_metric(ident, stats.put_message_bytes)
        yield put_bytes
        got = CounterMetricFamily("rocketmq_broker_messages_get", "messages returned to pulls", labels=labels)
        got.add_metric(ident, stats.get_message_transferred)
        yield got
        held = GaugeMetricFamily("rocketmq_broker_held_pulls", "long-poll pulls waiting for messages", labels=labels)
        held.add_metric(ident, b.pull.held_count)
        yield held
        commitlog = GaugeMetricFamily(
            "rocketmq_brokeruntime_commitlog_max_offset", "CommitLog max physical offset", labels=labels
        )
        commitlog.add_metric(ident, b.store.max_phy_offset)
        yield commitlog
        disk = GaugeMetricFamily(
            "rocketmq_brokeruntime_commitlog_disk_ratio", "used fraction of the store's disk", labels=labels
        )
        disk.add_metric(ident, b.store.retention.disk_ratio)
        yield disk
        yield from self._lag(ident)

    def _lag(self, ident: list[str]) -> Iterator[GaugeMetricFamily]:
        b = self._broker
        labels = ["cluster", "broker", "group", "topic"]
        diff = GaugeMetricFamily("rocketmq_group_diff", "messages not yet consumed by a group", labels=labels)
        lag = GaugeMetricFamily("rocketmq_consumer_lag_messages", "messages not yet consumed by a group", labels=labels)
        latency = GaugeMetricFamily(
            "rocketmq_group_get_latency_by_storetime",
            "ms since the store time of the oldest unconsumed message",
            labels=labels,
        )
        now_ms = int(time.time() * 1000)
        for topic, group, queues in b.offsets.entries():
            total = 0
            oldest = 0
            for qid, committed in queues.items():
                max_offset = b.store.get_max_offset(topic, qid)
                behind = max(0, max_offset - committed)
                total += behind
                if behind:
                    ts = b.store.get_store_time(topic, qid, committed)
                    if ts > 0:
                        oldest = max(oldest, now_ms - ts)
            values = [*ident, group, topic]
            diff.add_metric(values, total)
            lag.add_metric(values, total)
            latency.add_metric(values, oldest)
        yield diff
        yield lag
        yield latency

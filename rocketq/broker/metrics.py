"""Broker metrics, read from live state at scrape time (no counters on the hot path).

Names follow rocketmq-exporter so existing dashboards and alerts work, and the chart's Grafana
dashboard and alert rules use exactly these: per-topic ``rocketmq_producer_tps``, per-group
``rocketmq_consumer_tps`` (from ``traffic``), a group's backlog ``rocketmq_group_diff`` (also as
``rocketmq_consumer_lag_messages``) with its retry and DLQ parts, put latency percentiles from the
store's histogram, disk use, and ``rocketmq_broker_is_master`` for "group has no master" alerts.
rocketq's own ``rocketq_dledger_*`` families show a DLedger member's Raft state (term, role,
commit index, each follower's lag in entries on the leader, elections started), its
``rocketq_delay_*`` and ``rocketq_sendback_*`` families show the delay levels'
backlog and how many failed messages went to retry topics and DLQs; ``rocketq_pop_*`` POP
consumption: messages popped, acked and revived (put back for redelivery after their invisible
time), pops held by long polling and checkpoints still waiting for acks.

Series stay bounded however many topics and groups a broker holds: a family labelled by topic
and/or group keeps at most ``metricsMaxTopicSeries`` series, the ones with the largest values
(the busiest topics, the biggest backlogs), and adds one series labelled ``_other_`` holding the
rest summed (latency: their maximum). 50 000 topics therefore cost a few thousand series per
family, not 50 000 x groups.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from rocketq.dledger.contract import Role
from rocketq.protocol import codes
from rocketq.store.stats import PUT_LATENCY_BOUNDS_MS

if TYPE_CHECKING:
    from rocketq.broker.server import BrokerServer

Metric = GaugeMetricFamily | CounterMetricFamily

BROKER_LABELS: Final = ["cluster", "broker"]
"""Labels of every broker-wide series: which group of which cluster."""
OTHER: Final = "_other_"
"""The topic/group label of the series that aggregates whatever is over the series cap."""

Row = tuple[tuple[str, ...], Sequence[float]]
"""Labels (topic and/or group) and the values of one or more families sharing them."""


def capped(rows: Iterable[Row], cap: int,
           combine: Sequence[Callable[[Iterable[float]], float]] = (sum,)) -> list[Row]:
    """At most ``cap`` rows, those with the largest first value, plus one ``_other_`` row whose
    values combine the rest (``combine[i]`` for value i: sum, or max for a latency)."""
    rows = list(rows)
    if len(rows) <= cap:
        return rows
    rows.sort(key=lambda row: (-row[1][0], row[0]))
    kept, rest = rows[:cap], rows[cap:]
    width = len(rest[0][0])
    merged = [fn(values[i] for _, values in rest) for i, fn in enumerate(combine)]
    return [*kept, ((OTHER,) * width, merged)]


def latency_percentile(buckets: list[int], fraction: float) -> float:
    """The upper bound (ms) of the histogram bucket holding the given fraction of puts."""
    total = sum(buckets)
    if total == 0:
        return 0.0
    wanted = fraction * total
    seen = 0
    for i, count in enumerate(buckets):
        seen += count
        if seen >= wanted:
            return float(PUT_LATENCY_BOUNDS_MS[i]) if i < len(PUT_LATENCY_BOUNDS_MS) else float("inf")
    return float("inf")


def _gauge(name: str, doc: str, labels: list[str], values: list[str], value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    family.add_metric(values, value)
    return family


class BrokerCollector(Collector):
    def __init__(self, broker: BrokerServer) -> None:
        self._broker = broker

    def collect(self) -> Iterator[Metric]:
        b = self._broker
        labels = BROKER_LABELS
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
        rates = b.traffic.rates
        yield _gauge("rocketmq_broker_tps", "messages put per second", labels, ident, rates.broker_put_tps)
        yield _gauge("rocketmq_broker_qps", "messages consumed per second", labels, ident, rates.broker_get_tps)
        yield _gauge("rocketmq_broker_is_master", "1 on a group's master", labels, ident,
                     1.0 if b.is_master else 0.0)
        yield _gauge("rocketmq_broker_held_pulls", "long-poll pulls waiting for messages", labels, ident,
                     b.pull.held_count)
        yield _gauge("rocketmq_brokeruntime_put_latency_99", "ms, 99th percentile of puts (bucket bound)", labels,
                     ident, latency_percentile(stats.put_latency, 0.99))
        yield _gauge("rocketmq_brokeruntime_put_latency_999", "ms, 99.9th percentile of puts (bucket bound)",
                     labels, ident, latency_percentile(stats.put_latency, 0.999))
        yield _gauge("rocketmq_brokeruntime_dispatch_behind_bytes", "CommitLog bytes not yet in queues", labels,
                     ident, b.store.max_phy_offset - b.store.dispatched_offset)
        yield _gauge("rocketmq_brokeruntime_commitlog_max_offset", "CommitLog max physical offset", labels, ident,
                     b.store.max_phy_offset)
        yield _gauge("rocketmq_brokeruntime_commitlog_disk_ratio", "used fraction of the store's disk", labels,
                     ident, b.store.retention.disk_ratio)
        yield _gauge("rocketmq_brokeruntime_commitlogdir_capacity_free", "free bytes on the CommitLog's disk",
                     labels, ident, _free_bytes(b))
        yield from self._topics(ident)
        yield from self._groups(ident)
        yield from self._replication(ident)
        yield from self._dledger(ident)
        yield from self._delays(ident)
        yield from self._pop(ident)

    def _pop(self, ident: list[str]) -> Iterator[Metric]:
        pop = self._broker.pop
        for name, doc, value in (
                ("rocketq_pop_messages_popped", "messages handed out by POP_MESSAGE", pop.pop.popped),
                ("rocketq_pop_messages_acked", "POP offsets acked", pop.acks.acked),
                ("rocketq_pop_messages_revived", "un-acked POP messages put back to retry topics", pop.revive.revived)):
            family = CounterMetricFamily(name, doc, labels=BROKER_LABELS)
            family.add_metric(ident, value)
            yield family
        yield _gauge("rocketq_pop_held_requests", "pops waiting for messages (long polling)", BROKER_LABELS, ident,
                     pop.pop.held_count)
        yield _gauge("rocketq_pop_pending_checkpoints", "POP checkpoints not yet fully acked or revived",
                     BROKER_LABELS, ident, pop.revive.pending_count)

    def _replication(self, ident: list[str]) -> Iterator[Metric]:
        """HA state: on a master about its best slave, on a slave about its master."""
        labels = BROKER_LABELS
        s = self._broker.ha.status()
        yield _gauge("rocketmq_replication_connections", "HA connections (a master's slaves; 1 on a connected slave)",
                     labels, ident, s.connections)
        yield _gauge("rocketmq_replication_lag_bytes", "CommitLog bytes the slave does not hold yet", labels, ident,
                     s.behind_bytes)
        yield _gauge("rocketmq_replication_lag_seconds", "seconds since the slave last held all the master had",
                     labels, ident, s.behind_seconds)
        yield _gauge("rocketmq_replication_in_sync", "1 when a slave is connected and within haMaxGapNotInSync",
                     labels, ident, 1.0 if s.in_sync else 0.0)

    @property
    def _cap(self) -> int:
        return self._broker.behaviour.metrics_max_topic_series

    def _dledger(self, ident: list[str]) -> Iterator[Metric]:
        """A DLedger member's Raft state (rocketq.dledger.brokerservice); nothing on other brokers."""
        service = self._broker.dledger
        if service is None:
            return
        labels = BROKER_LABELS
        state = service.state()
        yield _gauge("rocketq_dledger_term", "the member's current Raft term", labels, ident, state.term)
        role = GaugeMetricFamily("rocketq_dledger_role", "1 for the member's Raft role, 0 for the others",
                                 labels=["cluster", "broker", "role"])
        for each in Role:
            role.add_metric([*ident, each.value], 1.0 if state.role is each else 0.0)
        yield role
        yield _gauge("rocketq_dledger_commit_index", "highest entry index known committed", labels, ident,
                     state.commit_index)
        lag = GaugeMetricFamily("rocketq_dledger_peer_lag_entries", "entries a follower lacks (on the leader)",
                                labels=["cluster", "broker", "peer"])
        for peer, match in sorted(state.match_index.items()):
            lag.add_metric([*ident, peer], max(0, state.last_index - match))
        yield lag
        elections = CounterMetricFamily("rocketq_dledger_elections", "elections this member started", labels=labels)
        elections.add_metric(ident, service.elections)
        yield elections

    def _topics(self, ident: list[str]) -> Iterator[Metric]:
        rates = self._broker.traffic.rates
        tps = GaugeMetricFamily("rocketmq_producer_tps", "messages put per second into a topic",
                                labels=["cluster", "broker", "topic"])
        for (topic,), (rate,) in sorted(capped((((t,), (r,)) for t, r in rates.put_tps.items()), self._cap)):
            tps.add_metric([*ident, topic], rate)
        yield tps
        consume = GaugeMetricFamily("rocketmq_consumer_tps", "messages a group consumed per second from a topic",
                                    labels=["cluster", "broker", "group", "topic"])
        for labels, (rate,) in sorted(capped(((k, (r,)) for k, r in rates.consume_tps.items()), self._cap)):
            consume.add_metric([*ident, *labels], rate)
        yield consume

    def _groups(self, ident: list[str]) -> Iterator[Metric]:
        b = self._broker
        labels = ["cluster", "broker", "group", "topic"]
        diff = GaugeMetricFamily("rocketmq_group_diff", "messages not yet consumed by a group", labels=labels)
        lag = GaugeMetricFamily("rocketmq_consumer_lag_messages", "messages not yet consumed by a group",
                                labels=labels)
        retry = GaugeMetricFamily("rocketmq_group_retrydiff", "a group's retry-topic backlog",
                                  labels=["cluster", "broker", "group"])
        dlq = GaugeMetricFamily("rocketmq_group_dlqdiff", "messages in a group's dead-letter queue",
                                labels=["cluster", "broker", "group"])
        latency = GaugeMetricFamily("rocketmq_group_get_latency_by_storetime",
                                    "ms since the store time of the oldest unconsumed message", labels=labels)
        now_ms = int(time.time() * 1000)
        backlogs: list[Row] = []
        retries: list[Row] = []
        for topic, group, queues in b.offsets.entries():
            behind, oldest = self._backlog(topic, queues, now_ms)
            if topic == codes.retry_topic(group):
                retries.append(((group,), (behind,)))
            else:
                backlogs.append(((group, topic), (behind, oldest)))
        for keys, (messages, age) in capped(backlogs, self._cap, (sum, max)):
            diff.add_metric([*ident, *keys], messages)
            lag.add_metric([*ident, *keys], messages)
            latency.add_metric([*ident, *keys], age)
        for (group,), (messages,) in capped(retries, self._cap):
            retry.add_metric([*ident, group], messages)
        dead: list[Row] = []
        for name, config in b.topics.table.items():
            if name.startswith(codes.DLQ_GROUP_TOPIC_PREFIX):
                total = sum(b.store.get_max_offset(name, q) for q in range(config.queue_count))
                dead.append(((name[len(codes.DLQ_GROUP_TOPIC_PREFIX):],), (total,)))
        for (group,), (messages,) in capped(dead, self._cap):
            dlq.add_metric([*ident, group], messages)
        yield from (diff, lag, retry, dlq, latency)

    def _delays(self, ident: list[str]) -> Iterator[Metric]:
        """Delayed messages not yet due, per level, and what send-back and the timers moved."""
        b = self._broker
        pending = GaugeMetricFamily("rocketq_delay_pending_messages", "scheduled messages not yet delivered",
                                    labels=["cluster", "broker", "level"])
        for level in b.schedule.levels:
            waiting = b.store.get_max_offset(codes.SCHEDULE_TOPIC, level - 1) - b.schedule.offsets.get(level, 0)
            pending.add_metric([*ident, str(level)], max(0, waiting))
        yield pending
        labels = ["cluster", "broker"]
        delivered = CounterMetricFamily("rocketq_delay_delivered_messages",
                                        "delayed messages moved to their real topic since start", labels=labels)
        delivered.add_metric(ident, b.schedule.delivered)
        retried = CounterMetricFamily("rocketq_sendback_retry_messages",
                                      "failed messages sent back to a retry topic since start", labels=labels)
        retried.add_metric(ident, b.send_back.sent_to_retry)
        dead = CounterMetricFamily("rocketq_sendback_dlq_messages",
                                   "failed messages moved to a dead-letter queue since start", labels=labels)
        dead.add_metric(ident, b.send_back.sent_to_dlq)
        yield from (delivered, retried, dead)

    def _backlog(self, topic: str, queues: dict[int, int], now_ms: int) -> tuple[int, int]:
        store = self._broker.store
        total = oldest = 0
        for qid, committed in queues.items():
            behind = max(0, store.get_max_offset(topic, qid) - committed)
            total += behind
            if behind:
                ts = store.get_store_time(topic, qid, committed)
                if ts > 0:
                    oldest = max(oldest, now_ms - ts)
        return total, oldest


def _free_bytes(broker: BrokerServer) -> float:
    try:
        return float(shutil.disk_usage(broker.store_settings.commitlog_dir).free)
    except OSError:
        return 0.0

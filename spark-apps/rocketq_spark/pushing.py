"""Pushing a run's summary to a Prometheus Pushgateway, so dashboards can graph the job's findings.

The gauges are named ``rocketq_spark_*`` and labelled by group and topic; one push replaces the
previous one of the same push group (HTTP PUT), so a group that disappeared stops being reported.

The push group is the job plus ``GROUPING_LABELS`` when the run knows its cluster (the operator
passes ``--cluster``): without them, the jobs of two clusters pushing to one Pushgateway would
replace each other's series. The Pushgateway adds the grouping labels to every series, so the
dashboard selects the Spark gauges by ``rocketq_cluster`` and ``namespace`` as it does the
brokers' (tests/k8s/metriccatalog.py reads ``GROUPING_LABELS`` from here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from prometheus_client import CollectorRegistry, Gauge, push_to_gateway

GROUPING_LABELS: Final = ("rocketq_cluster", "namespace")


def grouping_key(cluster: str | None, namespace: str | None) -> dict[str, str]:
    """The push group's labels beyond ``job``: the cluster's name and namespace when known."""
    if not cluster:
        return {}
    return dict(zip(GROUPING_LABELS, (cluster, namespace or ""), strict=True))


def push_lag(gateway: str, job: str, groups: Iterable[Any], grouping: Mapping[str, str] | None = None) -> int:
    """Push per group/topic lag metrics (rows of ``lag.group_metrics``); returns the series count."""
    registry = CollectorRegistry()
    labels = ["group", "topic"]
    lag = Gauge("rocketq_spark_consumer_lag", "Messages behind (brokerOffset - consumerOffset)", labels,
                registry=registry)
    growth = Gauge("rocketq_spark_consumer_lag_growth_per_second", "Lag change over the window, per second",
                   labels, registry=registry)
    drain = Gauge("rocketq_spark_consumer_drain_seconds", "Estimated seconds to drain the lag; -1: never",
                  labels, registry=registry)
    stuck = Gauge("rocketq_spark_stuck_queues", "Queues with lag whose consumer offset did not move", labels,
                  registry=registry)
    unserved = Gauge("rocketq_spark_no_consumer_queues", "Queues with lag and no consumer online", labels,
                     registry=registry)
    count = 0
    for row in groups:
        key = (row["group"], row["topic"])
        lag.labels(*key).set(row["lag"])
        growth.labels(*key).set(row["lagGrowthPerSec"] or 0.0)
        drain.labels(*key).set(-1 if row["drainSeconds"] is None else row["drainSeconds"])
        stuck.labels(*key).set(row["stuckQueues"])
        unserved.labels(*key).set(row["noConsumerQueues"])
        count += 1
    push_to_gateway(gateway, job=job, registry=registry, grouping_key=dict(grouping or {}))
    return count

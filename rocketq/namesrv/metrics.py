"""What a name server reports to Prometheus.

Gauges are read from the route registry at scrape time (no bookkeeping on the request path);
counters count requests by request and response code (UNREGISTER_BROKER among them), and
brokers the name server removed on its own, by why they went.
Each ``NamesrvMetrics`` has its own CollectorRegistry, so several name servers in one test
process keep separate numbers. Served over HTTP by ``rocketq.metrics.http``.
"""

from __future__ import annotations

import enum

from prometheus_client import CollectorRegistry, Counter, Gauge

from rocketq.namesrv.routes import RouteTable
from rocketq.protocol.codes import RequestCode, ResponseCode


class RemovalReason(enum.Enum):
    EXPIRED = "expired"
    CONNECTION_CLOSED = "connection_closed"


class NamesrvMetrics:
    def __init__(self, routes: RouteTable) -> None:
        self.registry = CollectorRegistry()
        gauges = (
            ("rocketmq_namesrv_brokers", "Broker addresses registered and alive",
             lambda: len(routes.broker_live_table)),
            ("rocketmq_namesrv_broker_groups", "Broker groups (brokerNames) with a live member",
             lambda: len(routes.broker_addr_table)),
            ("rocketmq_namesrv_clusters", "Clusters with a live broker group",
             lambda: len(routes.cluster_addr_table)),
            ("rocketmq_namesrv_topics", "Topics with a route", lambda: len(routes.topic_queue_table)),
        )
        for name, doc, read in gauges:
            Gauge(name, doc, registry=self.registry).set_function(read)
        self._requests = Counter(
            "rocketmq_namesrv_requests", "Requests answered, by request code name and response code",
            ["request", "code"], registry=self.registry)
        self._removed = Counter(
            "rocketmq_namesrv_brokers_removed",
            "Broker addresses dropped for silence or a closed connection, by reason",
            ["reason"], registry=self.registry)

    def count_request(self, request_code: int, response_code: int) -> None:
        self._requests.labels(request=_name(RequestCode, request_code),
                              code=_name(ResponseCode, response_code)).inc()

    def count_removed(self, reason: RemovalReason, count: int = 1) -> None:
        if count:
            self._removed.labels(reason=reason.value).inc(count)


def _name(codes: type[enum.IntEnum], value: int) -> str:
    try:
        return codes(value).name
    except ValueError:
        return str(value)

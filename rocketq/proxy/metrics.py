"""What the gRPC proxy reports to Prometheus.

The proxy's own series, beside the brokers' (``rocketq.broker.metrics``): every v2 call counted
and timed by method and answer code (the in-band ``apache.rocketmq.v2.Code`` name, ``OK``,
``MESSAGE_NOT_FOUND``, ...), the messages it sent for producers and handed to consumers (by
message type) and acked for them, and what is connected: open Telemetry streams and known clients by
type. ``rocketmq_proxy_up`` carries the cluster and proxy mode.

Labels stay bounded: methods are the service's (an unknown name becomes ``other``), codes the
enum's names, message and client types enum names; no topic, group or client id is a label.

The labelled children are looked up once per label set and kept (``_children``): a call costs
a dict lookup, not prometheus_client's label validation and locking. Message counts are added
once per call, not once per message.

Each ``ProxyMetrics`` has its own CollectorRegistry: ``rocketq proxy`` serves it on its
``metricsPort`` (``rocketq.metrics.http``), a broker's LOCAL endpoint adds it to the broker's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb

METHODS: Final = frozenset({
    "QueryRoute", "Heartbeat", "SendMessage", "QueryAssignment", "ReceiveMessage", "AckMessage",
    "ForwardMessageToDeadLetterQueue", "EndTransaction", "NotifyClientTermination", "ChangeInvisibleDuration",
    "Telemetry",
})
OTHER: Final = "other"
LATENCY_BUCKETS_S: Final = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)
"""RPC latency buckets; receives long-poll up to 20 s, so the top buckets are for them."""


def code_name(code: int) -> str:
    try:
        return str(Code.Name(code))
    except ValueError:
        return OTHER


def method_name(method: str) -> str:
    return method if method in METHODS else OTHER


class ProxyMetrics:
    def __init__(self, cluster: str, mode: str, clients_by_type: Callable[[], Mapping[int, int]]) -> None:
        self.registry = CollectorRegistry()
        up = Gauge("rocketmq_proxy_up", "1 while the proxy serves", ["cluster", "proxy_mode"], registry=self.registry)
        up.labels(cluster=cluster, proxy_mode=mode).set(1)
        self._rpcs = Counter("rocketmq_proxy_rpc", "v2 calls answered, by method and answer code",
                             ["method", "code"], registry=self.registry)
        self._latency = Histogram("rocketmq_proxy_rpc_latency_seconds", "v2 call duration, by method and answer code",
                                  ["method", "code"], buckets=LATENCY_BUCKETS_S, registry=self.registry)
        self._sent = Counter("rocketmq_proxy_messages_sent", "Messages stored for v2 producers, by message type",
                             ["message_type"], registry=self.registry)
        self._received = Counter("rocketmq_proxy_messages_received",
                                 "Messages handed to v2 consumers (redeliveries included), by message type",
                                 ["message_type"], registry=self.registry)
        self._acked = Counter("rocketmq_proxy_messages_acked", "Messages acked for v2 consumers",
                              registry=self.registry)
        self.telemetry_streams = Gauge("rocketmq_proxy_telemetry_streams", "Open Telemetry streams",
                                       registry=self.registry)
        self.registry.register(_ClientsCollector(clients_by_type))

        self._rpc_children: dict[tuple[str, int], tuple[Any, Any]] = {}
        """(method, code) -> (its counter, its histogram); methods and codes are bounded sets."""
        self._sent_children: dict[int, Any] = {}
        self._received_children: dict[int, Any] = {}

    def rpc(self, method: str, code: int, seconds: float) -> None:
        children = self._rpc_children.get((method, code))
        if children is None:
            labels = {"method": method_name(method), "code": code_name(code)}
            children = self._rpc_children[(method, code)] = (self._rpcs.labels(**labels),
                                                             self._latency.labels(**labels))
        children[0].inc()
        children[1].observe(seconds)

    def sent(self, message_type: int, count: int = 1) -> None:
        """``count`` messages of ``message_type`` stored for producers."""
        _child(self._sent, self._sent_children, message_type).inc(count)

    def received(self, message_type: int, count: int = 1) -> None:
        """``count`` messages of ``message_type`` handed to consumers."""
        _child(self._received, self._received_children, message_type).inc(count)

    def acked(self, count: int = 1) -> None:
        self._acked.inc(count)


def _child(family: Counter, children: dict[int, Any], message_type: int) -> Any:
    """``family``'s child for ``message_type``, looked up once (the enum bounds the keys)."""
    child = children.get(message_type)
    if child is None:
        child = children[message_type] = family.labels(message_type=_type_name(message_type))
    return child


def _type_name(message_type: int) -> str:
    try:
        return str(pb.MessageType.Name(message_type))
    except ValueError:
        return OTHER


class _ClientsCollector:
    """``rocketmq_proxy_clients{client_type}``, counted from the client table when scraped."""

    def __init__(self, clients_by_type: Callable[[], Mapping[int, int]]) -> None:
        self._read = clients_by_type

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("rocketmq_proxy_clients",
                                   "v2 clients whose settings the proxy holds, by client type", labels=["client_type"])
        for kind, count in sorted(self._read().items()):
            try:
                name = str(pb.ClientType.Name(kind))
            except ValueError:
                name = OTHER
            family.add_metric([name], count)
        yield family

"""`rocketq proxy`'s /metrics: calls by method and code, messages, Telemetry streams and clients,
scraped after the official client sent, received and acked (a cluster of its own: exact counts)."""

from __future__ import annotations

import asyncio

import grpc
from clusterprocs import scrape_metrics
from proxycluster import ProxyCluster, wait_until

from rocketq.metrics import announcing
from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

SENT = 3

Samples = dict[str, list[tuple[dict[str, str], float]]]


def value(samples: Samples, name: str, **labels: str) -> float:
    return sum(v for got, v in samples.get(name, []) if all(got.get(k) == want for k, want in labels.items()))


async def _unknown_topic_route(endpoint: str) -> int:
    async with grpc.aio.insecure_channel(endpoint) as channel:
        answer = await grpc_v2.MessagingServiceStub(channel).QueryRoute(
            spb.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopicHere")),
            metadata=(("x-mq-client-id", "metrics-test@1"),))
        return int(answer.status.code)


def test_the_proxy_counts_calls_messages_and_connections(proxy_cluster: ProxyCluster) -> None:
    port = announcing.find_port(proxy_cluster.proxy.log.read_text())
    assert port is not None, "the proxy announces its metrics port"
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcNormal"])
    for i in range(SENT):
        producer.call("send", topic="GrpcNormal", body=f"counted-{i}")
    consumer = proxy_cluster.client()
    consumer.call("consumer", group="grpc-metrics", topic="GrpcNormal", await_s=5)
    acked = 0
    for _ in range(20):
        for m in consumer.call("receive", n=16, invisible_s=30)["messages"]:
            consumer.call("ack", id=m["id"])
            acked += 1
        if acked >= SENT:
            break
    assert acked == SENT
    assert asyncio.run(_unknown_topic_route(proxy_cluster.endpoint)) == Code.TOPIC_NOT_FOUND

    samples = scrape_metrics(port)
    assert value(samples, "rocketmq_proxy_up", proxy_mode="CLUSTER") == 1
    assert value(samples, "rocketmq_proxy_rpc_total", method="SendMessage", code="OK") == SENT
    assert value(samples, "rocketmq_proxy_rpc_latency_seconds_count", method="SendMessage", code="OK") == SENT
    assert value(samples, "rocketmq_proxy_rpc_total", method="AckMessage", code="OK") == SENT
    assert value(samples, "rocketmq_proxy_rpc_total", method="ReceiveMessage", code="OK") >= 1
    assert value(samples, "rocketmq_proxy_rpc_total", method="QueryRoute", code="TOPIC_NOT_FOUND") == 1
    assert value(samples, "rocketmq_proxy_messages_sent_total", message_type="NORMAL") == SENT
    assert value(samples, "rocketmq_proxy_messages_received_total", message_type="NORMAL") == SENT
    assert value(samples, "rocketmq_proxy_messages_acked_total") == SENT
    assert value(samples, "rocketmq_proxy_telemetry_streams") >= 2  # both clients keep one open
    assert value(samples, "rocketmq_proxy_clients", client_type="PRODUCER") >= 1
    assert value(samples, "rocketmq_proxy_clients", client_type="SIMPLE_CONSUMER") >= 1

    consumer.close()  # its stream ends: the gauge goes down
    wait_until(lambda: value(scrape_metrics(port), "rocketmq_proxy_telemetry_streams") < 2, timeout=30)

"""The official RocketMQ 5 Python client (rocketmq-python-client 5.1.2) against `rocketq proxy`."""

from __future__ import annotations

from conftest import ProxyCluster


def test_producer_sends_and_simple_consumer_receives_and_acks(proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcNormal"])
    sent = [producer.call("send", topic="GrpcNormal", body=f"m{i}", tag="TagA", keys="k1",
                          props={"color": "red"})["id"] for i in range(3)]
    consumer = proxy_cluster.client()
    consumer.call("consumer", group="grpc-cg", topic="GrpcNormal", await_s=5)
    got: dict[str, dict] = {}
    for _ in range(30):
        for m in consumer.call("receive", n=16, invisible_s=30)["messages"]:
            got[m["id"]] = m
            consumer.call("ack", id=m["id"])
        if len(got) == len(sent):
            break
    assert sorted(got) == sorted(sent)
    first = got[sent[0]]
    assert first["body"] == "m0" and first["tag"] == "TagA" and first["keys"] == ["k1"]
    assert first["props"] == {"color": "red"} and first["attempt"] == 1 and not first["corrupted"]

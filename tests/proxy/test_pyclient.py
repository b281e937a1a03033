"""The official RocketMQ 5 Python client (rocketmq-python-client 5.1.2) against `rocketq proxy`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from clusterprocs import pull_bodies
from proxycluster import ProxyCluster, wait_until
from pyclient import PyClient


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


def receive_all(consumer: PyClient, want: int, *, invisible_s: int = 30, ack: bool = True,
                rounds: int = 40) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    for _ in range(rounds):
        for m in consumer.call("receive", n=32, invisible_s=invisible_s)["messages"]:
            got.append(m)
            if ack:
                consumer.call("ack", id=m["id"])
        if len(got) >= want:
            break
    return got


def consumer_of(cluster: ProxyCluster, group: str, topic: str) -> PyClient:
    consumer = cluster.client()
    consumer.call("consumer", group=group, topic=topic, await_s=5)
    return consumer


def receive_id(consumer: PyClient, wanted: str, *, invisible_s: int, ack: bool = True) -> dict[str, Any]:
    """Receive until ``wanted`` comes (other messages of the topic are acked out of the way)."""
    for _ in range(40):
        for m in consumer.call("receive", n=32, invisible_s=invisible_s)["messages"]:
            if m["id"] == wanted:
                if ack:
                    consumer.call("ack", id=m["id"])
                return m
            consumer.call("ack", id=m["id"])
    raise AssertionError(f"{wanted} was not received")


def sent_and_unacked(cluster: ProxyCluster, body: str, group: str, invisible_s: int) -> tuple[PyClient, str]:
    """A fresh message of GrpcNormal, received once by ``group`` and not acked."""
    producer = cluster.client()
    producer.call("producer", topics=["GrpcNormal"])
    sent = producer.call("send", topic="GrpcNormal", body=body)["id"]
    consumer = consumer_of(cluster, group, "GrpcNormal")
    assert receive_id(consumer, sent, invisible_s=invisible_s, ack=False)["attempt"] == 1
    return consumer, sent


def test_an_unacked_message_comes_back_after_its_invisible_time(proxy_cluster: ProxyCluster) -> None:
    consumer, sent = sent_and_unacked(proxy_cluster, "again", "grpc-invisible", 10)
    again = receive_id(consumer, sent, invisible_s=30)
    assert again["attempt"] == 2 and again["body"] == "again"


def test_change_invisible_duration_makes_it_visible_again_sooner(proxy_cluster: ProxyCluster) -> None:
    consumer, sent = sent_and_unacked(proxy_cluster, "changed", "grpc-change", 600)
    consumer.call("change", id=sent, invisible_s=1)  # back in about a second instead of ten minutes
    assert receive_id(consumer, sent, invisible_s=30)["attempt"] == 2


def test_fifo_messages_keep_their_order_per_group(proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcFifo"])
    for i in range(8):
        for group in ("g1", "g2", "g3"):
            producer.call("send", topic="GrpcFifo", body=f"{group}-{i}", group=group)
    consumer = consumer_of(proxy_cluster, "grpc-fifo", "GrpcFifo")
    got = receive_all(consumer, 24)
    assert len(got) == 24
    for group in ("g1", "g2", "g3"):
        bodies = [m["body"] for m in got if m["group"] == group]
        assert bodies == [f"{group}-{i}" for i in range(8)]


def test_a_delay_message_is_not_delivered_before_its_timestamp(proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcDelay"])
    deliver_s = int(time.time()) + 3  # the Python client puts this number into Timestamp.seconds
    sent = producer.call("send", topic="GrpcDelay", body="later", delivery_s=deliver_s)["id"]
    consumer = consumer_of(proxy_cluster, "grpc-delay", "GrpcDelay")
    got = receive_all(consumer, 1)
    assert [m["id"] for m in got] == [sent]
    assert time.time() >= deliver_s  # a level of "1s 2s 3s 5s" not shorter than the wait: never early


def test_transactions_commit_is_delivered_rollback_is_not_and_checks_reach_the_producer(
        proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcTx"], transactions="commit")
    committed = producer.call("tx_send", topic="GrpcTx", body="commit", resolution="commit")["id"]
    producer.call("tx_send", topic="GrpcTx", body="rollback", resolution="rollback")
    # left open: the broker's check reaches the v2 producer's checker through Telemetry, which commits
    checked = producer.call("tx_send", topic="GrpcTx", body="checked", resolution="none")["id"]
    consumer = consumer_of(proxy_cluster, "grpc-tx", "GrpcTx")
    got = receive_all(consumer, 2, rounds=60)
    assert sorted(m["id"] for m in got) == sorted([committed, checked])
    assert checked in producer.call("checked")["checked"]


def test_a_remoting_consumer_and_a_grpc_consumer_both_get_the_message(proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcShared"])
    sent = producer.call("send", topic="GrpcShared", body="both")["id"]
    consumer = consumer_of(proxy_cluster, "grpc-shared-5x", "GrpcShared")
    assert [m["id"] for m in receive_all(consumer, 1)] == [sent]
    pulled = asyncio.run(pull_bodies(proxy_cluster.namesrv.address, "GrpcShared", "remoting-shared-4x"))
    assert pulled == [b"both"]


def test_a_push_consumer_gets_messages_and_a_failed_one_again(proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcShared"])
    sent = {producer.call("send", topic="GrpcShared", body=f"push-{i}")["id"] for i in range(3)}
    assert len(sent) == 3
    pusher = proxy_cluster.client()
    pusher.call("push", group="grpc-push", topic="GrpcShared", fail_first=True)
    # QueryAssignment, auto-renew receives, ChangeInvisibleDuration by the retry backoff (1 s), acks

    def all_three() -> list[list[Any]] | None:
        got = [m for m in pusher.call("pushed")["messages"] if m[0].startswith("push-")]
        return got if len(got) >= 3 else None

    got = wait_until(all_three, timeout=90)
    assert sorted(m[0] for m in got) == ["push-0", "push-1", "push-2"]
    assert all(m[1] == 2 for m in got)

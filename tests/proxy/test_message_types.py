"""Topic message types and FIFO consumption through the proxy.

Topics get ``message.type`` (conftest: GrpcNormal NORMAL, GrpcOrderly FIFO, ...); routes tell
clients what each queue accepts, and SendMessage refuses a type that conflicts with the topic's.
Group ``grpc-orderly`` is created with consumeMessageOrderly: its consumers are told ``fifo`` and
pop in order, so an un-acked message blocks the later messages of its queue (message group).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from proxycluster import ProxyCluster
from pyclient import PyClient, PyClientError

from rocketq.protocol import javahash
from rocketq.proxy import routing
from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

ID = (("x-mq-client-id", "type-test@1"),)
QUEUES = 4
"""Write queues of the conftest topics."""
EMPTY_RECEIVES = 2
"""Receives that must come back empty while a group's queue is blocked (each waits out its long poll)."""


@pytest.fixture
async def stub(proxy_cluster: ProxyCluster) -> AsyncIterator[grpc_v2.MessagingServiceStub]:
    async with grpc.aio.insecure_channel(proxy_cluster.endpoint) as channel:
        yield grpc_v2.MessagingServiceStub(channel)


async def _accepted(stub: grpc_v2.MessagingServiceStub, topic: str) -> set[int]:
    answer = await stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name=topic)), metadata=ID)
    assert answer.status.code == Code.OK
    return {t for q in answer.message_queues for t in q.accept_message_types}


async def test_routes_accept_the_type_the_topic_attribute_names(stub: grpc_v2.MessagingServiceStub) -> None:
    assert await _accepted(stub, "GrpcNormal") == {pb.NORMAL}
    assert await _accepted(stub, "GrpcOrderly") == {pb.FIFO}
    assert await _accepted(stub, "GrpcDelay") == {pb.DELAY}
    assert await _accepted(stub, "GrpcTx") == {pb.TRANSACTION}


def _message(topic: str, group: str | None = None) -> pb.Message:
    system = pb.SystemProperties(message_id="01AABBCCDDEEFF0011223344556677889A", body_encoding=pb.IDENTITY,
                                 message_type=pb.FIFO if group else pb.NORMAL)
    if group:
        system.message_group = group
    return pb.Message(topic=pb.Resource(name=topic), body=b"typed", system_properties=system)


async def test_a_send_whose_type_conflicts_with_the_topics_is_refused(stub: grpc_v2.MessagingServiceStub) -> None:
    fifo_to_normal = await stub.SendMessage(spb.SendMessageRequest(messages=[_message("GrpcNormal", "g")]),
                                            metadata=ID)
    assert fifo_to_normal.status.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert fifo_to_normal.entries[0].status.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    normal_to_fifo = await stub.SendMessage(spb.SendMessageRequest(messages=[_message("GrpcOrderly")]), metadata=ID)
    assert normal_to_fifo.status.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    fits = await stub.SendMessage(spb.SendMessageRequest(messages=[_message("GrpcNormal")]), metadata=ID)
    assert fits.status.code == Code.OK


def test_the_official_client_will_not_send_a_type_the_route_does_not_accept(proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcNormal"])
    with pytest.raises(PyClientError, match=r"(?i)type"):
        producer.call("send", topic="GrpcNormal", body="fifo?", group="g")


async def _fifo_setting(stub: grpc_v2.MessagingServiceStub, group: str) -> bool:
    settings = pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name=group),
        subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name="GrpcOrderly"),
                                            expression=pb.FilterExpression(type=pb.TAG, expression="*"))]))
    call = stub.Telemetry(metadata=((ID[0][0], f"settings-{group}@1"),))
    await call.write(spb.TelemetryCommand(settings=settings))
    reply = await call.read()
    await call.done_writing()
    assert reply.status.code == Code.OK
    return bool(reply.settings.subscription.fifo)


async def _assigned_queue_ids(stub: grpc_v2.MessagingServiceStub, group: str) -> list[int]:
    answer = await stub.QueryAssignment(spb.QueryAssignmentRequest(
        topic=pb.Resource(name="GrpcOrderly"), group=pb.Resource(name=group)), metadata=ID)
    assert answer.status.code == Code.OK
    assert all(list(a.message_queue.accept_message_types) == [pb.FIFO] for a in answer.assignments)
    return sorted(a.message_queue.id for a in answer.assignments)


async def test_an_orderly_group_is_told_fifo_and_assigned_each_queue(stub: grpc_v2.MessagingServiceStub) -> None:
    assert await _fifo_setting(stub, "grpc-orderly") is True
    assert await _fifo_setting(stub, "grpc-not-orderly") is False
    assert await _assigned_queue_ids(stub, "grpc-orderly") == list(range(QUEUES))
    assert await _assigned_queue_ids(stub, "grpc-not-orderly") == [-1]  # pop every queue


def _groups_on_two_queues() -> tuple[str, str]:
    """Two message groups that the proxy puts on different queues of a topic."""
    def queue_of(group: str) -> int:
        return routing.consistent_hash(javahash.java_string_hash(group), QUEUES)

    first = "order-a"
    second = next(g for g in (f"order-b{i}" for i in range(100)) if queue_of(g) != queue_of(first))
    return first, second


def _receive_one(consumer: PyClient) -> list[dict[str, Any]]:
    return list(consumer.call("receive", n=1, invisible_s=60)["messages"])


def _receive_until_some(consumer: PyClient, tries: int = 10) -> dict[str, Any]:
    for _ in range(tries):
        got = _receive_one(consumer)
        if got:
            return got[0]
    raise AssertionError("nothing received")


def test_an_unacked_fifo_message_blocks_its_group_but_not_others_and_comes_back_first(
        proxy_cluster: ProxyCluster) -> None:
    blocked, other = _groups_on_two_queues()
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcOrderly"])
    for body, group in ((f"{blocked}-1", blocked), (f"{blocked}-2", blocked), (f"{other}-1", other)):
        producer.call("send", topic="GrpcOrderly", body=body, group=group)
    consumer = proxy_cluster.client()
    consumer.call("consumer", group="grpc-orderly", topic="GrpcOrderly", await_s=5)

    held: dict[str, Any] | None = None
    seen: list[str] = []
    while len(seen) < 2:  # the first message of each group, in whichever order the queues come
        m = _receive_until_some(consumer)
        seen.append(m["body"])
        if m["group"] == blocked:
            held = m  # not acked: its queue stays blocked
        else:
            consumer.call("ack", id=m["id"])
    assert sorted(seen) == sorted([f"{blocked}-1", f"{other}-1"]) and held is not None
    for _ in range(EMPTY_RECEIVES):
        assert _receive_one(consumer) == [], f"{blocked}-2 must wait for {blocked}-1"

    consumer.call("change", id=held["id"], invisible_s=1)  # visible again in a second: redelivered first
    again = _receive_until_some(consumer)
    assert again["body"] == f"{blocked}-1" and again["attempt"] == 2
    consumer.call("ack", id=again["id"])
    assert _receive_until_some(consumer)["body"] == f"{blocked}-2"

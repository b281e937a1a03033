"""Start offsets (computePullFromWhere) and the rebalancer's decisions, against the fake cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from client_fakes import FakeCluster

from rocketq.client.allocation import allocate_averagely
from rocketq.client.instance import ClientInstance
from rocketq.client.offsetstores import RemoteBrokerOffsetStore
from rocketq.client.queues import MessageQueue
from rocketq.client.rebalance import Rebalancer, initial_offset
from rocketq.client.settings import ClientSettings, ConsumeFromWhere, MessageModel
from rocketq.protocol import subscription
from rocketq.protocol.codes import RequestCode, ResponseCode

LAST, FIRST, TIMESTAMP = (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                          ConsumeFromWhere.CONSUME_FROM_TIMESTAMP)


@pytest.fixture
async def instance(cluster: FakeCluster) -> AsyncIterator[ClientInstance]:
    cluster.topic("T")
    cluster.namesrv.set_route("%RETRY%cg", cluster.brokers[:1], queue_nums=1)
    inst = ClientInstance(ClientSettings(namesrv_addr=cluster.namesrv.addr, instance_name="me", client_ip="10.0.0.1"))
    await inst.update_route("T")
    await inst.update_route("%RETRY%cg")
    yield inst
    await inst.close()


def history(cluster: FakeCluster, topic: str, count: int, dropped: int) -> None:
    broker = cluster.brokers[0]
    for i in range(count):
        broker.store(topic, 0, f"m{i}".encode())
    broker.truncate(topic, 0, dropped)


@pytest.mark.parametrize("topic, policy, expected", [
    ("T", LAST, 10), ("T", FIRST, 0), ("T", TIMESTAMP, 4),
    ("%RETRY%cg", LAST, 0), ("%RETRY%cg", FIRST, 0), ("%RETRY%cg", TIMESTAMP, 10),
])
async def test_start_offset_of_a_group_without_stored_offset(
        cluster: FakeCluster, instance: ClientInstance, topic: str, policy: ConsumeFromWhere, expected: int) -> None:
    history(cluster, topic, 10, 4)  # offsets 4..9 remain: the broker has no offset to offer
    mq = MessageQueue(topic, "broker-a", 0)
    offsets = RemoteBrokerOffsetStore(instance, "cg")
    assert await initial_offset(mq, instance=instance, offsets=offsets, policy=policy, timestamp_ms=0) == expected


async def test_a_stored_offset_always_wins(cluster: FakeCluster, instance: ClientInstance) -> None:
    history(cluster, "T", 10, 4)
    cluster.brokers[0].offsets[("cg", "T", 0)] = 7
    offsets = RemoteBrokerOffsetStore(instance, "cg")
    for policy in (LAST, FIRST, TIMESTAMP):
        mq = MessageQueue("T", "broker-a", 0)
        assert await initial_offset(mq, instance=instance, offsets=offsets, policy=policy, timestamp_ms=0) == 7
    assert offsets.read_memory(MessageQueue("T", "broker-a", 0)) == 7


class Recorder:
    def __init__(self) -> None:
        self.queues: dict[MessageQueue, int] = {}
        self.removed: list[MessageQueue] = []

    def assigned(self) -> list[MessageQueue]:
        return list(self.queues)

    async def add_queue(self, mq: MessageQueue, offset: int) -> None:
        self.queues[mq] = offset

    async def remove_queue(self, mq: MessageQueue) -> None:
        del self.queues[mq]
        self.removed.append(mq)


def rebalancer(instance: ClientInstance, recorder: Recorder, topics: list[str],
               model: MessageModel = MessageModel.CLUSTERING) -> Rebalancer:
    subs = {t: subscription.build(t, "*") for t in topics}
    return Rebalancer(instance, "cg", model=model, strategy=allocate_averagely, subscriptions=lambda: subs,
                      assignment=recorder, offsets=RemoteBrokerOffsetStore(instance, "cg"), policy=LAST,
                      timestamp_ms=0, interval_ms=20000)


def members(cluster: FakeCluster, *ids: str) -> None:
    for broker in cluster.brokers:
        broker.members["cg"] = dict.fromkeys(ids)  # type: ignore[assignment]  # ids only; nobody is notified


async def test_clustering_takes_this_members_share(cluster: FakeCluster, instance: ClientInstance) -> None:
    recorder = Recorder()
    members(cluster, "10.0.0.1@me", "10.0.0.9@other")
    await rebalancer(instance, recorder, ["T"]).rebalance()
    assert sorted(recorder.queues) == [MessageQueue("T", "broker-a", i) for i in range(4)]
    members(cluster, "10.0.0.0@first", "10.0.0.1@me")
    await rebalancer(instance, recorder, ["T"]).rebalance()
    assert sorted(recorder.queues) == [MessageQueue("T", "broker-b", i) for i in range(4)]
    assert len(recorder.removed) == 4


async def test_unknown_membership_keeps_the_current_queues(cluster: FakeCluster, instance: ClientInstance) -> None:
    recorder = Recorder()
    members(cluster, "10.0.0.1@me")
    balancer = rebalancer(instance, recorder, ["T"])
    await balancer.rebalance()
    assert len(recorder.queues) == 8
    for broker in cluster.brokers:
        broker.fail_next[RequestCode.GET_CONSUMER_LIST_BY_GROUP] = [ResponseCode.SYSTEM_ERROR]
    await balancer.rebalance()
    assert len(recorder.queues) == 8 and not recorder.removed


async def test_not_yet_listed_member_takes_nothing_and_unsubscribed_topics_are_released(
        cluster: FakeCluster, instance: ClientInstance) -> None:
    recorder = Recorder()
    members(cluster, "10.0.0.9@other")
    await rebalancer(instance, recorder, ["T"]).rebalance()
    assert recorder.queues == {}
    await rebalancer(instance, recorder, ["T"], MessageModel.BROADCASTING).rebalance()
    assert len(recorder.queues) == 8
    await rebalancer(instance, recorder, [], MessageModel.BROADCASTING).rebalance()
    assert recorder.queues == {} and len(recorder.removed) == 8


async def test_a_queue_whose_start_cannot_be_computed_is_tried_next_round(
        cluster: FakeCluster, instance: ClientInstance) -> None:
    recorder = Recorder()
    members(cluster, "10.0.0.1@me")
    cluster.brokers[0].fail_next[RequestCode.QUERY_CONSUMER_OFFSET] = [ResponseCode.SYSTEM_ERROR]
    balancer = rebalancer(instance, recorder, ["T"])
    await balancer.rebalance()
    assert len(recorder.queues) == 7
    await balancer.rebalance()
    assert len(recorder.queues) == 8

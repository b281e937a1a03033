"""RocketMQTopic / RocketMQConsumerGroup parsing, and the pure roll planner."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rocketq_operator import entities, rolling
from rocketq_operator.brokeradmin import GroupConfig, TopicConfig
from rocketq_operator.observing import ClusterState, GroupState, PodState


def test_topic_defaults_and_name_from_metadata() -> None:
    parsed = entities.parse_topic({"clusterRef": "demo"}, "orders")
    assert parsed.errors == ()
    assert parsed.spec == entities.TopicSpec("demo", TopicConfig("orders"))


def test_topic_fields() -> None:
    parsed = entities.parse_topic({"clusterRef": "demo", "topicName": "Orders_v2", "readQueueNums": 16,
                                   "writeQueueNums": 4, "perm": 4, "order": True}, "orders.v2")
    assert parsed.spec == entities.TopicSpec("demo", TopicConfig("Orders_v2", 16, 4, 4, True, "FIFO"))


@pytest.mark.parametrize(("raw", "expected"), [
    ({}, "NORMAL"),
    ({"order": False}, "NORMAL"),
    ({"order": True}, "FIFO"),
    ({"order": True, "messageType": "FIFO"}, "FIFO"),
    ({"messageType": "FIFO"}, "FIFO"),
    ({"messageType": "DELAY"}, "DELAY"),
    ({"messageType": "TRANSACTION"}, "TRANSACTION"),
    ({"messageType": "MIXED", "order": False}, "MIXED"),
])
def test_topic_message_type_declared_or_implied_by_order(raw: dict[str, Any], expected: str) -> None:
    parsed = entities.parse_topic({"clusterRef": "demo", **raw}, "t")
    assert parsed.errors == ()
    assert parsed.spec is not None and parsed.spec.config.message_type == expected


@pytest.mark.parametrize(("raw", "name", "expected"), [
    ({}, "t", "spec.clusterRef: is required: the name of a RocketMQCluster in this namespace"),
    ({"clusterRef": "Demo"}, "t", "spec.clusterRef: 'Demo' does not match ^[a-z]([-a-z0-9]*[a-z0-9])?$"),
    ({"clusterRef": "demo"}, "orders.v2",
     "metadata.name: 'orders.v2' has characters RocketMQ does not allow (only letters, digits, '%', '|', '_', '-')"),
    ({"clusterRef": "demo", "topicName": "%RETRY%g"}, "t",
     "spec.topicName: retry (%RETRY%) and dead-letter (%DLQ%) names are made by the brokers, not declared"),
    ({"clusterRef": "demo", "topicName": "TBW102"}, "t", "spec.topicName: 'TBW102' is a RocketMQ system topic name"),
    ({"clusterRef": "demo", "topicName": "RMQ_SYS_TRACE_TOPIC"}, "t",
     "spec.topicName: 'RMQ_SYS_TRACE_TOPIC' is a RocketMQ system topic name"),
    ({"clusterRef": "demo", "topicName": "x" * 128}, "t",
     "spec.topicName: must be at most 127 characters for RocketMQ, got 128"),
    ({"clusterRef": "demo", "perm": 5}, "t", "spec.perm: must be one of 2 (write), 4 (read) or 6 (read+write), got 5"),
    ({"clusterRef": "demo", "readQueueNums": 0}, "t", "spec.readQueueNums: must be between 1 and 1024, got 0"),
    ({"clusterRef": "demo", "order": "yes"}, "t", "spec.order: must be true or false, got 'yes'"),
    ({"clusterRef": "demo", "messageType": "LITE"}, "t",
     "spec.messageType: must be one of NORMAL, FIFO, DELAY, TRANSACTION, MIXED, got 'LITE'"),
    ({"clusterRef": "demo", "order": True, "messageType": "MIXED"}, "t",
     "spec.messageType: an ordered topic (spec.order: true) is FIFO, not MIXED: "
     "set messageType FIFO or leave it unset"),
])
def test_topic_refusals(raw: dict[str, Any], name: str, expected: str) -> None:
    parsed = entities.parse_topic(raw, name)
    assert parsed.spec is None
    assert parsed.errors == (expected,)


def test_group_fields_and_refusals() -> None:
    parsed = entities.parse_group({"clusterRef": "demo", "consumeEnable": False, "consumeBroadcastEnable": True,
                                   "retryMaxTimes": 0, "retryQueueNums": 2}, "billing")
    assert parsed.spec == entities.GroupSpec("demo", GroupConfig("billing", False, True, 0, 2), orderly_declared=False)
    for flag in (True, False):
        declared = entities.parse_group({"clusterRef": "demo", "consumeMessageOrderly": flag}, "billing")
        assert declared.spec == entities.GroupSpec("demo", GroupConfig("billing", consume_message_orderly=flag))
    assert entities.parse_group({"clusterRef": "demo", "consumeMessageOrderly": "yes"}, "g").errors == (
        "spec.consumeMessageOrderly: must be true or false, got 'yes'",)
    assert entities.parse_group({"clusterRef": "demo", "retryMaxTimes": 65}, "g").errors == (
        "spec.retryMaxTimes: must be between 0 and 64, got 65",)
    assert entities.parse_group({"clusterRef": "demo"}, "x" * 256).errors == (
        "metadata.name: must be at most 255 characters for RocketMQ, got 256",)
    with pytest.raises(ValueError, match="not an entity kind"):
        entities.parse("RocketMQCluster", {}, "x")


@settings(max_examples=200, deadline=None)
@given(raw=st.dictionaries(st.sampled_from(["clusterRef", "topicName", "groupName", "perm", "readQueueNums",
                                            "order", "retryMaxTimes", "consumeEnable", "messageType",
                                            "consumeMessageOrderly"]),
                           st.none() | st.booleans() | st.integers(-5, 2000) | st.text(max_size=20), max_size=6)
       | st.lists(st.integers(), max_size=2) | st.text(max_size=5),
       name=st.text(max_size=30), kind=st.sampled_from([entities.TOPIC_KIND, entities.GROUP_KIND]))
def test_entity_parsing_never_raises(raw: Any, name: str, kind: str) -> None:
    parsed = entities.parse(kind, raw, name)
    assert (parsed.spec is None) == bool(parsed.errors)


def pod(ordinal: int, template: str = "new", ready: bool = True, uid: str | None = None) -> PodState:
    return PodState(name=f"g-{ordinal}", ordinal=ordinal, uid=uid or f"u{ordinal}", ready=ready,
                    terminating=False, template_hash=template)


def cluster(*pods: PodState, replicas: int = 3) -> ClusterState:
    statefulset = {"spec": {"replicas": replicas}}
    group = GroupState(index=0, name="g", statefulset=statefulset, configmap={}, pods={p.ordinal: p for p in pods})
    return ClusterState(namesrv=None, namesrv_pods={}, groups={0: group})


def test_plan_is_done_when_every_pod_is_current() -> None:
    assert rolling.plan(cluster(pod(0), pod(1), pod(2)), {0: "new"}, {}, {0: 0}).kind is rolling.Kind.DONE


def test_plan_rolls_slaves_highest_first_and_the_master_last() -> None:
    state = cluster(pod(0, "old"), pod(1, "old"), pod(2, "old"))
    decision = rolling.plan(state, {0: "new"}, {}, {0: 1})
    assert decision.kind is rolling.Kind.ROLL and decision.pod == pod(2, "old") and decision.remaining == 3
    state = cluster(pod(0, "old"), pod(1, "old"), pod(2))
    assert rolling.plan(state, {0: "new"}, {}, {0: 1}).pod == pod(0, "old")
    state = cluster(pod(0), pod(1, "old"), pod(2))
    assert rolling.plan(state, {0: "new"}, {}, {0: 1}).pod == pod(1, "old")


def test_plan_waits_for_unready_or_missing_pods() -> None:
    decision = rolling.plan(cluster(pod(0, "old"), pod(1, ready=False), pod(2)), {0: "new"}, {}, {0: 0})
    assert decision.kind is rolling.Kind.WAIT and "g-1 is not ready" in decision.message
    decision = rolling.plan(cluster(pod(0, "old"), pod(1)), {0: "new"}, {}, {0: 0})
    assert decision.kind is rolling.Kind.WAIT and "g-2 does not exist yet" in decision.message


def test_plan_restarts_pods_listed_by_a_manual_roll() -> None:
    state = cluster(pod(0), pod(1), pod(2, uid="restart-me"))
    decision = rolling.plan(state, {0: "new"}, {0: {"restart-me"}}, {0: 0})
    assert decision.kind is rolling.Kind.ROLL and decision.pod is not None and decision.pod.ordinal == 2


def test_plan_ignores_pods_above_replicas() -> None:
    assert rolling.plan(cluster(pod(0), pod(1), pod(2, "old"), replicas=2), {0: "new"}, {}, {0: 0}).kind is (
        rolling.Kind.DONE)

"""The real operator (kopf handlers, reconcilers, applying) against the kmock API emulator.

Each test starts an emulated API server, the StatefulSet emulator and the operator, acts like a
user (create/patch/delete custom resources, lose a pod) and waits for the operator to bring the
emulated world to the expected state. A fake BrokerAdmin stands in for the brokers.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import crdschema
import pytest
from operator_harness import PATHS, OperatorEnv, fast_config
from rocketq_operator import applying, names, spec
from rocketq_operator.brokeradmin import GroupConfig, TopicConfig
from rocketq_operator.rendering import broker, common, namesrv, pdb

SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation")


def as_applied(live: dict[str, Any] | None) -> dict[str, Any]:
    """A live child without what the API server and the apply step add to it."""
    assert live is not None
    out = copy.deepcopy(live)
    meta = out["metadata"]
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    annotations = meta.get("annotations", {})
    annotations.pop(applying.LAST_APPLIED, None)
    for key in list(annotations):
        if key.startswith("rocketq.io/") and key != common.ANNOTATION_BROKER_MODE:
            annotations.pop(key)
    if not annotations:
        meta.pop("annotations", None)
    out.pop("status", None)
    return out


def rendered_cluster(env: OperatorEnv, name: str) -> spec.Cluster:
    body = env.get("RocketMQCluster", name)
    assert body is not None
    parsed = spec.parse_cluster_spec(body["spec"], name)
    assert parsed.spec is not None
    return spec.Cluster(spec.cluster_meta(body), parsed.spec)


def phase(env: OperatorEnv, name: str) -> str | None:
    return env.status("RocketMQCluster", name).get("phase")


def observed(env: OperatorEnv, name: str, namespace: str = "mq") -> bool:
    """The status describes the current spec (kmock bumps generation like an API server)."""
    body = env.get("RocketMQCluster", name, namespace) or {}
    return (body.get("status") or {}).get("observedGeneration") == body.get("metadata", {}).get("generation")


async def running(env: OperatorEnv, name: str) -> dict[str, Any]:
    await env.wait_for(lambda: observed(env, name) and phase(env, name) == "Running", f"{name} to be Running")
    return env.status("RocketMQCluster", name)


async def test_create_renders_every_child_and_reports_ready(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    status = await running(env, "demo")
    cluster = rendered_cluster(env, "demo")

    expected = [namesrv.render_namesrv_statefulset(cluster), namesrv.render_namesrv_service(cluster),
                *pdb.render_pdbs(cluster)]
    for index in range(2):
        expected += [broker.render_broker_configmap(cluster, index, 0),
                     broker.render_broker_statefulset(cluster, index),
                     broker.render_broker_service(cluster, index)]
    for obj in expected:
        assert as_applied(env.get(obj["kind"], obj["metadata"]["name"])) == obj, obj["metadata"]["name"]
    assert env.names("StatefulSet") == {"demo-namesrv", "demo-broker-0", "demo-broker-1"}
    assert env.names("Pod") == {"demo-namesrv-0", "demo-namesrv-1", "demo-broker-0-0", "demo-broker-0-1",
                                "demo-broker-1-0", "demo-broker-1-1"}

    assert status["observedGeneration"] == 1
    assert status["readyGroups"] == 2
    assert status["nameServers"] == {"ready": 2, "replicas": 2,
                                     "addresses": names.namesrv_addresses("demo", "mq", 2)}
    assert status["brokerGroups"] == [
        {"brokerName": "demo-broker-0", "mode": "MasterSlave", "master": "demo-broker-0-0", "readyReplicas": 2,
         "replicas": 2},
        {"brokerName": "demo-broker-1", "mode": "MasterSlave", "master": "demo-broker-1-0", "readyReplicas": 2,
         "replicas": 2},
    ]
    ready = env.condition("RocketMQCluster", "demo", "Ready")
    assert ready is not None and ready["status"] == "True" and ready["observedGeneration"] == 1
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Ready": "True", "Progressing": "False", "Degraded": "False", "ReconciliationPaused": "False",
        "AnalyticsUnavailable": "False"}


def pod_uid(env: OperatorEnv, name: str) -> str | None:
    pod = env.get("Pod", name)
    return None if pod is None else pod["metadata"]["uid"]


def deleted_pods(env: OperatorEnv) -> list[str]:
    return [path.rsplit("/", 1)[1] for path in env.operator_requests("DELETE", "Pod")]


async def test_image_change_rolls_one_pod_at_a_time_slaves_first(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    await running(env, "demo")
    assert deleted_pods(env) == []

    await env.patch("RocketMQCluster", "demo", {"spec": {"image": "rocketq/rocketq:0.2.0"}})
    await env.wait_for(lambda: len(deleted_pods(env)) == 4 and phase(env, "demo") == "Running",
                       "every broker pod to be restarted")
    assert deleted_pods(env) == ["demo-broker-0-1", "demo-broker-0-0", "demo-broker-1-1", "demo-broker-1-0"]
    for group in ("demo-broker-0", "demo-broker-1"):
        sts = env.get("StatefulSet", group)
        assert sts is not None
        assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "rocketq/rocketq:0.2.0"
        for ordinal in range(2):
            pod = env.get("Pod", f"{group}-{ordinal}")
            assert pod is not None
            assert pod["spec"]["containers"][0]["image"] == "rocketq/rocketq:0.2.0"
    # The name servers roll by Kubernetes' own RollingUpdate: the operator only patches them.
    namesrv_sts = env.get("StatefulSet", "demo-namesrv")
    assert namesrv_sts is not None
    assert namesrv_sts["spec"]["template"]["spec"]["containers"][0]["image"] == "rocketq/rocketq:0.2.0"
    assert env.status("RocketMQCluster", "demo")["observedGeneration"] == 2


async def test_roll_waits_for_a_slave_to_catch_up(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    slave = names.broker_address("demo", "mq", 0, 1)
    master = names.broker_address("demo", "mq", 0, 0)
    env.admin.offsets.update({master: 50 << 20, slave: 10 << 20})

    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"config": {"fileReservedTime": "24"}}}})
    await env.wait_for(lambda: deleted_pods(env) == ["demo-broker-0-1"], "the slave to restart first")
    await env.wait_for(lambda: "bytes behind its master" in (env.condition(
        "RocketMQCluster", "demo", "Progressing") or {}).get("message", ""), "the roll to wait for replication")
    assert deleted_pods(env) == ["demo-broker-0-1"]
    assert phase(env, "demo") == "Updating"

    # Caught up by offset, but the master does not report it in sync (e.g. it reconnected
    # a moment ago and is still measuring): the master waits.
    env.admin.offsets[slave] = 50 << 20
    env.admin.behind[master] = 1
    await env.wait_for(lambda: "reports in sync" in (env.condition(
        "RocketMQCluster", "demo", "Progressing") or {}).get("message", ""), "the roll to wait for haInSync")
    assert deleted_pods(env) == ["demo-broker-0-1"]

    del env.admin.behind[master]
    await env.wait_for(lambda: deleted_pods(env) == ["demo-broker-0-1", "demo-broker-0-0"]
                       and phase(env, "demo") == "Running", "the master to restart once the slave caught up")


async def test_scale_up_creates_the_group_and_seeds_topics_and_groups_first(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await env.create("RocketMQTopic", "orders", {"clusterRef": "demo", "readQueueNums": 4, "writeQueueNums": 4})
    await env.create("RocketMQConsumerGroup", "billing", {"clusterRef": "demo", "retryMaxTimes": 3})
    await running(env, "demo")
    master0 = names.broker_address("demo", "mq", 0, 0)
    await env.wait_for(lambda: "orders" in env.admin.topics.get(master0, {}), "the topic on group 0")

    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"groups": 2}}})
    await env.wait_for(lambda: env.get("StatefulSet", "demo-broker-1"), "the new StatefulSet")
    status = await running(env, "demo")
    master1 = names.broker_address("demo", "mq", 1, 0)
    assert env.admin.topics[master1]["orders"] == TopicConfig("orders", 4, 4, 6, False)
    assert env.admin.groups[master1]["billing"] == GroupConfig("billing", retry_max_times=3)
    first_calls = [method for method, address, _arg in env.admin.calls
                   if address == master1 and method.startswith("create_or_update")][:2]
    assert first_calls == ["create_or_update_group", "create_or_update_topic"]
    configmap = env.get("ConfigMap", "demo-broker-1-config")
    assert configmap is not None
    assert configmap["metadata"]["annotations"]["rocketq.io/metadata-synced"] == "true"
    assert [g["brokerName"] for g in status["brokerGroups"]] == ["demo-broker-0", "demo-broker-1"]
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("brokers") == ["demo-broker-0",
                                                                                        "demo-broker-1"],
                       "the topic status to list both groups")


async def test_a_topic_a_new_master_refuses_does_not_block_seeding_it(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await env.create("RocketMQTopic", "mixed", {"clusterRef": "demo", "messageType": "MIXED"})
    await env.create("RocketMQTopic", "orders", {"clusterRef": "demo"})
    await running(env, "demo")
    await env.wait_for(lambda: env.status("RocketMQTopic", "mixed").get("phase") == "Ready", "MIXED on group 0")
    master1 = names.broker_address("demo", "mq", 1, 0)
    env.admin.mixed_refused.add(master1)  # group 1's brokers run without enableMixedMessageType

    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"groups": 2}}})
    await env.wait_for(lambda: (env.get("ConfigMap", "demo-broker-1-config") or {}).get("metadata", {}).get(
        "annotations", {}).get("rocketq.io/metadata-synced") == "true", "group 1 seeded despite the refusal")
    assert env.admin.topics[master1]["orders"] == TopicConfig("orders")
    assert "mixed" not in env.admin.topics[master1]
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("brokers") == ["demo-broker-0",
                                                                                        "demo-broker-1"],
                       "the other topic on both groups")
    await env.wait_for(lambda: (env.condition("RocketMQTopic", "mixed", "Ready") or {}).get("reason")
                       == "ChangeRefused", "the refused topic to say so")
    assert env.status("RocketMQTopic", "mixed")["brokers"] == ["demo-broker-0"]


async def test_scale_down_drains_before_deleting(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    await running(env, "demo")
    master1 = names.broker_address("demo", "mq", 1, 0)
    slave1 = names.broker_address("demo", "mq", 1, 1)
    env.admin.groups[master1] = {"billing": GroupConfig("billing"), "TOOLS_CONSUMER": GroupConfig("TOOLS_CONSUMER")}
    env.admin.lags[(master1, "billing")] = 120
    env.admin.lags[(master1, "TOOLS_CONSUMER")] = 999  # system groups never hold a drain

    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"groups": 1}}})
    await env.wait_for(lambda: env.admin.perms.get(master1) == 4 and env.admin.perms.get(slave1) == 4,
                       "group 1 to become read-only")
    await env.wait_for(lambda: phase(env, "demo") == "Scaling", "the Scaling phase")
    status = env.status("RocketMQCluster", "demo")
    assert status["brokerGroups"][1]["draining"] is True
    assert "120 messages not consumed yet" in (env.condition("RocketMQCluster", "demo", "Progressing") or {})["message"]
    assert env.get("StatefulSet", "demo-broker-1") is not None
    assert names.broker_address("demo", "mq", 0, 0) not in env.admin.perms

    env.admin.lags[(master1, "billing")] = 0
    removed = (("StatefulSet", "demo-broker-1"), ("Service", "demo-broker-1"),
               ("PodDisruptionBudget", "demo-broker-1"), ("ConfigMap", "demo-broker-1-config"))
    await env.wait_for(lambda: all(env.get(kind, name) is None for kind, name in removed), "group 1 to be removed")
    assert [path.rsplit("/", 2)[1] for path in env.operator_requests("DELETE", "StatefulSet")] == ["statefulsets"]
    status = await running(env, "demo")
    assert [g["brokerName"] for g in status["brokerGroups"]] == ["demo-broker-0"]
    await env.wait_for(lambda: env.events("BrokerGroupRemoved"), "a BrokerGroupRemoved event")


async def test_drain_that_never_empties_is_degraded_and_kept(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    await running(env, "demo")
    master1 = names.broker_address("demo", "mq", 1, 0)
    env.admin.groups[master1] = {"billing": GroupConfig("billing")}
    env.admin.lags[(master1, "billing")] = 5
    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"groups": 1}}})
    await env.wait_for(lambda: "rocketq.io/draining-since" in (env.get("ConfigMap", "demo-broker-1-config") or {})[
        "metadata"].get("annotations", {}), "the drain to begin")
    # Pretend the drain began long ago: the timeout has passed.
    await env.patch("ConfigMap", "demo-broker-1-config",
                    {"metadata": {"annotations": {"rocketq.io/draining-since": "2020-01-01T00:00:00Z"}}})
    await env.wait_for(lambda: (env.condition("RocketMQCluster", "demo", "Degraded") or {}).get("reason")
                       == "DrainTimeout", "a DrainTimeout condition")
    assert phase(env, "demo") == "Degraded"
    assert env.get("StatefulSet", "demo-broker-1") is not None

    # Asking for the group again cancels the drain and makes it writable.
    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"groups": 2}}})
    await running(env, "demo")
    assert env.admin.perms[master1] == 6
    configmap = env.get("ConfigMap", "demo-broker-1-config")
    assert configmap is not None and "rocketq.io/draining-since" not in configmap["metadata"]["annotations"]


def printer_columns(obj: dict[str, Any]) -> dict[str, Any]:
    """What `kubectl get` shows for the object (the CRD's columns but Age; simple paths only)."""
    (version,) = crdschema.load_crd(obj["kind"])["spec"]["versions"]
    shown = {}
    for column in version["additionalPrinterColumns"]:
        if column["name"] != "Age":
            value: Any = obj
            for part in column["jsonPath"].lstrip(".").split("."):
                value = value.get(part) if isinstance(value, dict) else None
            shown[column["name"]] = value
    return shown


async def test_topic_lifecycle_reaches_every_master(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    await running(env, "demo")
    masters = [names.broker_address("demo", "mq", i, 0) for i in range(2)]

    await env.create("RocketMQTopic", "orders", {"clusterRef": "demo"})
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("phase") == "Ready", "the topic Ready")
    for master in masters:
        assert env.admin.topics[master]["orders"] == TopicConfig("orders")
    topic = env.get("RocketMQTopic", "orders")
    assert topic is not None and "rocketq.io/finalizer" in topic["metadata"]["finalizers"]
    assert printer_columns(topic) == {"Cluster": "demo", "Topic": "orders", "Read": 8, "Write": 8, "Perm": 6,
                                      "Type": "NORMAL", "Phase": "Ready"}, "no empty column when the name defaults"

    await env.patch("RocketMQTopic", "orders", {"spec": {"perm": 4, "writeQueueNums": 2}})
    await env.wait_for(lambda: all(env.admin.topics[m]["orders"] == TopicConfig("orders", 8, 2, 4) for m in masters),
                       "the topic to be updated on every master")

    await env.delete("RocketMQTopic", "orders")
    await env.wait_for(lambda: env.get("RocketMQTopic", "orders") is None, "the finalizer to release the topic")
    # Deletes are idempotent; kopf may run the delete handler more than once.
    assert {address for address, _ in env.admin.called("delete_topic")} == set(masters)
    assert {name for _, name in env.admin.called("delete_topic_in_namesrv")} == {"orders"}
    assert all("orders" not in env.admin.topics[m] for m in masters)


async def test_consumer_group_lifecycle(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    master = names.broker_address("demo", "mq", 0, 0)
    await env.create("RocketMQConsumerGroup", "billing", {"clusterRef": "demo", "consumeBroadcastEnable": True})
    await env.wait_for(lambda: env.admin.groups.get(master, {}).get("billing") == GroupConfig(
        "billing", consume_broadcast_enable=True), "the group on the master")
    await env.wait_for(lambda: env.status("RocketMQConsumerGroup", "billing").get("phase") == "Ready", "Ready")
    assert printer_columns(env.get("RocketMQConsumerGroup", "billing") or {}) == {
        "Cluster": "demo", "Group": "billing", "Orderly": False, "Phase": "Ready"}
    await env.delete("RocketMQConsumerGroup", "billing")
    await env.wait_for(lambda: env.get("RocketMQConsumerGroup", "billing") is None, "the group to go")
    assert set(env.admin.called("delete_group")) == {(master, "billing")}


async def test_a_fifo_topic_gets_message_type_fifo_and_an_ordered_one_too(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    await running(env, "demo")
    masters = [names.broker_address("demo", "mq", i, 0) for i in range(2)]
    await env.create("RocketMQTopic", "orders", {"clusterRef": "demo", "messageType": "FIFO"})
    await env.create("RocketMQTopic", "legacy", {"clusterRef": "demo", "order": True})
    for name in ("orders", "legacy"):
        await env.wait_for(lambda n=name: env.status("RocketMQTopic", n).get("phase") == "Ready", f"{name} Ready")
        assert env.status("RocketMQTopic", name)["messageType"] == "FIFO"
    for master in masters:
        assert env.admin.topics[master]["orders"] == TopicConfig("orders", message_type="FIFO")
        assert env.admin.topics[master]["legacy"] == TopicConfig("legacy", order=True, message_type="FIFO")
    assert printer_columns(env.get("RocketMQTopic", "orders") or {})["Type"] == "FIFO"

    await env.patch("RocketMQTopic", "orders", {"spec": {"messageType": "DELAY"}})
    await env.wait_for(lambda: all(env.admin.topics[m]["orders"].message_type == "DELAY" for m in masters)
                       and env.status("RocketMQTopic", "orders").get("messageType") == "DELAY",
                       "the type change on every master and in the status")


async def test_a_refused_type_change_is_a_condition_and_not_sent_again(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    master = names.broker_address("demo", "mq", 0, 0)
    env.admin.mixed_refused.add(master)
    await env.create("RocketMQTopic", "orders", {"clusterRef": "demo", "messageType": "FIFO"})
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("phase") == "Ready", "the topic Ready")

    await env.patch("RocketMQTopic", "orders", {"spec": {"messageType": "MIXED"}})
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("phase") == "Failed", "phase Failed")
    ready = env.condition("RocketMQTopic", "orders", "Ready")
    assert ready is not None and ready["status"] == "False" and ready["reason"] == "ChangeRefused"
    assert "demo-broker-0 refused the change" in ready["message"]
    assert "MIXED message type is not supported" in ready["message"]
    assert env.status("RocketMQTopic", "orders")["messageType"] == "FIFO", "what the broker still has"
    assert env.admin.topics[master]["orders"].message_type == "FIFO"
    await asyncio.sleep(1.5)  # several entity intervals (0.3 s) of timer passes
    mixed_writes = [t for _, t in env.admin.called("create_or_update_topic")
                    if isinstance(t, TopicConfig) and t.message_type == "MIXED"]
    assert len(mixed_writes) == 1, "a refused write is not sent again on every pass"
    assert len(env.events("ChangeRefused")) == 1

    # A new generation is a new attempt: back to a type the broker takes.
    await env.patch("RocketMQTopic", "orders", {"spec": {"messageType": "NORMAL"}})
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("phase") == "Ready"
                       and env.admin.topics[master]["orders"].message_type == "NORMAL", "the topic Ready again")


async def test_group_orderly_flag_written_when_declared_and_kept_when_not(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    master = names.broker_address("demo", "mq", 0, 0)
    await env.create("RocketMQConsumerGroup", "fifo", {"clusterRef": "demo", "consumeMessageOrderly": True})
    await env.wait_for(lambda: env.admin.groups.get(master, {}).get("fifo") == GroupConfig(
        "fifo", consume_message_orderly=True), "the orderly group on the master")
    await env.wait_for(lambda: env.status("RocketMQConsumerGroup", "fifo").get("consumeMessageOrderly") is True,
                       "the status to show the flag")
    assert printer_columns(env.get("RocketMQConsumerGroup", "fifo") or {})["Orderly"] is True

    # A group whose flag was set with `rocketq admin updateSubGroup -o true` while its object
    # says nothing about it: an unrelated edit keeps the flag.
    await env.create("RocketMQConsumerGroup", "billing", {"clusterRef": "demo"})
    await env.wait_for(lambda: "billing" in env.admin.groups.get(master, {}), "the group on the master")
    env.admin.groups[master]["billing"] = GroupConfig("billing", consume_message_orderly=True)
    await env.patch("RocketMQConsumerGroup", "billing", {"spec": {"retryMaxTimes": 3}})
    await env.wait_for(lambda: env.admin.groups[master]["billing"].retry_max_times == 3, "the edit on the master")
    assert env.admin.groups[master]["billing"] == GroupConfig("billing", retry_max_times=3,
                                                              consume_message_orderly=True)
    await env.wait_for(lambda: env.status("RocketMQConsumerGroup", "billing").get("consumeMessageOrderly") is True,
                       "the status to show the broker's flag")

    # Declared, it is enforced: the object is the source of truth for what it sets.
    await env.patch("RocketMQConsumerGroup", "billing", {"spec": {"consumeMessageOrderly": False}})
    await env.wait_for(lambda: env.admin.groups[master]["billing"].consume_message_orderly is False,
                       "the declared flag on the master")


@pytest.mark.operator_config(read_cache_ttl=60.0)
async def test_an_admin_set_orderly_flag_survives_an_edit_made_while_the_table_is_cached(env: OperatorEnv) -> None:
    """The group table the operator compares against may be a cache TTL old; the flag it carries
    over is read fresh from the broker just before the write."""
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    master = names.broker_address("demo", "mq", 0, 0)
    await env.create("RocketMQConsumerGroup", "billing", {"clusterRef": "demo"})
    await env.wait_for(lambda: "billing" in env.admin.groups.get(master, {}), "the group on the master")
    env.admin.groups[master]["billing"] = GroupConfig("billing", consume_message_orderly=True)  # mqadmin's
    await env.patch("RocketMQConsumerGroup", "billing", {"spec": {"retryMaxTimes": 3}})
    await env.wait_for(lambda: env.admin.groups[master]["billing"].retry_max_times == 3, "the edit on the master")
    assert env.admin.groups[master]["billing"].consume_message_orderly is True


async def test_topic_for_a_missing_cluster_waits(env: OperatorEnv) -> None:
    await env.create("RocketMQTopic", "orders", {"clusterRef": "nowhere"})
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("phase") == "Pending", "Pending")
    ready = env.condition("RocketMQTopic", "orders", "Ready")
    assert ready is not None and ready["reason"] == "ClusterNotReady"
    await env.delete("RocketMQTopic", "orders")
    await env.wait_for(lambda: env.get("RocketMQTopic", "orders") is None, "a topic of no cluster to be released")


def annotations_of(env: OperatorEnv, name: str) -> dict[str, str]:
    return (env.get("ConfigMap", name) or {}).get("metadata", {}).get("annotations") or {}


def master_ordinal_of(env: OperatorEnv, name: str) -> str | None:
    return (env.get("ConfigMap", name) or {}).get("data", {}).get("masterOrdinal")


async def three_pods_slave_2_ahead(env: OperatorEnv) -> dict[int, str]:
    """A running 3-pod group whose slaves are both in sync, slave 2 the most caught up; its addresses."""
    await env.create("RocketMQCluster", "demo", {"brokers": {"replicasPerGroup": 3}})
    await running(env, "demo")
    addr = {o: names.broker_address("demo", "mq", 0, o) for o in range(3)}
    env.admin.offsets.update({addr[1]: 900, addr[2]: 1000})
    return addr


@pytest.mark.operator_config(failover_grace=0.5)
async def test_failover_promotes_the_most_caught_up_slave_at_runtime(env: OperatorEnv) -> None:
    addr = await three_pods_slave_2_ahead(env)
    env.admin.epochs.update({addr[1]: 3, addr[2]: 3})
    uids = {o: pod_uid(env, f"demo-broker-0-{o}") for o in (1, 2)}

    env.sts.lost.add("demo-broker-0-0")
    await env.wait_for(lambda: master_ordinal_of(env, "demo-broker-0-config") == "2",
                       "masterOrdinal to move to ordinal 2")
    await env.wait_for(lambda: env.events("Failover"), "a Failover event")
    event = env.events("Failover")[0]
    assert event["type"] == "Warning"
    assert "from demo-broker-0-0" in event["message"] and "to demo-broker-0-2" in event["message"]
    assert "promoted at runtime with a new epoch" in event["message"]
    assert event["involvedObject"]["name"] == "demo"
    # Promoted first (a new epoch, 4), then the ConfigMap; slave 1's id shifts (1 -> 2) at runtime.
    calls = env.admin.called("change_role")
    assert calls[:2] == [(addr[2], ("ASYNC_MASTER", 0, 0)), (addr[1], ("SLAVE", 2, 0))]
    assert env.admin.epochs[addr[2]] == 4
    assert deleted_pods(env) == [], "no pod restarts: the roles changed in place"
    assert {o: pod_uid(env, f"demo-broker-0-{o}") for o in (1, 2)} == uids
    await env.wait_for(lambda: env.status("RocketMQCluster", "demo")["brokerGroups"][0]["master"]
                       == "demo-broker-0-2", "status to name the new master")
    group_status = env.status("RocketMQCluster", "demo")["brokerGroups"][0]
    assert group_status["lastFailover"] == "demo-broker-0-2: promoted at runtime with a new epoch"
    # The old master is told it is a slave once it is back (until then it stays pending).
    assert annotations_of(env, "demo-broker-0-config")["rocketq.io/roles-pending"] == "0"
    env.sts.lost.discard("demo-broker-0-0")
    await env.wait_for(lambda: (addr[0], ("SLAVE", 1, 0)) in env.admin.called("change_role"),
                       "the old master told its slave identity")
    await env.wait_for(lambda: "rocketq.io/roles-pending" not in annotations_of(env, "demo-broker-0-config"),
                       "nothing left to settle")
    assert env.admin.registered[("mq", "demo")]["demo-broker-0"][0] == addr[2]
    await running(env, "demo")


@pytest.mark.operator_config(failover_grace=0.5)
async def test_failover_falls_back_to_pod_restarts_without_runtime_roles(env: OperatorEnv) -> None:
    addr = await three_pods_slave_2_ahead(env)
    env.admin.no_role_changes.update(addr.values())
    old_uid = pod_uid(env, "demo-broker-0-2")

    env.sts.lost.add("demo-broker-0-0")
    await env.wait_for(lambda: master_ordinal_of(env, "demo-broker-0-config") == "2",
                       "masterOrdinal to move to ordinal 2")
    await env.wait_for(lambda: env.events("Failover"), "a Failover event")
    assert "promoted by pod restart (fallback: " in env.events("Failover")[0]["message"]
    # Ordinals 0, 1 and 2 change identity (0 and 1 shift ids, 2 becomes master); 0 is gone anyway.
    assert set(deleted_pods(env)) == {"demo-broker-0-1", "demo-broker-0-2"}
    await env.wait_for(lambda: pod_uid(env, "demo-broker-0-2") not in (None, old_uid), "the new master restarted")
    await env.wait_for(lambda: "pod restart" in env.status("RocketMQCluster", "demo")["brokerGroups"][0].get(
        "lastFailover", ""), "status to say the promotion was a pod restart")
    assert "rocketq.io/failover-epoch-floor" not in annotations_of(env, "demo-broker-0-config")
    assert env.admin.registered[("mq", "demo")]["demo-broker-0"][0] == addr[2]
    env.sts.lost.discard("demo-broker-0-0")
    await running(env, "demo")


@pytest.mark.operator_config(failover_grace=0.5)
async def test_failed_promotion_is_reported_and_the_next_candidate_goes_past_its_epoch(env: OperatorEnv) -> None:
    addr = await three_pods_slave_2_ahead(env)
    env.admin.epochs.update({addr[1]: 5, addr[2]: 5})
    env.admin.refuse_roles.add(addr[2])  # the best candidate refuses (or dies) midway

    env.sts.lost.add("demo-broker-0-0")
    await env.wait_for(lambda: env.events("FailoverFailed"), "a FailoverFailed event")
    assert "promoting demo-broker-0-2 to master of demo-broker-0 failed midway" in \
        env.events("FailoverFailed")[0]["message"]
    # Slave 1 is promoted next, past the epoch slave 2 may have taken (5 + 1): its epoch is 7.
    await env.wait_for(lambda: master_ordinal_of(env, "demo-broker-0-config") == "1", "the next candidate")
    assert (addr[1], ("ASYNC_MASTER", 0, 6)) in env.admin.called("change_role")
    assert env.admin.epochs[addr[1]] == 7
    promotions = [a for a, (role, _id, _above) in env.admin.called("change_role") if role == "ASYNC_MASTER"]
    assert promotions[0] == addr[2] and set(promotions) == {addr[1], addr[2]}
    assert "rocketq.io/failover-failed" not in annotations_of(env, "demo-broker-0-config")
    # The failed candidate is settled as a slave (brokerId 2) once it answers.
    env.admin.refuse_roles.clear()
    await env.wait_for(lambda: env.admin.roles.get(addr[2]) == ("SLAVE", 2), "the failed candidate demoted")
    env.sts.lost.discard("demo-broker-0-0")
    await env.wait_for(lambda: "rocketq.io/roles-pending" not in annotations_of(env, "demo-broker-0-config"),
                       "nothing left to settle")
    assert env.admin.roles[addr[0]] == ("SLAVE", 1)
    await running(env, "demo")


@pytest.mark.operator_config(failover_grace=0.5)
async def test_a_master_back_after_failed_promotions_is_reasserted_past_their_epochs(env: OperatorEnv) -> None:
    addr = await three_pods_slave_2_ahead(env)
    env.admin.refuse_roles.update({addr[1], addr[2]})
    env.sts.lost.add("demo-broker-0-0")
    await env.wait_for(lambda: annotations_of(env, "demo-broker-0-config").get("rocketq.io/failover-failed")
                       == "1,2", "both candidates to fail")
    # Both candidates go silent (either may be a master now), and the old master returns.
    env.admin.down.update({addr[1], addr[2]})
    env.admin.refuse_roles.clear()
    env.sts.lost.discard("demo-broker-0-0")
    await env.wait_for(lambda: env.status("RocketMQCluster", "demo").get("readyGroups") == 1,
                       "the old master back")
    await asyncio.sleep(1.0)
    floor = annotations_of(env, "demo-broker-0-config").get("rocketq.io/failover-epoch-floor")
    assert floor is not None and int(floor) >= 2, "kept while a failed candidate has not answered"
    assert addr[0] not in [a for a, _change in env.admin.called("change_role")], "not before they are settled"
    env.admin.down.clear()
    await env.wait_for(lambda: "rocketq.io/failover-epoch-floor" not in annotations_of(env, "demo-broker-0-config"),
                       "the failover marks cleared")
    assert env.admin.roles[addr[1]] == ("SLAVE", 1) and env.admin.roles[addr[2]] == ("SLAVE", 2)
    # Settled first, then the master re-asserted past the floor (lifting a fence it may have).
    calls = env.admin.called("change_role")
    assert calls[-1] == (addr[0], ("ASYNC_MASTER", 0, int(floor)))
    assert master_ordinal_of(env, "demo-broker-0-config") == "0"
    await running(env, "demo")


@pytest.mark.operator_config(failover_grace=0.5)
async def test_failover_without_a_candidate_is_degraded(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    env.admin.down.add(names.broker_address("demo", "mq", 0, 1))
    env.sts.lost.add("demo-broker-0-0")
    await env.wait_for(lambda: (env.condition("RocketMQCluster", "demo", "Degraded") or {}).get("reason")
                       == "NoFailoverCandidate", "NoFailoverCandidate")
    assert (env.get("ConfigMap", "demo-broker-0-config") or {})["data"]["masterOrdinal"] == "0"


@pytest.mark.operator_config(failover_grace=0.5, caught_up_bytes=1000)
async def test_failover_refuses_empty_and_lagging_slaves_until_forced(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"replicasPerGroup": 3}})
    await running(env, "demo")
    master = names.broker_address("demo", "mq", 0, 0)
    # Slave 1 is empty; slave 2 heard the master reach 50_000 but has only 40_000.
    env.admin.offsets.update({names.broker_address("demo", "mq", 0, 1): 0,
                              names.broker_address("demo", "mq", 0, 2): 40_000})
    env.admin.behind[names.broker_address("demo", "mq", 0, 2)] = 10_000

    env.sts.lost.add("demo-broker-0-0")
    await env.wait_for(lambda: (env.condition("RocketMQCluster", "demo", "Degraded") or {}).get("reason")
                       == "FailoverBlocked", "FailoverBlocked")
    message = env.condition("RocketMQCluster", "demo", "Degraded")["message"]
    assert "ordinal 1: offset 0 (empty)" in message and "ordinal 2: offset 40000 (10000 bytes behind)" in message
    await env.wait_for(lambda: env.events("FailoverBlocked"), "a FailoverBlocked event")
    await asyncio.sleep(1.0)
    assert len(env.events("FailoverBlocked")) == 1, "one Event per distinct reason, not one per pass"
    config = env.get("ConfigMap", "demo-broker-0-config") or {}
    assert config["data"]["masterOrdinal"] == "0"
    assert not env.admin.called("set_broker_permission")

    await env.patch("ConfigMap", "demo-broker-0-config", {"metadata": {"annotations": {
        "rocketq.io/force-failover": "2"}}})
    await env.wait_for(lambda: (env.get("ConfigMap", "demo-broker-0-config") or {}).get("data", {}).get(
        "masterOrdinal") == "2", "the forced promotion")
    await env.wait_for(lambda: env.events("Failover"), "a Failover event")
    event = env.events("Failover")[0]["message"]
    assert "forced by annotation" in event and "old master set read-only" in event
    assert env.admin.called("set_broker_permission") == [(master, 4)]
    annotations = (env.get("ConfigMap", "demo-broker-0-config") or {})["metadata"].get("annotations") or {}
    assert "rocketq.io/force-failover" not in annotations and "rocketq.io/failover-blocked" not in annotations


@pytest.mark.operator_config(failover_grace=0.5, caught_up_bytes=1000)
async def test_failover_measures_slaves_against_the_masters_last_offset(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    master, slave = names.broker_address("demo", "mq", 0, 0), names.broker_address("demo", "mq", 0, 1)
    # The slave believes it is current (no lag heard), but the master, unready yet still
    # answering when first seen unavailable, had written 60_000 bytes more.
    env.admin.offsets.update({master: 100_000, slave: 40_000})
    env.sts.lost.add("demo-broker-0-0")
    await env.wait_for(lambda: ((env.get("ConfigMap", "demo-broker-0-config") or {})["metadata"].get(
        "annotations") or {}).get("rocketq.io/master-last-offset") == "100000", "the master's offset recorded")
    env.admin.down.add(master)  # now it is gone for good; the recorded offset still counts
    await env.wait_for(lambda: (env.condition("RocketMQCluster", "demo", "Degraded") or {}).get("reason")
                       == "FailoverBlocked", "FailoverBlocked")
    message = env.condition("RocketMQCluster", "demo", "Degraded")["message"]
    assert "in sync with offset 100000: ordinal 1: offset 40000 (60000 bytes behind)" in message
    assert (env.get("ConfigMap", "demo-broker-0-config") or {})["data"]["masterOrdinal"] == "0"


async def test_pause_annotation_stops_every_change(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    await env.patch("RocketMQCluster", "demo", {"metadata": {"annotations": {
        "rocketq.io/pause-reconciliation": "true"}}})
    await env.wait_for(lambda: (env.condition("RocketMQCluster", "demo", "ReconciliationPaused") or {}).get(
        "status") == "True", "ReconciliationPaused=True")
    writes = len(env.operator_requests("PATCH", "StatefulSet"))
    await env.patch("RocketMQCluster", "demo", {"spec": {"image": "rocketq/rocketq:0.2.0",
                                                         "brokers": {"groups": 2}}})
    env.sts.lost.add("demo-broker-0-0")
    # Several timer passes happen while paused; none may touch the children.
    await env.wait_for(lambda: env.get("Pod", "demo-broker-0-0") is None, "the master pod to vanish")
    await asyncio.sleep(1.0)
    assert len(env.operator_requests("PATCH", "StatefulSet")) == writes
    assert env.get("StatefulSet", "demo-broker-1") is None
    assert (env.get("ConfigMap", "demo-broker-0-config") or {})["data"]["masterOrdinal"] == "0"
    assert phase(env, "demo") == "Running"

    env.sts.lost.clear()
    await env.patch("RocketMQCluster", "demo", {"metadata": {"annotations": {
        "rocketq.io/pause-reconciliation": None}}})
    await env.wait_for(lambda: env.get("StatefulSet", "demo-broker-1"), "the paused change to be applied")
    await running(env, "demo")
    assert (env.condition("RocketMQCluster", "demo", "ReconciliationPaused") or {})["status"] == "False"


@pytest.mark.without_admission
async def test_invalid_spec_is_a_condition_not_a_crash(env: OperatorEnv) -> None:
    # The CRD's CEL rule refuses this on a real API server; on one without CEL the operator's
    # own check is what stands (test_the_emulated_api_server_refuses_what_the_crd_refuses).
    await env.create("RocketMQCluster", "odd", {"brokers": {"mode": "DLedger", "replicasPerGroup": 2}})
    await env.wait_for(lambda: phase(env, "odd") == "Failed", "the Failed phase")
    ready = env.condition("RocketMQCluster", "odd", "Ready")
    assert ready is not None and ready["status"] == "False" and ready["reason"] == "InvalidSpec"
    assert "DLedger needs an odd quorum" in ready["message"]
    assert env.names("StatefulSet") == set()

    await env.patch("RocketMQCluster", "odd", {"spec": {"brokers": {"mode": "MasterSlave", "replicasPerGroup": 3}}})
    status = await running(env, "odd")
    assert status["observedGeneration"] == 2
    assert env.names("Pod") >= {"odd-broker-0-0", "odd-broker-0-1", "odd-broker-0-2"}


@pytest.mark.without_admission
async def test_mode_change_on_a_running_cluster_is_refused(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    configmap = env.get("ConfigMap", "demo-broker-0-config")
    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"mode": "DLedger", "replicasPerGroup": 3,
                                                                     "groups": 2}}})
    # The store on disk does not fit another mode: the running group keeps its own.
    await env.wait_for(lambda: (env.condition("RocketMQCluster", "demo", "Degraded") or {}).get("reason")
                       == "ImmutableFieldChange", "ImmutableFieldChange")
    assert "demo-broker-0: spec.brokers.mode cannot change on a running group" in (
        env.condition("RocketMQCluster", "demo", "Degraded") or {})["message"]
    assert (env.get("ConfigMap", "demo-broker-0-config") or {})["data"] == (configmap or {})["data"]
    assert (env.get("StatefulSet", "demo-broker-0") or {})["spec"]["replicas"] == 2
    assert env.get("StatefulSet", "demo-broker-1") is None  # no group starts in another mode


async def test_manual_rolling_update_restarts_a_group_then_clears_the_annotation(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    await running(env, "demo")
    await env.patch("RocketMQCluster", "demo", {"metadata": {"annotations": {
        "rocketq.io/manual-rolling-update": "demo-broker-1"}}})
    await env.wait_for(lambda: "rocketq.io/manual-rolling-update" not in (
        env.get("RocketMQCluster", "demo") or {})["metadata"].get("annotations", {}), "the annotation to go")
    assert deleted_pods(env) == ["demo-broker-1-1", "demo-broker-1-0"]
    await env.wait_for(lambda: env.events("ManualRollingUpdateDone"), "a ManualRollingUpdateDone event")
    configmap = env.get("ConfigMap", "demo-broker-1-config")
    assert configmap is not None and "rocketq.io/manual-roll-pods" not in configmap["metadata"]["annotations"]
    await running(env, "demo")


async def test_many_clusters_in_many_namespaces(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "alpha", {}, namespace="team-a")
    await env.create("RocketMQCluster", "alpha", {"nameServers": {"replicas": 1}}, namespace="team-b")
    def both_running() -> bool:
        return all(observed(env, "alpha", ns) and env.status("RocketMQCluster", "alpha", ns).get("phase") == "Running"
                   for ns in ("team-a", "team-b"))

    await env.wait_for(both_running, "alpha in team-a and in team-b to be Running")
    assert env.get("StatefulSet", "alpha-namesrv", "team-a")["spec"]["replicas"] == 2  # type: ignore[index]
    assert env.get("StatefulSet", "alpha-namesrv", "team-b")["spec"]["replicas"] == 1  # type: ignore[index]
    assert env.status("RocketMQCluster", "alpha", "team-b")["nameServers"]["addresses"] == (
        "alpha-namesrv-0.alpha-namesrv.team-b.svc:9876")


async def test_a_restarted_operator_resumes_without_touching_a_healthy_cluster(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 2}})
    await running(env, "demo")
    await env.close()
    writes = {method: len(env.operator_requests(method, kind)) for method in ("POST", "PATCH", "DELETE")
              for kind in ("StatefulSet", "ConfigMap", "Service", "PodDisruptionBudget", "Pod")}

    reads = len(env.operator_requests("GET", "StatefulSet"))
    again = OperatorEnv(env.server, fast_config(), admin=env.admin)
    await again.start()
    try:
        # Each pass reads every StatefulSet it applies; wait for several passes (resume + timer).
        await again.wait_for(lambda: len(again.operator_requests("GET", "StatefulSet")) >= reads + 15,
                             "the new operator to make a few passes")
        assert phase(again, "demo") == "Running"
        after = {method: len(again.operator_requests(method, kind)) for method in ("POST", "PATCH", "DELETE")
                 for kind in ("StatefulSet", "ConfigMap", "Service", "PodDisruptionBudget", "Pod")}
        assert after == writes
    finally:
        await again.close()



async def test_a_cluster_carries_no_finalizer_and_goes_while_the_operator_is_stopped(env: OperatorEnv) -> None:
    """Periodic passes come from the operator's ticker, not a kopf timer (which adds kopf's
    finalizer): deleting a cluster, or uninstalling a release that made one, never waits for
    the operator. Its children go by owner reference."""
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    passes = len(env.operator_requests("PATCH", "RocketMQCluster"))
    env.sts.unready.add("demo-broker-0-1")  # seen only by a periodic pass: nothing about demo changes
    await env.wait_for(lambda: phase(env, "demo") == "Degraded", "a periodic pass to see the unready pod")
    assert len(env.operator_requests("PATCH", "RocketMQCluster")) > passes
    body = env.get("RocketMQCluster", "demo")
    assert body is not None and not body["metadata"].get("finalizers")

    await env.close()
    await env.delete("RocketMQCluster", "demo")
    assert env.get("RocketMQCluster", "demo") is None


async def create_raw(env: OperatorEnv, kind: str, body: dict[str, Any]) -> None:
    response = await env.server.post(PATHS[kind].format(ns="mq"), json=body)
    assert response.status < 300, await response.text()


async def test_a_strangers_objects_with_a_childs_name_are_refused_not_adopted(env: OperatorEnv) -> None:
    """A StatefulSet nobody owns and a ConfigMap another owner holds, both named like children:
    the operator reports them (condition and one Event each) and never patches or owns them, so
    deleting the cluster cannot garbage-collect them."""
    stranger = {"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "demo-namesrv", "namespace": "mq", "labels": {"app": "mine"}},
                "spec": {"replicas": 0, "serviceName": "mine", "selector": {"matchLabels": {"app": "mine"}},
                         "template": {"metadata": {"labels": {"app": "mine"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    owned_elsewhere = {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "demo-broker-0-config", "namespace": "mq", "ownerReferences": [
                           {"apiVersion": "v1", "kind": "ConfigMap", "name": "theirs", "uid": "u-1"}]},
                       "data": {"theirs": "1"}}
    await create_raw(env, "StatefulSet", stranger)
    await create_raw(env, "ConfigMap", owned_elsewhere)
    await env.create("RocketMQCluster", "demo", {})

    def degraded() -> dict[str, Any] | None:
        condition = env.condition("RocketMQCluster", "demo", "Degraded")
        return condition if condition and condition["status"] == "True" else None

    condition = await env.wait_for(degraded, "the name conflicts to be reported")
    assert condition["reason"] == "NameConflict"
    assert "StatefulSet mq/demo-namesrv already exists and has no owner" in condition["message"]
    assert "ConfigMap mq/demo-broker-0-config already exists and belongs to ConfigMap 'theirs'" in condition["message"]
    assert phase(env, "demo") == "Degraded"
    ready = env.condition("RocketMQCluster", "demo", "Ready")
    assert ready is not None and ready["status"] == "False" and ready["reason"] == "NameConflict"
    await asyncio.sleep(1.0)  # several periodic passes
    messages = sorted(e["message"].split(" already")[0] for e in env.events("NameConflict"))
    assert messages == ["ConfigMap mq/demo-broker-0-config", "StatefulSet mq/demo-namesrv"], "one Event each"

    live = env.get("StatefulSet", "demo-namesrv")
    assert live is not None and "ownerReferences" not in live["metadata"]
    assert live["spec"]["serviceName"] == "mine" and live["metadata"]["labels"] == {"app": "mine"}
    config = env.get("ConfigMap", "demo-broker-0-config")
    assert config is not None and config["data"] == {"theirs": "1"}
    assert [r["name"] for r in config["metadata"]["ownerReferences"]] == ["theirs"]
    assert "demo-namesrv" not in [p.rsplit("/", 1)[1] for p in env.operator_requests("PATCH", "StatefulSet")]


async def test_a_topic_whose_brokers_are_unreachable_says_why_it_stays_and_can_be_released(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    await env.create("RocketMQTopic", "orders", {"clusterRef": "demo"})
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("phase") == "Ready", "the topic Ready")
    master = names.broker_address("demo", "mq", 0, 0)
    env.admin.down.add(master)

    await env.delete("RocketMQTopic", "orders")
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("phase") == "Deleting", "phase Deleting")
    ready = env.condition("RocketMQTopic", "orders", "Ready")
    assert ready is not None and ready["status"] == "False" and ready["reason"] == "DeletionBlocked"
    assert f"{master} does not answer" in ready["message"] and "rocketq.io/skip-broker-cleanup=true" in ready["message"]
    await asyncio.sleep(1.0)  # several retries
    assert len(env.events("DeletionBlocked")) == 1, "told once, not on every retry"
    assert env.get("RocketMQTopic", "orders") is not None

    skip = {"rocketq.io/skip-broker-cleanup": "true"}
    await env.patch("RocketMQTopic", "orders", {"metadata": {"annotations": skip}})
    await env.wait_for(lambda: env.get("RocketMQTopic", "orders") is None, "the annotation to release the topic")
    assert env.events("BrokerCleanupSkipped")
    assert "orders" in env.admin.topics[master], "nothing was removed from the unreachable broker"


async def test_the_finalizer_an_older_operator_put_on_a_cluster_is_removed(env: OperatorEnv) -> None:
    await create_raw(env, "RocketMQCluster", {
        "apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster",
        "metadata": {"name": "demo", "namespace": "mq", "finalizers": ["rocketq.io/finalizer"]}, "spec": {}})
    await env.wait_for(lambda: not (env.get("RocketMQCluster", "demo") or {})["metadata"].get("finalizers"),
                       "kopf to drop the finalizer no handler needs any more")


async def test_the_emulated_api_server_refuses_what_the_crd_refuses(env: OperatorEnv) -> None:
    """The harness admits rocketq.io writes as kube-apiserver does: schema and CEL on create,
    transition rules on update; everything the other tests (and the operator) write passes."""
    body = {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster",
            "metadata": {"name": "odd", "namespace": "mq"},
            "spec": {"brokers": {"mode": "DLedger", "replicasPerGroup": 2}}}
    response = await env.server.post(PATHS["RocketMQCluster"].format(ns="mq"), json=body)
    assert response.status == 422 and "DLedger needs an odd quorum" in await response.text()
    await env.create("RocketMQCluster", "demo", {})
    await running(env, "demo")
    response = await env.server.patch(f"{PATHS['RocketMQCluster'].format(ns='mq')}/demo",
                                      json={"spec": {"storage": {"type": "EmptyDir"}}})
    assert response.status == 422 and "storage.type is immutable" in await response.text()


@pytest.mark.without_admission
async def test_an_invalid_group_is_a_condition_where_the_api_server_lets_it_in(env: OperatorEnv) -> None:
    await env.create("RocketMQConsumerGroup", "bad-group", {"clusterRef": "demo", "groupName": "has.dot"})
    await env.wait_for(lambda: env.status("RocketMQConsumerGroup", "bad-group").get("phase") == "Failed",
                       "the invalid group to fail")
    ready = env.condition("RocketMQConsumerGroup", "bad-group", "Ready")
    assert ready is not None and ready["reason"] == "InvalidSpec" and "has.dot" in ready["message"]

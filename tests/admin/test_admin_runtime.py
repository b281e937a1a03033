"""``rocketq admin`` commands of ``rocketq.cli.adminruntime`` against a real name server and two
real brokers (``conftest.cluster``): write permissions, queryMsgByOffset, producer/consumer
clients, statistics, runtime broker config."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from admin_processes import Cluster
from test_admin_integration import commit, create_topic, eventually, run, run_json, send

from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.settings import ConsumeFromWhere
from rocketq.protocol.message import MessageExt


def route_perms(cluster: Cluster, topic: str) -> dict[str, int]:
    return {q["brokerName"]: q["perm"] for q in run_json(cluster, "topicRoute", "-t", topic)["queueDatas"]}


def test_wipe_and_add_write_perm_change_only_the_name_servers_routes(cluster: Cluster) -> None:
    create_topic(cluster, "AdmWipe", 2)
    wiped = run(cluster, "wipeWritePerm", "-b", "broker-a").stdout
    assert f"wipe write perm of broker[broker-a] in name server[{cluster.namesrv_addr}] OK" in wiped
    assert route_perms(cluster, "AdmWipe") == {"broker-a": 4, "broker-b": 6}
    added = run_json(cluster, "addWritePerm", "-b", "broker-a")
    assert added["addTopicCount"][cluster.namesrv_addr] >= 1
    assert route_perms(cluster, "AdmWipe") == {"broker-a": 6, "broker-b": 6}


def test_update_topic_perm_on_one_master_and_on_a_cluster(cluster: Cluster) -> None:
    create_topic(cluster, "AdmPerm", 2)
    addr = cluster.brokers["broker-a"].addr
    text = run(cluster, "updateTopicPerm", "-t", "AdmPerm", "-b", addr, "-p", "4").stdout
    assert f"update topic perm from 6 to 4 in {addr} success." in text
    eventually(lambda: route_perms(cluster, "AdmPerm") == {"broker-a": 4, "broker-b": 6})
    again = run(cluster, "updateTopicPerm", "-t", "AdmPerm", "-b", addr, "-p", "4").stdout
    assert "new perm equals to the old one!" in again
    both = run_json(cluster, "updateTopicPerm", "-t", "AdmPerm", "-c", "DefaultCluster", "-p", "6")
    assert sorted(c["oldPerm"] for c in both) == [4, 6] and all(c["changed"] for c in both)
    eventually(lambda: route_perms(cluster, "AdmPerm") == {"broker-a": 6, "broker-b": 6})
    route = run_json(cluster, "topicRoute", "-t", "AdmPerm")
    queues = {q["brokerName"]: q["readQueueNums"] for q in route["queueDatas"]}
    assert queues == {"broker-a": 2, "broker-b": 2}  # the queue counts are kept
    refused = run(cluster, "updateTopicPerm", "-t", "AdmPerm", "-b", "127.0.0.1:1", "-p", "4", code=2)
    assert "not a master" in refused.output


def test_query_msg_by_offset(cluster: Cluster) -> None:
    create_topic(cluster, "AdmByOffset", 1)
    send(cluster, "AdmByOffset", "first", "-b", "broker-b", "-i", "0")
    second = send(cluster, "AdmByOffset", "second", "-b", "broker-b", "-i", "0")
    found = run_json(cluster, "queryMsgByOffset", "-t", "AdmByOffset", "-b", "broker-b", "-i", "0", "-o", "1")
    assert (found["offsetMsgId"], found["queueOffset"]) == (second["offsetMsgId"], 1)
    text = run(cluster, "queryMsgByOffset", "-t", "AdmByOffset", "-b", "broker-b", "-i", "0", "-o", "0").stdout
    assert "first" in text
    missing = run(cluster, "queryMsgByOffset", "-t", "AdmByOffset", "-b", "broker-b", "-i", "0", "-o", "5", code=1)
    assert "no message at offset 5" in missing.output


async def in_thread(cluster: Cluster, *args: str, code: int = 0) -> str:
    """A command's output, run off the event loop (the command runs its own)."""
    return (await asyncio.to_thread(run, cluster, *args, code=code)).output


async def test_producer_connection_lists_the_groups_producers(cluster: Cluster) -> None:
    await asyncio.to_thread(create_topic, cluster, "AdmProducers", 1)
    async with Producer("AdmPG", namesrv_addr=cluster.namesrv_addr, instance_name="adm-producer") as producer:
        await producer.send(Message("AdmProducers", b"x"))  # the first send heartbeats at once
        assert producer.client_id is not None
        listed = orjson.loads(await in_thread(cluster, "producerConnection", "-g", "AdmPG", "-t", "AdmProducers",
                                              "--json"))
        assert [c["clientId"] for c in listed["connectionSet"]] == [producer.client_id]
        assert listed["connectionSet"][0]["language"] == "PYTHON"
        text = await in_thread(cluster, "producerConnection", "-g", "AdmPG", "-t", "AdmProducers")
        assert producer.client_id in text
    missing = await in_thread(cluster, "producerConnection", "-g", "NoSuchPG", "-t", "AdmProducers", code=1)
    assert "the producer group[NoSuchPG] not exist" in missing


async def test_consumer_status_asks_the_consumer_through_the_broker(cluster: Cluster) -> None:
    await asyncio.to_thread(create_topic, cluster, "AdmStatus", 2)

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("AdmStatusCG", namesrv_addr=cluster.namesrv_addr, instance_name="adm-status",
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, rebalance_interval=1000,
                            consume_thread_max=7)
    consumer.subscribe("AdmStatus", "TagA || TagB")
    consumer.register_listener(listener)
    async with consumer:
        assert consumer.client_id is not None
        client_id = consumer.client_id

        async def assigned() -> dict[str, Any]:
            for _ in range(300):
                one = orjson.loads(await in_thread(cluster, "consumerStatus", "-g", "AdmStatusCG", "-i", client_id,
                                                   "--json"))
                if len([q for q in one["mqTable"] if q["topic"] == "AdmStatus"]) == 4:  # 2 queues x 2 brokers
                    return dict(one)
                await asyncio.sleep(0.1)
            raise AssertionError("the consumer never reported its four queues")

        one = await assigned()
        assert one["properties"]["consumeThreadMax"] == "7"
        assert one["properties"]["PROP_CONSUMEORDERLY"] == "false"
        assert ("AdmStatus", "TagA || TagB") in {(s["topic"], s["subString"]) for s in one["subscriptions"]}
        summary = await in_thread(cluster, "consumerStatus", "-g", "AdmStatusCG")
        assert client_id in summary and "Same subscription in the same group of consumer" in summary
        detail = await in_thread(cluster, "consumerStatus", "-g", "AdmStatusCG", "-i", client_id)
        assert "#Consumer Properties#" in detail and "AdmStatus" in detail
    gone = await in_thread(cluster, "consumerStatus", "-g", "AdmStatusCG", "-i", client_id, code=1)
    assert "not online" in gone


def test_update_broker_config_applies_runtime_keys_and_refuses_others_clearly(cluster: Cluster) -> None:
    addr = cluster.brokers["broker-b"].addr
    try:
        run(cluster, "updateBrokerConfig", "-b", addr, "-k", "autoCreateTopicEnable", "-v", "false")
        refused = run(cluster, "sendMessage", "-t", "AdmNeverCreated", "-p", "x", "-b", "broker-b", code=1)
        assert "TOPIC_NOT_EXIST" in refused.output  # the running broker acts on it at once
    finally:
        run(cluster, "updateBrokerConfig", "-b", addr, "-k", "autoCreateTopicEnable", "-v", "true")
    run(cluster, "updateBrokerConfig", "-b", addr, "-k", "fileReservedTime", "-v", "48")
    assert run_json(cluster, "getBrokerConfig", "-b", addr)[addr]["fileReservedTime"] == "48"
    at_start = run(cluster, "updateBrokerConfig", "-b", addr, "-k", "listenPort", "-v", "1", code=1).output
    assert "listenPort: read only at broker start" in at_start and "autoCreateTopicEnable" in at_start
    unknown = run(cluster, "updateBrokerConfig", "-b", addr, "-k", "noSuchKey", "-v", "1", code=1).output
    assert "unknown broker config key(s): noSuchKey" in unknown
    blacklisted = run(cluster, "updateBrokerConfig", "-b", addr, "-k", "brokerConfigPath", "-v", "/x", code=1).output
    assert "NO_PERMISSION" in blacklisted and "black list" in blacklisted
    bad = run(cluster, "updateBrokerConfig", "-b", addr, "-k", "defaultTopicQueueNums", "-v", "0", code=1).output
    assert "must be positive" in bad


def test_stats_all_lists_each_topic_and_group_with_its_backlog(cluster: Cluster) -> None:
    create_topic(cluster, "AdmStats", 1)
    create_topic(cluster, "AdmStatsIdle", 1)
    for body in ("a", "b", "c"):
        send(cluster, "AdmStats", body, "-b", "broker-a", "-i", "0")
    commit(cluster, "AdmStatsCG", "AdmStats", "broker-a", 0, 1)
    rows = {(r["topic"], r["consumerGroup"]): r for r in run_json(cluster, "statsAll")}
    assert rows[("AdmStats", "AdmStatsCG")]["accumulation"] == 2
    assert rows[("AdmStatsIdle", "")]["accumulation"] == 0
    assert not any(topic.startswith(("%RETRY%", "%DLQ%")) for topic, _ in rows)
    one = run_json(cluster, "statsAll", "-t", "AdmStats")
    # the broker samples its counters every 10 s: the sends may or may not be counted yet
    assert [(r["consumerGroup"], r["inMsg24Hour"] in (0, 3)) for r in one] == [("AdmStatsCG", True)]
    assert run_json(cluster, "statsAll", "-t", "AdmStatsIdle", "-a") == []
    text = run(cluster, "statsAll", "-t", "AdmStats").stdout
    assert text.splitlines()[0].split()[:3] == ["#Topic", "#Consumer", "Group"], text

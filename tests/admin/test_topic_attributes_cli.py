"""RocketMQ 5 topic attributes and orderly groups through ``rocketq admin`` and a real broker:
``updateTopic -a +message.type=...`` stored in topics.json and read back with GET_TOPIC_CONFIG,
RocketMQ's refusals, and ``updateSubGroup -o`` read back with GET_SUBSCRIPTIONGROUP_CONFIG."""

from __future__ import annotations

import asyncio

from admin_processes import Cluster
from test_admin_integration import eventually, run

from rocketq.client import wire
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig, TopicConfig
from rocketq.protocol.topicattributes import MessageType
from rocketq.remoting.client import RemotingClient
from rocketq.store import configjournal

TIMEOUT_S = 5.0


async def _topic_config(addr: str, topic: str) -> TopicConfig | None:
    rc = RemotingClient()
    try:
        return await wire.get_topic_config(rc, addr, topic, TIMEOUT_S)
    finally:
        await rc.close()


async def _group_config(addr: str, group: str) -> SubscriptionGroupConfig:
    rc = RemotingClient()
    try:
        return await wire.get_group_config(rc, addr, group, TIMEOUT_S)
    finally:
        await rc.close()


def test_update_topic_sets_changes_and_refuses_message_types_as_rocketmq(cluster: Cluster) -> None:
    broker = cluster.brokers["broker-a"]
    out = run(cluster, "updateTopic", "-b", broker.addr, "-t", "AttrTopic", "-r", "2", "-w", "2",
              "-a", "+message.type=FIFO").output
    assert "attributes={+message.type=FIFO}" in out
    config = asyncio.run(_topic_config(broker.addr, "AttrTopic"))
    assert config is not None and config.message_type is MessageType.FIFO
    topics = configjournal.JournaledFile(broker.log.parent / "broker-a" / "config" / "topics.json",
                                         "topicConfigTable", dict)
    stored = topics.read()  # topics.json with its journal replayed, as a restarting broker reads it
    assert stored is not None and stored["topicConfigTable"]["AttrTopic"]["attributes"] == {"message.type": "FIFO"}

    run(cluster, "updateTopic", "-b", broker.addr, "-t", "AttrTopic", "-r", "4", "-w", "4")  # no -a: kept
    config = asyncio.run(_topic_config(broker.addr, "AttrTopic"))
    assert config is not None and config.message_type is MessageType.FIFO and config.write_queue_nums == 4
    run(cluster, "updateTopic", "-b", broker.addr, "-t", "AttrTopic", "-a", "+message.type=DELAY")
    config = asyncio.run(_topic_config(broker.addr, "AttrTopic"))
    assert config is not None and config.message_type is MessageType.DELAY
    shown = eventually(lambda: run(cluster, "topicStatus", "-t", "AttrTopic").output)  # once routed
    assert "broker-a attributes: message.type=DELAY" in shown

    refused = [(["-t", "AttrTopic", "-a", "+message.type=MIXED"], "MIXED message type is not supported"),
               (["-t", "AttrTopic", "-a", "+queue.type=BatchCQ"], "unchangeable"),
               (["-t", "AttrNew", "-a", "+color=red"], "unsupported key"),
               (["-t", "AttrNew", "-a", "+message.type=LOUD"], "value is not in set")]
    for args, reason in refused:
        result = run(cluster, "updateTopic", "-b", broker.addr, *args, code=1)
        assert reason in result.output, result.output
    assert run(cluster, "updateTopic", "-b", broker.addr, "-t", "AttrNew", "-a", "message.type=FIFO",
               code=2).output.count("add/alter attribute format is wrong") == 1
    assert asyncio.run(_topic_config(broker.addr, "AttrNew")) is None


def test_update_sub_group_sets_consume_message_orderly(cluster: Cluster) -> None:
    broker = cluster.brokers["broker-a"]
    run(cluster, "updateSubGroup", "-b", broker.addr, "-g", "attr-orderly", "-o", "true")
    assert asyncio.run(_group_config(broker.addr, "attr-orderly")).consume_message_orderly
    run(cluster, "updateSubGroup", "-b", broker.addr, "-g", "attr-orderly")
    assert not asyncio.run(_group_config(broker.addr, "attr-orderly")).consume_message_orderly

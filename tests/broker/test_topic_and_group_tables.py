"""The broker's topic and group tables: loading what Java or an older rocketq wrote, rules, stamps."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import orjson
import pytest

from rocketq.broker.groups import GroupError, SubscriptionGroupManager, validate_group_name
from rocketq.broker.topics import TopicConfigManager, TopicError, validate_topic_name
from rocketq.protocol.sharedbodies import DataVersion, SubscriptionGroupConfig, TopicConfig

JAVA_TOPICS = {
    "dataVersion": {"counter": 5, "timestamp": 1700000000000},
    "topicConfigTable": {
        "TopicTest": {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
                      "topicName": "TopicTest", "topicSysFlag": 0, "writeQueueNums": 4},
        "Broken": {"topicName": "Broken", "perm": "rw"},
    },
}


def test_topics_json_loads_readable_topics_and_keeps_the_stamp(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    path.write_bytes(orjson.dumps(JAVA_TOPICS))
    table = TopicConfigManager(path)
    table.load()
    assert table.table == {"TopicTest": TopicConfig("TopicTest", 4, 4, 6)}
    assert table.data_version == DataVersion(1700000000000, 5)


def test_an_unreadable_stamp_or_wrapper_does_not_stop_the_broker(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    path.write_bytes(orjson.dumps({**JAVA_TOPICS, "dataVersion": {"counter": "x"}}))
    table = TopicConfigManager(path)
    table.load()
    assert "TopicTest" in table.table and table.data_version.counter == 0
    path.write_bytes(b"[1, 2]")
    other = TopicConfigManager(path)
    other.load()
    assert other.table == {}


def test_changes_are_validated_stamped_and_persisted(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    changes: list[Collection[str] | None] = []
    table = TopicConfigManager(path, on_change=changes.append)
    before = table.data_version
    table.upsert(TopicConfig("T", 0, 0))  # a broker keeps a topic with no queues
    assert table.data_version.counter == before.counter + 1 and changes == [["T"]]
    assert orjson.loads(path.read_bytes())["topicConfigTable"]["T"]["readQueueNums"] == 0
    with pytest.raises(TopicError, match="illegal characters"):
        table.upsert(TopicConfig("bad topic"))
    with pytest.raises(TopicError, match="perm 9"):
        table.upsert(TopicConfig("T", perm=9))
    with pytest.raises(TopicError, match="blank"):
        validate_topic_name("")
    reloaded = TopicConfigManager(path)
    reloaded.load()
    assert reloaded.table == table.table and reloaded.data_version == table.data_version


def test_registration_narrows_perm_and_all_topic_config_does_not(tmp_path: Path) -> None:
    table = TopicConfigManager(tmp_path / "topics.json")
    table.upsert(TopicConfig("T", 2, 2))
    assert table.serialize_wrapper(4)["topicConfigTable"]["T"]["perm"] == 4
    assert table.to_json()["topicConfigTable"]["T"] == TopicConfig("T", 2, 2).to_json()
    assert table.to_json()["dataVersion"] == table.data_version.to_json()


def test_subscription_groups_load_validate_and_persist(tmp_path: Path) -> None:
    path = tmp_path / "subscriptionGroup.json"
    path.write_bytes(orjson.dumps({"subscriptionGroupTable": {
        "g": {"groupName": "g", "retryMaxTimes": 3}, "bad": {"groupName": "bad", "consumeEnable": "yes"}}}))
    groups = SubscriptionGroupManager(path)
    groups.load()
    assert groups.table == {"g": SubscriptionGroupConfig("g", retry_max_times=3)}
    with pytest.raises(GroupError, match="retryQueueNums 65"):
        groups.upsert(SubscriptionGroupConfig("g", retry_queue_nums=65))
    with pytest.raises(GroupError, match="illegal characters"):
        validate_group_name("g!")
    created = groups.find_or_create("new", auto_create=True)
    assert created == SubscriptionGroupConfig("new")
    reloaded = SubscriptionGroupManager(path)
    reloaded.load()
    assert reloaded.table == groups.table and reloaded.data_version == groups.data_version

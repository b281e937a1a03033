"""GET_ALL_TOPIC_CONFIG / GET_ALL_SUBSCRIPTIONGROUP_CONFIG paged as RocketMQ 5's split metadata:
an asker walking the pages the way MQClientAPIImpl.getAllTopicConfig does gets every entry once,
a 4.x asker (no paging fields) gets the whole table, and a change mid-walk restarts it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rocketq.broker import metadatapages
from rocketq.broker.adminops import AdminHandlers
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig, TopicConfig

TOPICS = 2 * metadatapages.SPLIT_METADATA_SIZE + 7


def handlers(tmp_path: Path) -> tuple[AdminHandlers, TopicConfigManager, SubscriptionGroupManager]:
    topics = TopicConfigManager(tmp_path / "topics.json")
    groups = SubscriptionGroupManager(tmp_path / "subscriptionGroup.json")
    admin = AdminHandlers(
        store=None, topics=topics, groups=groups, offsets=None, clients=None,  # type: ignore[arg-type]
        broker_name="b", cluster="c", config_view=dict, update_config=lambda _: None,
        runtime_info=dict, register_now=None,  # type: ignore[arg-type]
    )
    return admin, topics, groups


async def ask(admin: AdminHandlers, code: int, ext: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    handler = admin.handlers()[code]
    response = await handler(None, RemotingCommand(code=code, ext_fields=ext))  # type: ignore[arg-type]
    assert response.code == ResponseCode.SUCCESS
    return orjson.loads(response.body), response.ext_fields


async def walk_topics(admin: AdminHandlers, max_num: int, between_pages: Any = None) -> tuple[dict[str, Any], int]:
    """RocketMQ 5's client loop: next seq = entries seen, restart when the DataVersion moves."""
    seq, version, seen, pages = 0, None, {}, 0
    while True:
        ext = {"topicSeq": str(seq), "maxTopicNum": str(max_num),
               "dataVersion": orjson.dumps(version).decode() if version else ""}
        body, header = await ask(admin, RequestCode.GET_ALL_TOPIC_CONFIG, ext)
        pages += 1
        assert len(body["topicConfigTable"]) <= min(max_num, metadatapages.SPLIT_METADATA_SIZE)
        seen.update(body["topicConfigTable"])
        seq += len(body["topicConfigTable"])
        if version is None:
            version = body["dataVersion"]
        elif version != body["dataVersion"]:
            version, seq, seen = body["dataVersion"], 0, {}
            continue
        if seq >= int(header["totalTopicNum"]):
            return seen, pages
        if between_pages is not None:
            between_pages()
            between_pages = None


async def test_paging_walks_every_topic_once_at_most_the_page_size(tmp_path: Path) -> None:
    admin, topics, _ = handlers(tmp_path)
    for i in range(TOPICS):
        topics.upsert(TopicConfig(f"T{i:05d}", 8, 8))
    seen, pages = await walk_topics(admin, max_num=10_000)  # capped at SPLIT_METADATA_SIZE
    assert set(seen) == set(topics.table)
    assert pages == 3
    assert seen["T00042"] == topics.table["T00042"].to_json()


async def test_a_change_between_pages_restarts_the_walk_and_loses_nothing(tmp_path: Path) -> None:
    admin, topics, _ = handlers(tmp_path)
    for i in range(50):
        topics.upsert(TopicConfig(f"T{i:02d}", 8, 8))
    seen, _ = await walk_topics(admin, max_num=20, between_pages=lambda: topics.upsert(TopicConfig("A-first", 1, 1)))
    assert set(seen) == set(topics.table)  # "A-first" sorts before the pages already read


async def test_an_asker_without_paging_fields_gets_the_whole_table_and_the_total(tmp_path: Path) -> None:
    admin, topics, _ = handlers(tmp_path)
    for i in range(TOPICS):
        topics.upsert(TopicConfig(f"T{i}", 8, 8))
    body, header = await ask(admin, RequestCode.GET_ALL_TOPIC_CONFIG, {})
    assert len(body["topicConfigTable"]) == TOPICS
    assert header["totalTopicNum"] == str(TOPICS)


async def test_a_stale_or_unreadable_version_restarts_at_zero(tmp_path: Path) -> None:
    admin, topics, _ = handlers(tmp_path)
    for i in range(30):
        topics.upsert(TopicConfig(f"T{i:02d}", 8, 8))
    for version in ("", "not json", '{"timestamp": 1, "counter": 1}'):
        body, _ = await ask(admin, RequestCode.GET_ALL_TOPIC_CONFIG,
                            {"topicSeq": "20", "maxTopicNum": "5", "dataVersion": version})
        assert list(body["topicConfigTable"]) == [f"T{i:02d}" for i in range(5)]
    current = orjson.dumps(topics.data_version.to_json()).decode()
    body, _ = await ask(admin, RequestCode.GET_ALL_TOPIC_CONFIG,
                        {"topicSeq": "20", "maxTopicNum": "5", "dataVersion": current})
    assert list(body["topicConfigTable"]) == [f"T{i:02d}" for i in range(20, 25)]


async def test_group_listing_pages_the_same_way(tmp_path: Path) -> None:
    admin, _, groups = handlers(tmp_path)
    for i in range(25):
        groups.upsert(SubscriptionGroupConfig(f"g{i:02d}"))
    seq, version, seen = 0, "", set()
    while True:
        body, header = await ask(admin, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                                 {"groupSeq": str(seq), "maxGroupNum": "10", "dataVersion": version})
        version = orjson.dumps(body["dataVersion"]).decode()
        seen.update(body["subscriptionGroupTable"])
        seq += len(body["subscriptionGroupTable"])
        if seq >= int(header["totalGroupNum"]):
            break
    assert seen == set(groups.table)
    whole, _ = await ask(admin, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {})
    assert set(whole["subscriptionGroupTable"]) == set(groups.table)

"""The slave's metadata sync (``rocketq.ha.metasync``) against a scripted master: what one round
asks for and what it writes. The master here is a fake remoting client answering by request code:
with fixed bodies (a RocketMQ 4.x master, which does not page), or with the broker's own admin
handlers over real tables (a rocketq master, which pages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from rocketq.broker import schedule
from rocketq.broker.adminops import AdminHandlers
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.ha import metasync
from rocketq.ha.metasync import SlaveSynchronizer, SyncError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig, TopicConfig

MASTER = "10.0.0.1:10911"


class ScriptedMaster:
    """Answers each request code with the body the test set; records the codes asked, in order."""

    def __init__(self, bodies: dict[int, bytes]) -> None:
        self.bodies = bodies
        self.asked: list[int] = []

    async def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
        assert addr == MASTER
        self.asked.append(request.code)
        return request.response(ResponseCode.SUCCESS, body=self.bodies[request.code])


def synchronizer(tmp_path: Path, delay_body: bytes) -> tuple[SlaveSynchronizer, ScriptedMaster]:
    topics = TopicConfigManager(tmp_path / "topics.json")
    groups = SubscriptionGroupManager(tmp_path / "subscriptionGroup.json")
    offsets = ConsumerOffsetManager(tmp_path / "consumerOffset.json")
    master = ScriptedMaster({
        RequestCode.GET_ALL_TOPIC_CONFIG: orjson.dumps(topics.to_json()),
        RequestCode.GET_ALL_CONSUMER_OFFSET: b'{"offsetTable":{}}',
        RequestCode.GET_ALL_DELAY_OFFSET: delay_body,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: orjson.dumps(groups.to_json()),
    })
    client: Any = master
    sync = SlaveSynchronizer(client, lambda: MASTER, lambda: "10.0.0.2:10911", topics, groups, offsets,
                             lambda: None, delay_offset_path=tmp_path / schedule.DELAY_OFFSET_FILE)
    return sync, master


async def test_a_round_copies_the_masters_delay_offsets_in_rocketmqs_order(tmp_path: Path) -> None:
    # a Java master's fastjson writes the Integer keys bare
    sync, master = synchronizer(tmp_path, b'{"offsetTable":{1:5,3:7}}')
    await sync.sync_all(MASTER)
    assert master.asked == [RequestCode.GET_ALL_TOPIC_CONFIG, RequestCode.GET_ALL_CONSUMER_OFFSET,
                            RequestCode.GET_ALL_DELAY_OFFSET, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG]
    path = tmp_path / schedule.DELAY_OFFSET_FILE
    assert schedule.load_delay_offsets(path) == {1: 5, 3: 7}
    master.bodies[RequestCode.GET_ALL_DELAY_OFFSET] = b'{"offsetTable":{"1":6,"3":7}}'
    await sync.sync_all(MASTER)
    assert schedule.load_delay_offsets(path) == {1: 6, 3: 7}


async def test_an_unreadable_delay_offset_answer_leaves_the_file_alone(tmp_path: Path) -> None:
    sync, master = synchronizer(tmp_path, b'{"offsetTable":{"1":4}}')
    await sync.sync_all(MASTER)
    master.bodies[RequestCode.GET_ALL_DELAY_OFFSET] = b'{"offsetTable":{"1":"many"}}'
    with pytest.raises(SyncError):
        await sync.sync_all(MASTER)
    assert schedule.load_delay_offsets(tmp_path / schedule.DELAY_OFFSET_FILE) == {1: 4}


class HandlerMaster:
    """A rocketq master: GET_ALL_* answered by the broker's own admin handlers over real tables;
    records (code, answer body bytes) of every request."""

    def __init__(self, root: Path) -> None:
        root.mkdir()
        self.topics = TopicConfigManager(root / "topics.json")
        self.groups = SubscriptionGroupManager(root / "subscriptionGroup.json")
        self.offsets = ConsumerOffsetManager(root / "consumerOffset.json")
        nothing: Any = None

        async def registered() -> None:
            return None

        self.handlers = AdminHandlers(nothing, self.topics, self.groups, self.offsets, nothing, "broker-a",
                                      "DefaultCluster", dict, lambda _updates: None, dict, registered).handlers()
        self.asked: list[tuple[int, int]] = []

    async def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
        assert addr == MASTER
        if request.code == RequestCode.GET_ALL_DELAY_OFFSET:
            response = request.response(ResponseCode.SUCCESS, body=b'{"offsetTable":{"1":0}}')
        else:
            answer = await self.handlers[request.code](cast(Any, None), request)
            assert answer is not None
            response = answer
        self.asked.append((request.code, len(response.body)))
        return response


def paged_pair(tmp_path: Path, topics: int) -> tuple[SlaveSynchronizer, HandlerMaster, TopicConfigManager,
                                                     SubscriptionGroupManager]:
    master = HandlerMaster(tmp_path / "master")
    for i in range(topics):
        master.topics.upsert(TopicConfig(f"Topic{i:05d}", 8, 8))
    for i in range(topics // 10):
        master.groups.upsert(SubscriptionGroupConfig(f"group-{i}"))
    master.offsets.commit("group-1", "Topic00001", 0, 42)
    topics_here = TopicConfigManager(tmp_path / "topics.json")
    groups_here = SubscriptionGroupManager(tmp_path / "subscriptionGroup.json")
    client: Any = master
    sync = SlaveSynchronizer(client, lambda: MASTER, lambda: "10.0.0.2:10911", topics_here, groups_here,
                             ConsumerOffsetManager(tmp_path / "consumerOffset.json"), lambda: None,
                             delay_offset_path=tmp_path / schedule.DELAY_OFFSET_FILE)
    return sync, master, topics_here, groups_here


async def test_a_rocketq_master_is_read_in_pages_and_an_unchanged_table_is_not_sent_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metasync, "PAGE_SIZE", 100)
    sync, master, topics, groups = paged_pair(tmp_path, 450)
    await sync.sync_all(MASTER)
    assert topics.table == master.topics.table and topics.data_version == master.topics.data_version
    assert groups.table == master.groups.table
    topic_pages = [size for code, size in master.asked if code == RequestCode.GET_ALL_TOPIC_CONFIG]
    assert len(topic_pages) == 1 + 5  # the probe of one topic, then 449 topics in pages of 100
    assert sync.last_round.requests == len(master.asked)

    master.asked.clear()
    await sync.sync_all(MASTER)  # nothing changed: one probe per table
    assert [code for code, _ in master.asked] == [
        RequestCode.GET_ALL_TOPIC_CONFIG, RequestCode.GET_ALL_CONSUMER_OFFSET, RequestCode.GET_ALL_DELAY_OFFSET,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG]
    probe = next(size for code, size in master.asked if code == RequestCode.GET_ALL_TOPIC_CONFIG)
    assert probe < max(topic_pages) / 50
    assert sync.runtime_info()["metadataSyncLastTopicBytes"] == str(probe)
    assert sync.runtime_info()["metadataSyncLastRequests"] == "4"

    master.topics.upsert(TopicConfig("NewTopic", 4, 4))
    master.topics.delete(["Topic00007"])
    await sync.sync_all(MASTER)
    assert "NewTopic" in topics.table and "Topic00007" not in topics.table
    assert topics.table == master.topics.table and topics.data_version == master.topics.data_version


async def test_unchanged_consumer_offsets_are_not_rewritten(tmp_path: Path) -> None:
    sync, master, _topics, _groups = paged_pair(tmp_path, 3)
    await sync.sync_all(MASTER)
    path = tmp_path / "consumerOffset.json"
    path.unlink()
    await sync.sync_all(MASTER)
    assert not path.exists(), "an unchanged offset table was written again"
    master.offsets.commit("group-1", "Topic00001", 0, 43)
    await sync.sync_all(MASTER)
    assert orjson.loads(path.read_bytes())["offsetTable"]["Topic00001@group-1"] == {"0": 43}

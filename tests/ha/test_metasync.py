"""The slave's metadata sync (``rocketq.ha.metasync``) against a scripted master: what one round
asks for and what it writes. The master here is a fake remoting client answering by request code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from rocketq.broker import schedule
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.ha.metasync import SlaveSynchronizer, SyncError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand

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

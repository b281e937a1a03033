"""CONSUMER_SEND_MSG_BACK against a real store: retry topic via SCHEDULE_TOPIC_XXXX with the
right level, DLQ past the maximum, the properties that travel with a retried message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.sendback import SendBackHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import codes, messageproperties, messagetypes, storedrecords
from rocketq.protocol.codes import SCHEDULE_TOPIC, RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig
from rocketq.store.messagestore import MessageStore, PutRequest
from rocketq.store.settings import StoreSettings

GROUP = "cg"


class Env:
    def __init__(self, store: MessageStore, tmp: Path, behaviour: BrokerBehaviour) -> None:
        self.store = store
        self.topics = TopicConfigManager(tmp / "topics.json")
        self.groups = SubscriptionGroupManager(tmp / "groups.json")
        self.perm = codes.PERM_READ_WRITE
        self.registered = 0
        self.handlers = SendBackHandlers(store, self.topics, self.groups, behaviour, lambda: self.perm, 18,
                                         self._registered)

    async def _registered(self) -> None:
        self.registered += 1

    async def stored(self, reconsume_times: int = 0, **props: str) -> int:
        result = await self.store.put(PutRequest("Orders", 0, b"payload", 3, {"TAGS": "t", "UNIQ_KEY": "U1", **props},
                                                 born_timestamp=5, reconsume_times=reconsume_times))
        return result.wrote_offset

    async def send_back(self, offset: int, delay_level: int = 0, version: int = 399, **extra: Any) -> RemotingCommand:
        header = ConsumerSendMsgBackRequestHeader(offset=offset, group=GROUP, delay_level=delay_level, **extra)
        request = RemotingCommand(code=RequestCode.CONSUMER_SEND_MSG_BACK, ext_fields=header.to_ext(), version=version)
        return await self.handlers.send_back(None, request)  # type: ignore[arg-type]

    def only(self, topic: str, queue_id: int) -> messagetypes.MessageExt:
        got = self.store.get_messages(topic, queue_id, 0, 10)
        assert got.message_count == 1, (topic, queue_id, got.status)
        return storedrecords.decode_stored_record(got.buffers[0])


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    settings = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                             mapped_file_size_consume_queue=2000)
    store = MessageStore(settings, ("127.0.0.1", 10911))
    store.open()
    await store.start()
    try:
        yield Env(store, tmp_path, BrokerBehaviour())
    finally:
        await store.close()


async def test_first_retry_waits_at_level_three_in_the_schedule_topic(env: Env) -> None:
    offset = await env.stored()
    answer = await env.send_back(offset)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    retry = env.topics.get(codes.retry_topic(GROUP))
    assert retry is not None and retry.perm == codes.PERM_READ_WRITE and env.registered == 1
    assert env.groups.get(GROUP) is not None  # autoCreateSubscriptionGroup
    rec = env.only(SCHEDULE_TOPIC, 2)
    assert rec.reconsume_times == 1 and rec.body == b"payload" and rec.flag == 3 and rec.born_timestamp == 5
    p = rec.properties
    assert (p[messageproperties.DELAY], p[messageproperties.REAL_TOPIC], p[messageproperties.REAL_QID]) == (
        "3", codes.retry_topic(GROUP), "0")
    assert p[messageproperties.RETRY_TOPIC] == "Orders" and p[messageproperties.UNIQ_KEY] == "U1"
    original = storedrecords.decode_stored_record(env.store.look_message_by_offset(offset) or b"")
    assert p[messageproperties.ORIGIN_MESSAGE_ID] == original.offset_msg_id and p[messageproperties.WAIT] == "false"


async def test_later_retries_use_three_plus_reconsume_times_or_the_requested_level(env: Env) -> None:
    answer = await env.send_back(await env.stored(reconsume_times=4, RETRY_TOPIC="First", ORIGIN_MESSAGE_ID="O"))
    assert answer.code == ResponseCode.SUCCESS
    rec = env.only(SCHEDULE_TOPIC, 6)  # level 7
    assert rec.reconsume_times == 5
    assert rec.properties[messageproperties.RETRY_TOPIC] == "First"
    assert rec.properties[messageproperties.ORIGIN_MESSAGE_ID] == "O"
    await env.send_back(await env.stored(), delay_level=1)
    assert env.only(SCHEDULE_TOPIC, 0).properties[messageproperties.DELAY] == "1"
    await env.send_back(await env.stored(reconsume_times=15), delay_level=0)
    assert env.only(SCHEDULE_TOPIC, 17).properties[messageproperties.DELAY] == "18"  # 3 + 15 clamped


async def test_past_the_group_maximum_the_message_goes_to_the_dlq(env: Env) -> None:
    env.groups.upsert(SubscriptionGroupConfig(group_name=GROUP, retry_max_times=2))
    answer = await env.send_back(await env.stored(reconsume_times=2))
    assert answer.code == ResponseCode.SUCCESS
    dlq = env.topics.get(codes.dlq_topic(GROUP))
    assert dlq is not None and dlq.perm == codes.PERM_READ_WRITE and dlq.read_queue_nums == 1
    rec = env.only(codes.dlq_topic(GROUP), 0)
    assert rec.reconsume_times == 3 and rec.properties[messageproperties.DELAY] == "0"
    assert rec.properties[messageproperties.RETRY_TOPIC] == "Orders"
    assert env.store.get_max_offset(SCHEDULE_TOPIC, 2) == 0
    assert env.handlers.sent_to_dlq == 1


async def test_the_header_maximum_counts_only_from_new_clients(env: Env) -> None:
    await env.send_back(await env.stored(reconsume_times=1), max_reconsume_times=1, version=120)
    assert env.store.get_max_offset(codes.dlq_topic(GROUP), 0) == 0  # old client: group's 16 applies
    await env.send_back(await env.stored(reconsume_times=1), max_reconsume_times=1, version=399)
    assert env.store.get_max_offset(codes.dlq_topic(GROUP), 0) == 1


async def test_a_negative_delay_level_goes_straight_to_the_dlq(env: Env) -> None:
    await env.send_back(await env.stored(), delay_level=-1)
    assert env.only(codes.dlq_topic(GROUP), 0).reconsume_times == 1


async def test_refusals(env: Env, tmp_path: Path) -> None:
    missing = await env.send_back(123_456)
    assert (missing.code, missing.remark) == (ResponseCode.SYSTEM_ERROR, "look message by offset failed, 123456")
    env.perm = codes.PERM_READ_WRITE & ~int(codes.Perm.WRITE)
    assert (await env.send_back(await env.stored())).code == ResponseCode.NO_PERMISSION
    strict = Env(env.store, tmp_path / "strict", BrokerBehaviour(auto_create_subscription_group=False))
    assert (await strict.send_back(0)).code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    env.perm = codes.PERM_READ_WRITE
    env.groups.upsert(SubscriptionGroupConfig(group_name=GROUP, retry_queue_nums=0))
    dropped = await env.send_back(await env.stored())
    assert dropped.code == ResponseCode.SUCCESS and env.store.get_max_offset(SCHEDULE_TOPIC, 2) == 0


def retry_send(reconsume_times: int | None, max_times: int | None = None) -> SendMessageRequestHeader:
    return SendMessageRequestHeader(producer_group="inner", topic=codes.retry_topic(GROUP), queue_id=0,
                                    properties="TAGS\x01t\x02DELAY\x015\x02", reconsume_times=reconsume_times,
                                    max_reconsume_times=max_times)


async def test_a_direct_send_to_the_retry_topic_stays_there_below_the_maximum(env: Env) -> None:
    request = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2)
    header = retry_send(15)
    assert await env.handlers.route_retry_send(request, header) is header
    assert await env.handlers.route_retry_send(request, retry_send(None)) is not None


async def test_a_direct_send_to_the_retry_topic_past_the_maximum_goes_to_the_dlq(env: Env) -> None:
    request = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2)
    routed = await env.handlers.route_retry_send(request, retry_send(3, max_times=3))
    assert isinstance(routed, SendMessageRequestHeader)
    assert (routed.topic, routed.queue_id) == (codes.dlq_topic(GROUP), 0)
    assert messageproperties.decode_properties(routed.properties or "") == {"TAGS": "t", "DELAY": "0"}
    assert env.topics.get(codes.dlq_topic(GROUP)) is not None and env.registered == 1
    no_auto_create = BrokerBehaviour(auto_create_subscription_group=False)
    strict = Env(env.store, env.store.settings.root_dir / "strict", no_auto_create)
    refused = await strict.handlers.route_retry_send(request, retry_send(0))
    assert isinstance(refused, RemotingCommand) and refused.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST

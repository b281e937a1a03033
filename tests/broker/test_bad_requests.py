"""Malformed client input against an in-process broker: every bad request gets a specific
RocketMQ code and at most a one-line warning, never a handler traceback (``log.exception`` in
the dispatcher), and the broker keeps serving."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketq.broker.server import BrokerServer
from rocketq.broker.settings import BrokerBehaviour, BrokerIdentity
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.store.settings import StoreSettings

TOPIC = "BadInputTopic"


@dataclass
class Running:
    server: BrokerServer
    client: RemotingClient

    async def ask(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
        return await self.client.invoke(self.server.address, RemotingCommand(code=code, ext_fields=ext or {},
                                                                             body=body), 5)

    async def send(self, body: bytes = b"x", **overrides: str) -> RemotingCommand:
        fields = {"a": "pg", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}
        return await self.ask(RequestCode.SEND_MESSAGE_V2, {**fields, **overrides}, body)


@pytest.fixture
async def broker(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Running]:
    identity = BrokerIdentity(listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1", metrics_port=0,
                              namesrv_addr="", broker_cluster_name="BadCluster")
    store = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                          mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=64, max_index_num=400)
    server = BrokerServer(identity, BrokerBehaviour(), store)
    client = RemotingClient()
    await server.start()
    try:
        with caplog.at_level(logging.WARNING):
            yield Running(server, client)
        tracebacks = [r for r in caplog.records if r.exc_info is not None or r.levelno >= logging.ERROR]
        assert not tracebacks, [r.getMessage() for r in tracebacks]
    finally:
        await client.close()
        await server.close()


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage()]


# --- SEND -------------------------------------------------------------------------------------


@pytest.mark.parametrize("properties", ["TAGS\x01a\x01b\x02", "KEYS\x01k\x01\x02TAGS\x01t\x02"])
async def test_a_separator_inside_a_property_value_is_message_illegal(
        broker: Running, caplog: pytest.LogCaptureFixture, properties: str) -> None:
    answer = await broker.send(i=properties)
    assert answer.code == ResponseCode.MESSAGE_ILLEGAL, answer.remark
    assert _warnings(caplog, "refused, MESSAGE_ILLEGAL")
    assert (await broker.send(i="TAGS\x01fine\x02")).code == ResponseCode.SUCCESS


async def test_unit_mode_and_batch_as_digits_are_read_as_java_reads_them(broker: Running) -> None:
    answer = await broker.send(k="0", m="0")
    assert answer.code == ResponseCode.SUCCESS, answer.remark


async def test_refused_sends_are_logged_once_per_producer_with_group_topic_and_reason(
        broker: Running, caplog: pytest.LogCaptureFixture) -> None:
    for _ in range(3):
        assert (await broker.send(b="bad topic!")).code == ResponseCode.SYSTEM_ERROR
    lines = _warnings(caplog, "refused")
    assert len(lines) == 1
    assert "producer group pg" in lines[0] and "bad topic!" in lines[0] and "illegal characters" in lines[0]


async def test_a_malformed_send_header_is_system_error_with_a_warning(
        broker: Running, caplog: pytest.LogCaptureFixture) -> None:
    answer = await broker.send(e="x")
    assert answer.code == ResponseCode.SYSTEM_ERROR and "queueId" in (answer.remark or "")
    assert _warnings(caplog, "queueId")


# --- admin: the broker's own topics -----------------------------------------------------------


def _create(topic: str, perm: str = "6") -> dict[str, str]:
    return {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": perm,
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}


@pytest.mark.parametrize("topic", ["TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRACE_TOPIC", "rmq_sys_anything",
                                   "OFFSET_MOVED_EVENT", "BadCluster", "broker-a"])
async def test_system_topics_can_be_neither_rewritten_nor_deleted(
        broker: Running, caplog: pytest.LogCaptureFixture, topic: str) -> None:
    before = broker.server.topics.get(topic)
    created = await broker.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, _create(topic))
    deleted = await broker.ask(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic})
    for answer in (created, deleted):
        assert answer.code == ResponseCode.SYSTEM_ERROR
        assert answer.remark == f"The topic[{topic}] is conflict with system topic."
    assert broker.server.topics.get(topic) == before
    assert _warnings(caplog, "conflict with system topic")


async def test_tbw102_keeps_its_inherit_bit_so_auto_creation_keeps_working(broker: Running) -> None:
    assert (await broker.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("TBW102", "6"))).code \
        == ResponseCode.SYSTEM_ERROR
    assert (await broker.send(b="AutoCreatedLater")).code == ResponseCode.SUCCESS


async def test_ordinary_topics_are_still_created_and_deleted(broker: Running) -> None:
    assert (await broker.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Plain"))).code == ResponseCode.SUCCESS
    assert broker.server.topics.get("Plain") is not None
    assert (await broker.ask(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "Plain"})).code == ResponseCode.SUCCESS
    assert broker.server.topics.get("Plain") is None
    illegal = await broker.ask(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "bad topic"})
    assert illegal.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in (illegal.remark or "")


# --- PULL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("group", ["bad group", "g" * 256, "tab\tgroup"])
async def test_a_pull_for_a_group_no_group_may_be_named_is_subscription_group_not_exist(
        broker: Running, caplog: pytest.LogCaptureFixture, group: str) -> None:
    ext = {"consumerGroup": group, "topic": TOPIC, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
           "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"}
    answer = await broker.ask(RequestCode.PULL_MESSAGE, ext)
    assert answer.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, answer.remark
    assert _warnings(caplog, "pull from")


# --- every handler against mutated requests ------------------------------------------------------

_VALID: dict[str, str] = {
    "a": "pg", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0", "i": "TAGS\x01a\x02",
    "topic": TOPIC, "consumerGroup": "g", "group": "g", "producerGroup": "pg", "srcGroup": "g", "destGroup": "g2",
    "groupName": "g", "key": "k", "clientID": "c", "brokerName": "broker-a", "cluster": "BadCluster",
    "queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "maxNum": "10", "sysFlag": "0", "commitOffset": "0",
    "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "offset": "0", "timestamp": "0",
    "beginTimestamp": "0", "endTimestamp": "9999999999999", "readQueueNums": "4", "writeQueueNums": "4",
    "perm": "6", "isForce": "true", "properties": "TAGS\x01a\x02", "tranStateTableOffset": "0",
    "commitLogOffset": "0", "commitOrRollback": "8", "msgId": "0A000001000000000000000000000000",
}
_BAD_VALUES = ["", "x", "-1", "2147483647", "-9223372036854775808", "9999999999", "bad group", "a" * 300,
               "\x01\x02", "TAGS\x01a\x01b", "UNIQ_KEY\x01\x02", "TBW102", "%RETRY%g", "rmq_sys_x"]
_BAD_BODIES = [b"", b"\xff{", b"{}", b"[]", b"null", b'{"clientID":5}', b"x" * 64,
               b'{"groupName":"g","retryMaxTimes":"many"}', b"brokerPermission=x\n"]


async def test_no_mutated_request_ends_in_a_handler_traceback(broker: Running) -> None:
    """The fixture fails the test on any ERROR record or traceback the broker logs."""
    rnd = random.Random(20261124)
    for code in sorted(broker.server._handlers):
        for _ in range(6):
            ext = dict(_VALID)
            for name in rnd.sample(sorted(_VALID), rnd.randint(1, 3)):
                ext[name] = rnd.choice(_BAD_VALUES)
            answer = await broker.ask(code, ext, rnd.choice(_BAD_BODIES))
            assert isinstance(answer.code, int)
    assert (await broker.send(b="StillServing")).code == ResponseCode.SUCCESS

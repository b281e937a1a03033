"""HEART_BEAT on the broker: every official client's form registers its consumers, and a refused
heartbeat is answered SYSTEM_ERROR and logged once (per client and interval) with whose and why."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
import pytest

from rocketq.broker.clienthandlers import ClientHandlers
from rocketq.broker.clienttable import ClientManager
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand

CPP_CONSUMER = {"groupName": "cg", "consumeType": 1, "messageModel": 0, "consumeFromWhere": 5,
                "subscriptionDataSet": [{"topic": "T", "subString": "a||b", "subVersion": "1700000000000",
                                         "tagsSet": ["a", "b"], "codeSet": [97, 98]}]}


class Peer:
    remote_addr = "10.1.2.3:4567"
    closed = False


async def _nothing() -> None:
    return None


def _handlers(tmp: Path) -> tuple[ClientHandlers, ClientManager]:
    clients = ClientManager(lambda group, conns: None)
    handlers = ClientHandlers(None, TopicConfigManager(tmp / "topics.json"),  # type: ignore[arg-type]
                              SubscriptionGroupManager(tmp / "groups.json"),
                              ConsumerOffsetManager(tmp / "offsets.json"), clients, BrokerBehaviour(), _nothing)
    return handlers, clients


async def _heartbeat(handlers: ClientHandlers, body: dict[str, Any] | bytes) -> RemotingCommand:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    request = RemotingCommand(code=RequestCode.HEART_BEAT, body=raw, language="CPP")
    return await handlers.heartbeat(Peer(), request)  # type: ignore[arg-type]


async def test_a_cpp_heartbeat_registers_its_consumer_with_the_java_enum_names(tmp_path: Path) -> None:
    handlers, clients = _handlers(tmp_path)
    answer = await _heartbeat(handlers, {"clientID": "cpp@1", "consumerDataSet": [CPP_CONSUMER]})
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    info = clients.consumer_group("cg")
    assert info is not None and info.client_ids() == ["cpp@1"]
    assert (info.consume_type, info.message_model, info.consume_from_where) == (
        "CONSUME_PASSIVELY", "BROADCASTING", "CONSUME_FROM_TIMESTAMP")
    sub = clients.subscription("cg", "T")
    assert sub is not None and sub.sub_version == 1700000000000 and sub.tags_set == {"a", "b"}


async def test_a_refused_heartbeat_is_logged_once_with_client_group_and_reason(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    handlers, clients = _handlers(tmp_path)
    bad = {"clientID": "go@7", "consumerDataSet": [{**CPP_CONSUMER, "messageModel": 9}]}
    with caplog.at_level(logging.WARNING, logger="rocketq.broker.clienthandlers"):
        first = await _heartbeat(handlers, bad)
        second = await _heartbeat(handlers, bad)
    assert first.code == second.code == ResponseCode.SYSTEM_ERROR and "messageModel" in (first.remark or "")
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 1
    assert "go@7" in lines[0] and "group cg" in lines[0] and "messageModel" in lines[0]
    assert clients.consumer_group("cg") is None


async def test_an_illegal_group_refuses_the_whole_heartbeat(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    handlers, clients = _handlers(tmp_path)
    body = {"clientID": "c@1", "consumerDataSet": [{"groupName": "ok"}, {"groupName": "bad group"}]}
    with caplog.at_level(logging.WARNING, logger="rocketq.broker.clienthandlers"):
        answer = await _heartbeat(handlers, body)
    assert answer.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in (answer.remark or "")
    assert clients.consumer_group("ok") is None
    assert any("c@1" in r.getMessage() and "bad group" in r.getMessage() for r in caplog.records)


async def test_a_body_that_is_not_json_is_logged_under_the_peer_address(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    handlers, _clients = _handlers(tmp_path)
    with caplog.at_level(logging.WARNING, logger="rocketq.broker.clienthandlers"):
        answer = await _heartbeat(handlers, b"\x00garbage")
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert any("10.1.2.3:4567" in r.getMessage() and "not valid JSON" in r.getMessage() for r in caplog.records)


async def test_a_client_that_changes_its_id_each_time_still_gets_one_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    handlers, _clients = _handlers(tmp_path)
    with caplog.at_level(logging.WARNING, logger="rocketq.broker.clienthandlers"):
        for n in range(20):
            await _heartbeat(handlers, {"clientID": f"liar@{n}", "consumerDataSet": [{"groupName": "bad group"}]})
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1

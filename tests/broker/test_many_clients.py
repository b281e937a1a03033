"""Thousands of clients at the handler level: 5 000 connections in 1 000 groups heartbeat, ask
for their group's members and leave, and no per-client step walks every group; a group whose
members join together is told once per member, not once per join per member."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from rocketq.broker.clienthandlers import ClientHandlers
from rocketq.broker.clienttable import ClientManager, IdsChangedNotifier
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand

CLIENTS = 5000
GROUPS = 1000


class FakeConnection:
    def __init__(self, n: int) -> None:
        self.remote_addr = f"10.0.{n // 250}.{n % 250}:5000"
        self.closed = False
        self.notified: list[str] = []

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        self.notified.append(request.ext_fields["consumerGroup"])

    def abort(self) -> None:
        self.closed = True


class ScanCountingDict(dict[str, Any]):
    """A dict that counts walks over all of it (values/items/keys/iteration)."""

    scans = 0

    def values(self) -> Any:
        ScanCountingDict.scans += 1
        return super().values()

    def items(self) -> Any:
        ScanCountingDict.scans += 1
        return super().items()

    def __iter__(self) -> Any:
        ScanCountingDict.scans += 1
        return super().__iter__()


async def _nothing() -> None:
    return None


def _heartbeat(n: int) -> RemotingCommand:
    group = f"group-{n % GROUPS}"
    body = {"clientID": f"client-{n}", "producerDataSet": [{"groupName": f"pg-{n % GROUPS}"}],
            "consumerDataSet": [{"groupName": group, "consumeType": "CONSUME_PASSIVELY",
                                 "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                                 "subscriptionDataSet": [{"topic": f"T{n % GROUPS}", "subString": "*"}]}]}
    return RemotingCommand(code=RequestCode.HEART_BEAT, body=orjson.dumps(body))


async def test_heartbeats_member_lists_and_leaving_cost_the_change(tmp_path: Path) -> None:
    notifier = IdsChangedNotifier(lambda g: list(clients.consumers[g].channels) if g in clients.consumers else [],
                                  window=0.01)
    clients = ClientManager(notifier.changed)
    clients.consumers = ScanCountingDict()  # type: ignore[assignment]
    clients.producers = ScanCountingDict()  # type: ignore[assignment]
    handlers = ClientHandlers(None, TopicConfigManager(tmp_path / "topics.json"),  # type: ignore[arg-type]
                              SubscriptionGroupManager(tmp_path / "groups.json"),
                              ConsumerOffsetManager(tmp_path / "offsets.json"), clients, BrokerBehaviour(), _nothing)
    conns = [FakeConnection(n) for n in range(CLIENTS)]
    for _ in range(2):  # joining, then the periodic heartbeat of an unchanged membership
        for n, conn in enumerate(conns):
            answer = await handlers.heartbeat(conn, _heartbeat(n))  # type: ignore[arg-type]
            assert answer.code == ResponseCode.SUCCESS, answer.remark
        await asyncio.sleep(0.05)
    per_group = CLIENTS // GROUPS
    assert all(len(c.notified) == 1 for c in conns)  # one notice each, however many joined with it

    ask = RemotingCommand(code=RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext_fields={"consumerGroup": "group-7"})
    answer = await handlers.consumer_list(conns[7], ask)  # type: ignore[arg-type]
    assert len(orjson.loads(answer.body)["consumerIdList"]) == per_group

    clients.connection_closed(conns[7])  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    assert clients.consumer_ids("group-7") == sorted(f"client-{n}" for n in range(7 + GROUPS, CLIENTS, GROUPS))
    told = [c for c in conns if len(c.notified) == 2]
    assert {c.notified[-1] for c in told} == {"group-7"} and len(told) == per_group - 1
    assert "pg-7" in clients.producers and conns[7] not in clients.producers["pg-7"]
    assert clients.groups_consuming("T8") == ["group-8"]  # QUERY_TOPIC_CONSUME_BY_WHO, per topic listed
    assert ScanCountingDict.scans == 0  # no step above walked every group
    await notifier.close()

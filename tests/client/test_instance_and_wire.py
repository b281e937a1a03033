"""Client instance (ids, routes, rotation, heartbeats) and wire calls' error handling."""

from __future__ import annotations

import asyncio
import os

import pytest
from client_fakes import FakeCluster

from rocketq.client import heartbeats, wire
from rocketq.client.errors import BrokerError, ProtocolError, RouteError
from rocketq.client.instance import ClientInstance
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ClientSettings, ConsumeFromWhere, MessageModel
from rocketq.protocol import subscription
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingServer


def test_client_ids_are_ip_at_instance_and_unique_by_default() -> None:
    a = ClientInstance(ClientSettings(namesrv_addr="127.0.0.1:9876"))
    b = ClientInstance(ClientSettings(namesrv_addr="127.0.0.1:9876"))
    assert a.client_id.startswith(f"127.0.0.1@{os.getpid()}#") and a.client_id != b.client_id
    named = ClientInstance(ClientSettings(namesrv_addr="127.0.0.1:9876", instance_name="x", client_ip="10.1.2.3"))
    assert named.client_id == "10.1.2.3@x"


async def test_routes_are_cached_refreshed_and_kept_when_forgotten(cluster: FakeCluster) -> None:
    cluster.topic("T")
    inst = ClientInstance(ClientSettings(namesrv_addr=cluster.namesrv.addr))
    try:
        assert await inst.route("Missing") is None
        route = await inst.route("T")
        assert route is not None and await inst.route("T") is route
        assert cluster.namesrv.route_calls.count("T") == 1
        del cluster.namesrv.routes["T"]
        await inst.refresh_routes()
        assert inst.cached_route("T") is route
        assert inst.master_addr("broker-a") == cluster.brokers[0].addr
        assert inst.subscribe_addr("broker-a", 1) == (cluster.brokers[0].addr, False)
        assert inst.subscribe_addr("nope") is None
        with pytest.raises(RouteError):
            await inst.find_master(MessageQueue("Missing", "broker-z", 0))
    finally:
        await inst.close()
        await inst.close()


async def test_no_name_server_answering_is_a_route_error() -> None:
    inst = ClientInstance(ClientSettings(namesrv_addr="127.0.0.1:1;127.0.0.1:2", mq_client_api_timeout=500))
    try:
        with pytest.raises(RouteError, match="no name server answered"):
            await inst.route("T")
    finally:
        await inst.close()


async def test_producer_heartbeats_go_to_masters_consumer_heartbeats_to_all(cluster: FakeCluster) -> None:
    cluster.topic("T")
    cluster.namesrv.routes["T"]["brokerDatas"][0]["brokerAddrs"]["1"] = cluster.brokers[1].addr
    producer_side = ClientInstance(ClientSettings(namesrv_addr=cluster.namesrv.addr), producer_groups=["pg"])
    consumer_data = heartbeats.ConsumerData(
        "cg", heartbeats.ConsumeType.CONSUME_PASSIVELY, MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, (subscription.build("T", "*"),))
    consumer_side = ClientInstance(ClientSettings(namesrv_addr=cluster.namesrv.addr),
                                   consumer_data=lambda: consumer_data)
    try:
        for inst in (producer_side, consumer_side):
            await inst.update_route("T")
            await inst.heartbeat()
        assert producer_side.broker_addrs(masters_only=True) == sorted(b.addr for b in cluster.brokers)
        ids = [h["clientID"] for b in cluster.brokers for h in b.heartbeats]
        assert ids.count(producer_side.client_id) == 2
        # broker-b's address is also broker-a's slave: the consumer reaches it for both roles.
        assert ids.count(consumer_side.client_id) == 2
        await consumer_side.unregister(consumer_group="cg")
        assert {u.consumer_group for b in cluster.brokers for u in b.unregistered} == {"cg"}
    finally:
        await producer_side.close()
        await consumer_side.close()


async def test_periodic_timers_refresh_and_heartbeat(cluster: FakeCluster) -> None:
    cluster.topic("T")
    inst = ClientInstance(ClientSettings(namesrv_addr=cluster.namesrv.addr, poll_name_server_interval=20,
                                         heartbeat_broker_interval=20), producer_groups=["pg"])
    inst.start()
    try:
        await inst.update_route("T")
        for _ in range(500):
            if cluster.namesrv.route_calls.count("T") >= 3 and cluster.brokers[0].heartbeats:
                break
            await asyncio.sleep(0.01)
        assert cluster.namesrv.route_calls.count("T") >= 3 and cluster.brokers[0].heartbeats
    finally:
        await inst.close()


async def answering(code: int, response: RemotingCommand) -> tuple[RemotingServer, str]:
    async def handler(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(response.code, response.remark, response.ext_fields, response.body)

    server = RemotingServer({code: handler}, host="127.0.0.1")
    await server.start()
    return server, f"127.0.0.1:{server.port}"


@pytest.mark.parametrize("response, error", [
    (RemotingCommand(code=ResponseCode.SUCCESS, body=b"{not json"), ProtocolError),
    (RemotingCommand(code=ResponseCode.SYSTEM_ERROR, remark="boom"), BrokerError),
])
async def test_route_answers_that_are_not_routes(response: RemotingCommand, error: type[Exception]) -> None:
    server, addr = await answering(RequestCode.GET_ROUTEINFO_BY_TOPIC, response)
    inst = ClientInstance(ClientSettings(namesrv_addr=addr))
    try:
        with pytest.raises(error):
            await wire.get_route(inst.remoting, addr, "T", 2)
    finally:
        await inst.close()
        await server.close()


@pytest.mark.parametrize("body", [b"[]", b'{"consumerIdList": [1]}', b"\x00"])
async def test_bad_consumer_lists_are_protocol_errors(body: bytes) -> None:
    server, addr = await answering(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                   RemotingCommand(code=ResponseCode.SUCCESS, body=body))
    inst = ClientInstance(ClientSettings(namesrv_addr=addr))
    try:
        with pytest.raises(ProtocolError):
            await wire.get_consumer_list(inst.remoting, addr, "cg", 2)
    finally:
        await inst.close()
        await server.close()


async def test_send_answer_without_header_is_a_protocol_error() -> None:
    server, addr = await answering(RequestCode.SEND_MESSAGE_V2, RemotingCommand(code=ResponseCode.SUCCESS))
    inst = ClientInstance(ClientSettings(namesrv_addr=addr))
    try:
        with pytest.raises(ProtocolError, match="bad header"):
            await wire.send(inst.remoting, addr, SendMessageRequestHeader(producer_group="p", topic="T"), b"x", 2)
    finally:
        await inst.close()
        await server.close()


async def test_a_new_broker_is_greeted_at_once(cluster: FakeCluster) -> None:
    cluster.topic("T")
    inst = ClientInstance(ClientSettings(namesrv_addr=cluster.namesrv.addr), producer_groups=["pg"])
    inst.start()  # the heartbeat timer is 30 s away
    try:
        await inst.update_route("T")
        for _ in range(300):
            if all(b.heartbeats for b in cluster.brokers):
                break
            await asyncio.sleep(0.01)
        assert all(b.heartbeats[0]["producerDataSet"] == [{"groupName": "pg"}] for b in cluster.brokers)
    finally:
        await inst.close()

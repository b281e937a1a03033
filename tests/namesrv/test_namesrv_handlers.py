"""Every name-server request through a real RemotingServer and RemotingClient on 127.0.0.1."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from namesrv_fakes import V1, free_port, register, route_query

from rocketq.namesrv.server import NamesrvServer
from rocketq.namesrv.settings import NamesrvSettings
from rocketq.protocol import headers
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.sharedbodies import DataVersion, TopicConfig
from rocketq.remoting.client import RemotingClient


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Served:
    def __init__(self, server: NamesrvServer, clock: Clock) -> None:
        self.server = server
        self.clock = clock
        self.addr = f"127.0.0.1:{server.port}"
        self.client = RemotingClient()

    async def call(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
        return await self.client.invoke(self.addr, RemotingCommand(code=code, ext_fields=ext or {}, body=body), 3)

    async def send(self, cmd: RemotingCommand) -> RemotingCommand:
        return await self.client.invoke(self.addr, cmd, 3)


async def start(tmp_path: Path, **overrides: object) -> Served:
    values = dict(listen_port=0, bind_address="127.0.0.1", metrics_port=0, kv_config_path=str(tmp_path / "kv.json"))
    values.update(overrides)
    clock = Clock()
    server = NamesrvServer(NamesrvSettings(**values), clock=clock)  # type: ignore[arg-type]
    await server.start()
    return Served(server, clock)


@pytest.fixture
async def ns(tmp_path: Path) -> AsyncIterator[Served]:
    served = await start(tmp_path)
    yield served
    await served.client.close()
    await served.server.close()


async def test_register_then_route_cluster_and_topic_lists(ns: Served) -> None:
    resp = await ns.send(register(topics=("TopicTest", TopicConfig("Other", 2, 2, 4))))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert "masterAddr" not in resp.ext_fields

    route = await ns.send(route_query("TopicTest"))
    assert route.code == ResponseCode.SUCCESS
    assert orjson.loads(route.body) == {
        "queueDatas": [{"brokerName": "broker-a", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
                        "topicSysFlag": 0}],
        "brokerDatas": [{"cluster": "DefaultCluster", "brokerName": "broker-a",
                         "brokerAddrs": {"0": "127.0.0.1:10911"}}],
        "filterServerTable": {},
    }
    info = orjson.loads((await ns.call(RequestCode.GET_BROKER_CLUSTER_INFO)).body)
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
    assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {"0": "127.0.0.1:10911"}

    all_topics = orjson.loads((await ns.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body)
    assert all_topics == {"topicList": ["Other", "TopicTest"]}
    by_cluster = await ns.call(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"})
    assert orjson.loads(by_cluster.body) == {"topicList": ["Other", "TopicTest"]}
    system = orjson.loads((await ns.call(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)).body)
    assert system == {"topicList": ["DefaultCluster", "broker-a"], "brokerAddr": "127.0.0.1:10911"}


async def test_unknown_topic_is_topic_not_exist(ns: Served) -> None:
    resp = await ns.send(route_query("nope"))
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST == 17
    assert "nope" in (resp.remark or "")


async def test_slave_learns_master_and_ha_address(ns: Served) -> None:
    await ns.send(register())
    resp = await ns.send(register(broker_id=1, addr="127.0.0.2:10911", ha="127.0.0.2:10912"))
    answer = headers.RegisterBrokerResponseHeader.from_ext(resp.ext_fields)
    assert answer.master_addr == "127.0.0.1:10911"
    assert answer.ha_server_addr == "127.0.0.1:10912"


async def test_a_stale_master_is_answered_success_with_the_master_and_its_epoch_and_logged_once(
        ns: Served, caplog: pytest.LogCaptureFixture) -> None:
    """rocketqMasterEpoch (docs/ha.md, Fencing): the lower epoch from another address keeps no
    brokerId 0; a malformed epoch counts as absent, never as a failed registration."""
    def with_epoch(cmd: RemotingCommand, epoch: str) -> RemotingCommand:
        cmd.ext_fields["rocketqMasterEpoch"] = epoch
        return cmd

    await ns.send(with_epoch(register(), "0"))
    promoted = await ns.send(with_epoch(register(addr="127.0.0.2:10911", ha="127.0.0.2:10912"), "1"))
    assert "rocketqMasterEpoch" not in promoted.ext_fields
    for _ in range(3):
        stale = await ns.send(with_epoch(register(), "0"))
        assert stale.code == ResponseCode.SUCCESS
        assert stale.ext_fields["rocketqMasterEpoch"] == "1"
        assert stale.ext_fields["masterAddr"] == "127.0.0.2:10911"
        assert stale.ext_fields["haServerAddr"] == "127.0.0.2:10912"
    route = orjson.loads((await ns.send(route_query("TopicTest"))).body)
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.2:10911"}
    refusals = [r for r in caplog.records if "brokerId 0 stays with 127.0.0.2:10911" in r.getMessage()]
    assert len(refusals) == 1, "one line per stale broker and interval"
    malformed = await ns.send(with_epoch(register(), "-x"))
    assert malformed.code == ResponseCode.SUCCESS and "rocketqMasterEpoch" not in malformed.ext_fields
    route = orjson.loads((await ns.send(route_query("TopicTest"))).body)
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}, "no epoch: last wins"


async def test_compressed_registration_is_accepted(ns: Served) -> None:
    resp = await ns.send(register(topics=("Z",), compress=True))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert (await ns.send(route_query("Z"))).code == ResponseCode.SUCCESS


async def test_crc_mismatch_and_bad_bodies_are_refused_without_state_change(ns: Served) -> None:
    cmd = register()
    cmd.ext_fields["bodyCrc32"] = "12345"
    resp = await ns.send(cmd)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "crc32 not match" in (resp.remark or "")

    bad = register(crc=False)
    bad.body = b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"rw"}}}}'
    resp = await ns.send(bad)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "perm" in (resp.remark or "")

    resp = await ns.send(register(addr="not-an-address"))
    assert resp.code == ResponseCode.SYSTEM_ERROR and "brokerAddr" in (resp.remark or "")

    resp = await ns.call(RequestCode.REGISTER_BROKER, {"brokerName": "b"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "is null" in (resp.remark or "")
    assert ns.server.routes.broker_live_table == {}


async def test_unregister_removes_routes(ns: Served) -> None:
    await ns.send(register())
    ext = headers.UnregisterBrokerRequestHeader(
        broker_name="broker-a", broker_addr="127.0.0.1:10911", cluster_name="DefaultCluster", broker_id=0).to_ext()
    assert (await ns.call(RequestCode.UNREGISTER_BROKER, ext)).code == ResponseCode.SUCCESS
    assert (await ns.send(route_query("TopicTest"))).code == ResponseCode.TOPIC_NOT_EXIST


async def test_query_data_version_reports_change_and_refreshes_liveness(ns: Served) -> None:
    await ns.send(register())
    ext = headers.QueryDataVersionRequestHeader(
        broker_name="broker-a", broker_addr="127.0.0.1:10911", cluster_name="DefaultCluster", broker_id=0).to_ext()
    ns.clock.now += 50
    same = await ns.call(RequestCode.QUERY_DATA_VERSION, ext, orjson.dumps(V1.to_json()))
    assert headers.QueryDataVersionResponseHeader.from_ext(same.ext_fields).changed is False
    assert orjson.loads(same.body)["counter"] == 1
    assert ns.server.routes.broker_live_table["127.0.0.1:10911"].last_update == ns.clock.now

    newer = await ns.call(RequestCode.QUERY_DATA_VERSION, ext, orjson.dumps(DataVersion(1, 2).to_json()))
    assert headers.QueryDataVersionResponseHeader.from_ext(newer.ext_fields).changed is True
    bad = await ns.call(RequestCode.QUERY_DATA_VERSION, ext, b"[1]")
    assert bad.code == ResponseCode.SYSTEM_ERROR


async def test_wipe_write_perm_and_delete_topic(ns: Served) -> None:
    await ns.send(register(topics=("A", "B")))
    resp = await ns.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert headers.WipeWritePermResponseHeader.from_ext(resp.ext_fields).wipe_topic_count == 2
    assert orjson.loads((await ns.send(route_query("A"))).body)["queueDatas"][0]["perm"] == 4
    added = await ns.call(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert headers.AddWritePermResponseHeader.from_ext(added.ext_fields).add_topic_count == 2
    assert orjson.loads((await ns.send(route_query("A"))).body)["queueDatas"][0]["perm"] == 6

    assert (await ns.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "A"})).code == ResponseCode.SUCCESS
    assert (await ns.send(route_query("A"))).code == ResponseCode.TOPIC_NOT_EXIST
    assert (await ns.call(RequestCode.DELETE_TOPIC_IN_NAMESRV,
                          {"topic": "B", "clusterName": "Elsewhere"})).code == ResponseCode.SUCCESS
    assert (await ns.send(route_query("B"))).code == ResponseCode.SUCCESS


async def test_kv_config_requests(ns: Served) -> None:
    put = {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest", "value": "broker-a:4"}
    assert (await ns.call(RequestCode.PUT_KV_CONFIG, put)).code == ResponseCode.SUCCESS
    got = await ns.call(RequestCode.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest"})
    assert headers.KVConfigResponseHeader.from_ext(got.ext_fields).value == "broker-a:4"
    listed = await ns.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ORDER_TOPIC_CONFIG"})
    assert orjson.loads(listed.body) == {"table": {"TopicTest": "broker-a:4"}}

    # A registering broker is told the order config, as RocketMQ's name server does.
    reg = await ns.send(register())
    assert orjson.loads(reg.body) == {"table": {"TopicTest": "broker-a:4"}}
    # Without orderMessageEnable the route carries no orderTopicConf.
    assert "orderTopicConf" not in orjson.loads((await ns.send(route_query("TopicTest"))).body)

    gone = {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest"}
    assert (await ns.call(RequestCode.DELETE_KV_CONFIG, gone)).code == ResponseCode.SUCCESS
    missing = await ns.call(RequestCode.GET_KV_CONFIG, gone)
    assert missing.code == ResponseCode.QUERY_NOT_FOUND
    unknown = await ns.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "nothing"})
    assert unknown.code == ResponseCode.QUERY_NOT_FOUND
    no_value = await ns.call(RequestCode.PUT_KV_CONFIG, {"namespace": "a", "key": "b"})
    assert no_value.code == ResponseCode.SYSTEM_ERROR and "value" in (no_value.remark or "")
    empty_key = await ns.call(RequestCode.PUT_KV_CONFIG, {"namespace": "a", "key": "", "value": "v"})
    assert empty_key.code == ResponseCode.SYSTEM_ERROR


async def test_order_topic_conf_in_route_when_enabled(tmp_path: Path) -> None:
    ns = await start(tmp_path, order_message_enable=True)
    try:
        await ns.call(RequestCode.PUT_KV_CONFIG,
                      {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest", "value": "broker-a:4"})
        await ns.send(register())
        route = orjson.loads((await ns.send(route_query("TopicTest"))).body)
        assert route["orderTopicConf"] == "broker-a:4"
    finally:
        await ns.client.close()
        await ns.server.close()


async def test_kv_config_survives_restart(tmp_path: Path) -> None:
    first = await start(tmp_path)
    await first.call(RequestCode.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"})
    await first.client.close()
    await first.server.close()
    second = await start(tmp_path)
    try:
        got = await second.call(RequestCode.GET_KV_CONFIG, {"namespace": "n", "key": "k"})
        assert headers.KVConfigResponseHeader.from_ext(got.ext_fields).value == "v"
    finally:
        await second.client.close()
        await second.server.close()


async def test_unhandled_code_is_not_supported(ns: Served) -> None:
    assert (await ns.call(RequestCode.SEND_MESSAGE)).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def wait_until(condition: object, attempts: int = 500) -> None:
    """Poll a condition the event loop will make true soon; fail after many loop turns."""
    for _ in range(attempts):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never became true")


async def test_broker_connection_close_removes_its_routes_at_once(ns: Served) -> None:
    broker = RemotingClient()
    await broker.invoke(ns.addr, register(), 3)
    await ns.send(register(name="broker-b", addr="127.0.0.3:10911", topics=("Kept",)))
    await broker.close()
    await wait_until(lambda: "127.0.0.1:10911" not in ns.server.routes.broker_live_table)
    assert (await ns.send(route_query("TopicTest"))).code == ResponseCode.TOPIC_NOT_EXIST
    assert (await ns.send(route_query("Kept"))).code == ResponseCode.SUCCESS


async def test_scan_expires_silent_brokers_and_drops_their_connection(ns: Served) -> None:
    broker = RemotingClient()
    try:
        await broker.invoke(ns.addr, register(), 3)
        conn = await broker.connection(ns.addr)
        await broker.invoke(ns.addr, register(name="broker-b", addr="127.0.0.3:10911", topics=("Long",),
                                              heartbeat_timeout_ms=600_000), 3)
        ns.clock.now += 120
        assert ns.server.scan_not_active_brokers() == 0
        ns.clock.now += 1
        assert ns.server.scan_not_active_brokers() == 1
        assert (await ns.send(route_query("TopicTest"))).code == ResponseCode.TOPIC_NOT_EXIST
        await wait_until(lambda: conn.closed)
        # broker-b shared the aborted connection, so it went with it: as in RocketMQ, a closed
        # channel takes every registration made on it.
        assert (await ns.send(route_query("Long"))).code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        await broker.close()


async def test_metrics_and_health_endpoint(tmp_path: Path) -> None:
    ns = await start(tmp_path, metrics_port=free_port())
    try:
        await ns.send(register(topics=("A", "B")))
        await ns.send(route_query("missing"))
        port = ns.server.metrics_port
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                assert resp.status == 200
                text = await resp.text()
            async with http.get(f"http://127.0.0.1:{port}/health") as resp:
                assert resp.status == 200
        assert "rocketmq_namesrv_brokers 1.0" in text
        assert "rocketmq_namesrv_topics 2.0" in text
        assert 'rocketmq_namesrv_requests_total{code="SUCCESS",request="REGISTER_BROKER"} 1.0' in text
        assert 'rocketmq_namesrv_requests_total{code="TOPIC_NOT_EXIST",request="GET_ROUTEINFO_BY_TOPIC"} 1.0' in text
    finally:
        await ns.client.close()
        await ns.server.close()
        await ns.server.close()  # idempotent


topic_names = st.text(st.characters(codec="utf-8", exclude_characters=" "), min_size=0, max_size=6)
json_leaf = st.none() | st.booleans() | st.integers(-5, 2**40) | st.text(max_size=4)
topic_config = st.fixed_dictionaries({}, optional={
    "topicName": topic_names | json_leaf, "readQueueNums": json_leaf, "writeQueueNums": json_leaf,
    "perm": st.integers(-1, 9) | json_leaf, "topicSysFlag": json_leaf, "topicFilterType": json_leaf,
    "order": json_leaf})
register_bodies = st.one_of(
    st.binary(max_size=64),
    st.builds(lambda d: orjson.dumps(d), st.fixed_dictionaries({}, optional={
        "topicConfigSerializeWrapper": st.fixed_dictionaries({}, optional={
            "topicConfigTable": st.dictionaries(topic_names, topic_config | json_leaf, max_size=3),
            "dataVersion": st.fixed_dictionaries({}, optional={"counter": json_leaf, "timestamp": json_leaf})
            | json_leaf}) | json_leaf,
        "filterServerList": st.lists(json_leaf, max_size=2) | json_leaf})),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=register_bodies, compressed=st.booleans(), broker_id=st.integers(-2, 3))
async def test_random_register_bodies_never_crash_the_server(
    ns: Served, body: bytes, compressed: bool, broker_id: int
) -> None:
    cmd = register(broker_id=broker_id, crc=False, compress=compressed)
    cmd.body = zlib.compress(body) if compressed else body
    resp = await ns.send(cmd)
    assert resp.code in (ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR)
    if resp.code == ResponseCode.SYSTEM_ERROR:
        assert resp.remark
    info = await ns.call(RequestCode.GET_BROKER_CLUSTER_INFO)
    assert info.code == ResponseCode.SUCCESS
    for topic in ns.server.routes.all_topics():
        assert (await ns.send(route_query(topic))).code == ResponseCode.SUCCESS

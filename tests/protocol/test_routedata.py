"""TopicRouteData and ClusterInfo: what a name server writes, what Java's fastjson writes, and junk."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.admin import fastjson
from rocketq.protocol.routedata import BrokerData, ClusterInfo, QueueData, TopicRouteData
from rocketq.protocol.sharedbodies import BodyError, TopicConfig

ROUTE = TopicRouteData(
    queue_datas=(QueueData("broker-a", 4, 4, 6), QueueData("broker-b", 2, 2, 4)),
    broker_datas=(BrokerData("c", "broker-a", ((0, "10.0.0.1:10911"), (1, "10.0.0.2:10911"))),
                  BrokerData("c", "broker-b", ((1, "10.0.0.4:10911"),))),
    filter_servers=(("10.0.0.1:10911", ("10.0.0.9:1",)),),
)
JAVA_ROUTE = ('{"brokerDatas":[{"brokerAddrs":{1:"10.0.0.4:10911"},"brokerName":"broker-b","cluster":"c"},'
              '{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"c"}],'
              '"filterServerTable":{"10.0.0.1:10911":["10.0.0.9:1"]},"queueDatas":[{"brokerName":"broker-b",'
              '"perm":4,"readQueueNums":2,"topicSynFlag":0,"writeQueueNums":2},{"brokerName":"broker-a","perm":6,'
              '"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}')


def test_route_json_is_what_a_name_server_writes() -> None:
    assert ROUTE.to_json() == {
        "queueDatas": [
            {"brokerName": "broker-a", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicSysFlag": 0},
            {"brokerName": "broker-b", "readQueueNums": 2, "writeQueueNums": 2, "perm": 4, "topicSysFlag": 0}],
        "brokerDatas": [
            {"cluster": "c", "brokerName": "broker-a", "brokerAddrs": {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}},
            {"cluster": "c", "brokerName": "broker-b", "brokerAddrs": {"1": "10.0.0.4:10911"}}],
        "filterServerTable": {"10.0.0.1:10911": ["10.0.0.9:1"]},
    }
    assert "orderTopicConf" not in ROUTE.to_json()


def test_route_round_trips_through_standard_json_and_through_fastjson() -> None:
    assert TopicRouteData.from_json(orjson.loads(orjson.dumps(ROUTE.to_json()))) == ROUTE
    assert TopicRouteData.from_json(fastjson.loads(JAVA_ROUTE)) == ROUTE


def test_route_queries() -> None:
    b = ROUTE.broker("broker-b")
    assert b is not None and b.master_addr is None and b.any_addr == "10.0.0.4:10911"
    assert b.select_addr() == "10.0.0.4:10911" and b.broker_addrs == {1: "10.0.0.4:10911"}
    assert ROUTE.broker("nope") is None and ROUTE.queue_data("nope") is None
    queue = ROUTE.queue_data("broker-b")
    assert queue is not None and queue.readable and not queue.writeable
    assert ROUTE.master_addrs() == [("broker-a", "10.0.0.1:10911")]
    assert ROUTE.read_addrs() == [("broker-a", "10.0.0.1:10911"), ("broker-b", "10.0.0.4:10911")]
    assert list(ROUTE.addrs())[1] == ("broker-a", 1, "10.0.0.2:10911")
    assert BrokerData.of("c", "x", {2: "h:2", 0: "h:0"}).addrs == ((0, "h:0"), (2, "h:2"))
    assert QueueData.of("b", TopicConfig("T", 3, 5, 2, topic_sys_flag=1)) == QueueData("b", 3, 5, 2, 1)


def test_order_conf_and_absent_collections() -> None:
    route = TopicRouteData.from_json({"orderTopicConf": "broker-a:4", "queueDatas": None})
    assert route == TopicRouteData(order_topic_conf="broker-a:4")
    assert route.to_json()["orderTopicConf"] == "broker-a:4"
    assert TopicRouteData.from_json({"orderTopicConf": ""}).order_topic_conf is None


@pytest.mark.parametrize("raw, message", [
    ([], "must be a JSON object"),
    ({"queueDatas": {}}, "queueDatas must be a list"),
    ({"queueDatas": [{"brokerName": ""}]}, "brokerName must not be empty"),
    ({"queueDatas": [{"brokerName": "b"}]}, "readQueueNums is missing"),
    ({"queueDatas": [{"brokerName": "b", "readQueueNums": "four", "writeQueueNums": 4, "perm": 6}]}, "readQueueNums"),
    ({"queueDatas": [{"brokerName": "b", "readQueueNums": 99999999, "writeQueueNums": 4, "perm": 6}]}, "queues"),
    ({"queueDatas": [{"brokerName": "b", "readQueueNums": 1, "writeQueueNums": 1, "perm": True}]}, "perm"),
    ({"queueDatas": [{"brokerName": "b", "readQueueNums": 1, "writeQueueNums": 1, "perm": 9}]}, "perm 9"),
    ({"brokerDatas": [{"brokerName": "b", "brokerAddrs": {"x": "h:1"}}]}, "not a broker id"),
    ({"brokerDatas": [{"brokerName": "b", "brokerAddrs": {"0": 5}}]}, "host:port"),
    ({"brokerDatas": [{"brokerName": "b", "brokerAddrs": {"0": "nocolon"}}]}, "host:port"),
    ({"brokerDatas": [{"brokerName": "b", "cluster": [1]}]}, "cluster"),
    ({"orderTopicConf": 4}, "orderTopicConf"),
    ({"filterServerTable": {"h:1": [1]}}, "filterServerTable"),
])
def test_broken_routes_are_body_errors(raw: object, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        TopicRouteData.from_json(raw)


def test_cluster_info_both_ways() -> None:
    info = ClusterInfo.from_json({
        "brokerAddrTable": {
            "broker-b": {"cluster": "c1", "brokerName": "broker-b", "brokerAddrs": {"1": "h:3"}},
            "broker-a": {"cluster": "c1", "brokerName": "broker-a", "brokerAddrs": {"1": "h:2", "0": "h:1"}},
            "broker-c": {"cluster": "c2", "brokerName": "broker-c", "brokerAddrs": {0: "h:4"}},
        },
        "clusterAddrTable": {"c2": ["broker-c"], "c1": ["broker-b", "broker-a"]},
    })
    assert info.cluster_names() == ["c1", "c2"]
    assert info.master_addrs("c1") == ["h:1"] and info.master_addrs() == ["h:1", "h:4"]
    assert info.all_addrs("c1") == ["h:1", "h:2", "h:3"] and info.groups_of("nope") == []
    located = info.locate("h:3")
    assert located is not None and located.broker_name == "broker-b"
    assert info.to_json()["clusterAddrTable"] == {"c1": ["broker-a", "broker-b"], "c2": ["broker-c"]}
    assert ClusterInfo.from_json(info.to_json()) == info
    with pytest.raises(BodyError, match="clusterAddrTable"):
        ClusterInfo.from_json({"clusterAddrTable": {"c": "broker-a"}})


json_leaf = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)
queue_data = st.fixed_dictionaries({}, optional={
    "brokerName": json_leaf, "readQueueNums": json_leaf, "writeQueueNums": json_leaf, "perm": json_leaf})
broker_data = st.fixed_dictionaries({}, optional={
    "brokerName": json_leaf, "cluster": json_leaf, "brokerAddrs": st.dictionaries(json_leaf.map(str), json_leaf)})


@given(st.fixed_dictionaries({}, optional={
    "queueDatas": st.lists(queue_data | json_value, max_size=3),
    "brokerDatas": st.lists(broker_data | json_value, max_size=3),
    "orderTopicConf": json_leaf, "filterServerTable": json_value}))
def test_any_route_shape_parses_and_round_trips_or_raises_body_error(raw: dict[str, object]) -> None:
    try:
        route = TopicRouteData.from_json(json.loads(json.dumps(raw)))
    except BodyError:
        return
    assert all(q.broker_name and 0 <= q.perm <= 7 for q in route.queue_datas)
    assert TopicRouteData.from_json(route.to_json()) == route

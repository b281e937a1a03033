"""TopicRouteData parsing (standard JSON and fastjson's bare integer keys) and queue derivation."""

from __future__ import annotations

import contextlib

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.queues import MessageQueue
from rocketq.client.routes import RouteDataError, decode_route, quote_bare_int_keys

ROUTE = {
    "queueDatas": [
        {"brokerName": "broker-b", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6, "topicSysFlag": 0},
        {"brokerName": "broker-a", "readQueueNums": 4, "writeQueueNums": 3, "perm": 6, "topicSysFlag": 0},
        {"brokerName": "broker-c", "readQueueNums": 2, "writeQueueNums": 2, "perm": 4, "topicSysFlag": 0},
    ],
    "brokerDatas": [
        {"cluster": "c", "brokerName": "broker-a", "brokerAddrs": {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}},
        {"cluster": "c", "brokerName": "broker-b", "brokerAddrs": {"0": "10.0.0.3:10911"}},
        {"cluster": "c", "brokerName": "broker-c", "brokerAddrs": {"1": "10.0.0.4:10911"}},
    ],
}


def test_publish_queues_are_writable_queues_of_brokers_with_a_master_sorted_by_broker() -> None:
    route = decode_route(orjson.dumps(ROUTE))
    assert route.publish_queues("T") == (
        MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1), MessageQueue("T", "broker-a", 2),
        MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-b", 1),
    )


def test_subscribe_queues_include_read_only_and_slave_only_brokers() -> None:
    route = decode_route(orjson.dumps(ROUTE))
    subs = route.subscribe_queues("T")
    assert len(subs) == 8 and list(subs) == sorted(subs)
    assert MessageQueue("T", "broker-c", 1) in subs


def test_broker_lookup_and_address_selection() -> None:
    route = decode_route(orjson.dumps(ROUTE))
    a = route.broker("broker-a")
    assert a is not None and a.master_addr == "10.0.0.1:10911" and a.select_addr() == "10.0.0.1:10911"
    c = route.broker("broker-c")
    assert c is not None and c.master_addr is None and c.select_addr() == "10.0.0.4:10911"
    assert route.broker("nope") is None
    assert sorted(route.addrs())[0] == ("broker-a", 0, "10.0.0.1:10911")


def test_fastjson_bare_integer_keys_are_accepted() -> None:
    text = ('{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a",'
            '"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,'
            '"readQueueNums":4,"topicSynFlag":0,"writeQueueNums":4}]}')
    route = decode_route(text.encode())
    assert route.broker("broker-a").broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}  # type: ignore[union-attr]
    assert len(route.publish_queues("T")) == 4


def test_quoting_leaves_strings_and_values_alone() -> None:
    text = '{"a":"{1:2}", 7 : [1,2], "b":{ -3:"x,{4:5}"}, "c":1}'
    assert orjson.loads(quote_bare_int_keys(text)) == {"a": "{1:2}", "7": [1, 2], "b": {"-3": "x,{4:5}"}, "c": 1}
    assert quote_bare_int_keys('{"s":"\\"{1:"}') == '{"s":"\\"{1:"}'


def test_order_topic_conf_decides_publish_queues() -> None:
    route = decode_route(orjson.dumps({**ROUTE, "orderTopicConf": "broker-b:2;broker-a:1"}))
    assert route.publish_queues("T") == (
        MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-b", 1), MessageQueue("T", "broker-a", 0))


def test_auto_create_route_is_limited_to_the_default_queue_count() -> None:
    tbw = {"queueDatas": [{"brokerName": "broker-a", "readQueueNums": 8, "writeQueueNums": 8, "perm": 7}],
           "brokerDatas": [{"cluster": "c", "brokerName": "broker-a", "brokerAddrs": {"0": "h:1"}}]}
    limited = decode_route(orjson.dumps(tbw)).limited_to(4)
    assert [mq.queue_id for mq in limited.publish_queues("New")] == [0, 1, 2, 3]


@pytest.mark.parametrize("body", [
    b"not json", b"[]", b'{"queueDatas": {}}', b'{"queueDatas": [{"brokerName": ""}]}',
    b'{"queueDatas": [{"brokerName": "a", "readQueueNums": -1}]}',
    b'{"queueDatas": [{"brokerName": "a", "perm": true}]}',
    b'{"brokerDatas": [{"brokerName": "a", "brokerAddrs": {"x": "h:1"}}]}',
    b'{"brokerDatas": [{"brokerName": "a", "brokerAddrs": {"0": 5}}]}',
    b'{"queueDatas": [{"brokerName": "a", "readQueueNums": 99999999}]}',
    b'\xff\xfe',
])
def test_malformed_routes_are_refused_with_route_data_error(body: bytes) -> None:
    with pytest.raises(RouteDataError):
        decode_route(body)


@given(st.binary(max_size=200))
def test_random_bytes_give_a_route_or_route_data_error(body: bytes) -> None:
    with contextlib.suppress(RouteDataError):
        decode_route(body)


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=12))
def test_quoting_never_changes_valid_json(value: object) -> None:
    text = orjson.dumps(value).decode()
    assert orjson.loads(quote_bare_int_keys(text)) == value

"""Admin bodies in the shapes RocketMQ (Java, fastjson) and rocketq write them, and broken ones."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.admin import adminbodies, routes, stats
from rocketq.admin.adminbodies import GroupConfig, TopicConfig
from rocketq.admin.errors import ArgumentError, BodyError
from rocketq.admin.stats import MessageQueue

JAVA_ROUTE = (b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-b",'
              b'"cluster":"DefaultCluster"},{"brokerAddrs":{1:"10.0.0.4:10911"},"brokerName":"broker-a",'
              b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-b",'
              b'"perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-a",'
              b'"perm":4,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}')


def test_java_route_with_integer_broker_ids() -> None:
    route = routes.parse_topic_route("T", JAVA_ROUTE)
    assert [b.broker_name for b in route.broker_datas] == ["broker-a", "broker-b"]
    b = route.broker("broker-b")
    assert b is not None and b.master_addr == "10.0.0.1:10911" and b.addrs[1] == (1, "10.0.0.2:10911")
    a = route.broker("broker-a")
    assert a is not None and a.master_addr is None and a.any_addr == "10.0.0.4:10911"
    assert route.master_addrs() == [("broker-b", "10.0.0.1:10911")]
    assert route.read_addrs() == [("broker-a", "10.0.0.4:10911"), ("broker-b", "10.0.0.1:10911")]
    qa = route.queue_data("broker-a")
    assert qa is not None and qa.perm == 4 and qa.read_queue_nums == 2


def test_route_with_string_broker_ids_and_order_conf() -> None:
    body = orjson.dumps({"orderTopicConf": "broker-a:4", "queueDatas": [],
                         "brokerDatas": [{"cluster": "c", "brokerName": "broker-a", "brokerAddrs": {"0": "h:1"}}]})
    route = routes.parse_topic_route("T", body)
    assert route.order_topic_conf == "broker-a:4"
    assert route.broker_datas[0].master_addr == "h:1"


@pytest.mark.parametrize("body", [
    b"", b"[]", b'{"queueDatas":{}}', b'{"brokerDatas":[{"brokerName":"b","brokerAddrs":{"x":"h:1"}}]}',
    b'{"brokerDatas":[{"brokerName":"b","brokerAddrs":{"0":5}}]}', b'{"queueDatas":[{"brokerName":"b"}]}',
    b'{"queueDatas":[{"brokerName":"b","readQueueNums":"four","writeQueueNums":4,"perm":6}]}',
])
def test_broken_routes_are_body_errors(body: bytes) -> None:
    with pytest.raises(BodyError):
        routes.parse_topic_route("T", body)


def test_cluster_info() -> None:
    body = orjson.dumps({
        "brokerAddrTable": {
            "broker-a": {"cluster": "c1", "brokerName": "broker-a", "brokerAddrs": {"0": "h:1", "1": "h:2"}},
            "broker-b": {"cluster": "c1", "brokerName": "broker-b", "brokerAddrs": {"1": "h:3"}},
            "broker-c": {"cluster": "c2", "brokerName": "broker-c", "brokerAddrs": {"0": "h:4"}},
        },
        "clusterAddrTable": {"c2": ["broker-c"], "c1": ["broker-b", "broker-a"]},
    })
    info = routes.parse_cluster_info(body)
    assert info.cluster_names() == ["c1", "c2"]
    assert info.master_addrs("c1") == ["h:1"]
    assert info.master_addrs() == ["h:1", "h:4"]
    assert info.all_addrs("c1") == ["h:1", "h:2", "h:3"]
    assert info.groups_of("nope") == []
    located = info.locate("h:3")
    assert located is not None and located.broker_name == "broker-b"


def test_topic_stats_in_the_brokers_fastjson_form() -> None:
    body = (b'{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"minOffset":0,"maxOffset":5,'
            b'"lastUpdateTimestamp":7},{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":2,"maxOffset":3,'
            b'"lastUpdateTimestamp":0}}}')
    table = stats.parse_topic_stats(body)
    assert [mq.queue_id for mq, _ in table.offsets] == [0, 1]
    assert table.offsets[1][1] == stats.TopicOffset(0, 5, 7)
    assert table.total_messages == 6


def test_consume_stats_lag_and_merge() -> None:
    a = stats.parse_consume_stats(
        b'{"offsetTable":{{"brokerName":"a","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":4,'
        b'"lastTimestamp":1}},"consumeTps":1.5}')
    b = stats.parse_consume_stats(
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":3,"consumerOffset":0,'
        b'"lastTimestamp":0}},"consumeTps":0}')
    merged = stats.merge_consume_stats([b, a])
    assert merged.total_diff == 9
    assert merged.consume_tps == 1.5
    assert [mq.broker_name for mq, _ in merged.offsets] == ["a", "b"]
    assert merged.topics() == ["T"]


def test_queue_key_written_as_a_json_string_is_accepted() -> None:
    key = orjson.dumps({"topic": "T", "brokerName": "b", "queueId": 3}).decode()
    body = orjson.dumps({"offsetTable": {key: 42}})
    assert stats.parse_reset_offsets(body) == {MessageQueue("T", "b", 3): 42}


@pytest.mark.parametrize("body", [
    b'{"offsetTable":{"plain":1}}', b'{"offsetTable":{{"topic":"T","brokerName":"b"}:1}}',
    b'{"offsetTable":{{"topic":"T","brokerName":"b","queueId":"zero"}:1}}',
    b'{"offsetTable":{{"topic":"T","brokerName":"b","queueId":0}:"1"}}', b'{"offsetTable":[]}',
])
def test_broken_offset_tables_are_body_errors(body: bytes) -> None:
    with pytest.raises(BodyError):
        stats.parse_reset_offsets(body)


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 7), st.integers(0, 1 << 40),
                          st.integers(0, 1 << 40)), unique_by=lambda t: (t[0], t[1]), max_size=12))
def test_lag_is_the_sum_of_differences(rows: list[tuple[str, int, int, int]]) -> None:
    entries = ",".join(
        f'{{"brokerName":"{b}","queueId":{q},"topic":"T"}}:{{"brokerOffset":{max(x, y)},"consumerOffset":{min(x, y)}}}'
        for b, q, x, y in rows)
    parsed = stats.parse_consume_stats(f'{{"offsetTable":{{{entries}}}}}'.encode())
    assert parsed.total_diff == sum(abs(x - y) for _, _, x, y in rows)
    assert len(parsed.offsets) == len(rows)


def test_topic_config_table_and_validation() -> None:
    body = orjson.dumps({"topicConfigTable": {"T": TopicConfig("T", 4, 4).to_json()}, "dataVersion": {}})
    assert adminbodies.parse_topic_config_table(body) == {"T": TopicConfig("T", 4, 4)}
    for bad in (TopicConfig("bad topic"), TopicConfig("T", 0, 4), TopicConfig("T", 4, 2000), TopicConfig("T", perm=9)):
        with pytest.raises(ArgumentError):
            bad.validate()


def test_group_config_round_trip_and_validation() -> None:
    config = GroupConfig("g", consume_broadcast_enable=False, retry_max_times=3)
    assert GroupConfig.from_json(orjson.loads(config.body())) == config
    table = orjson.dumps({"subscriptionGroupTable": {"g": config.to_json()}})
    assert adminbodies.parse_group_table(table) == {"g": config}
    with pytest.raises(BodyError, match="consumeEnable"):
        GroupConfig.from_json({"groupName": "g", "consumeEnable": "yes"})
    for bad in (GroupConfig(""), GroupConfig("g", retry_queue_nums=65), GroupConfig("g", retry_max_times=-2)):
        with pytest.raises(ArgumentError):
            bad.validate()


def test_consumer_connection() -> None:
    body = orjson.dumps({
        "connectionSet": [{"clientId": "b@1", "clientAddr": "h:2", "language": "JAVA", "version": 399},
                          {"clientId": "a@1", "clientAddr": "h:1", "language": "PYTHON", "version": 1}],
        "subscriptionTable": {"T": {"topic": "T", "subString": "a || b", "expressionType": "TAG"}},
        "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET"})
    conn = adminbodies.parse_consumer_connection(body)
    assert [c.client_id for c in conn.connections] == ["a@1", "b@1"]
    assert conn.subscriptions[0].sub_string == "a || b"
    assert conn.message_model == "CLUSTERING"


def test_kv_table_and_lists() -> None:
    assert adminbodies.parse_kv_table(b'{"table":{"b":"2","a":"1"}}', "t") == {"a": "1", "b": "2"}
    with pytest.raises(BodyError):
        adminbodies.parse_kv_table(b'{"table":{"a":[1]}}', "t")
    assert adminbodies.parse_topic_list(b'{"topicList":["b","a"]}') == ("a", "b")
    assert adminbodies.parse_group_list(b'{"groupList":["g"]}') == ("g",)
    with pytest.raises(BodyError):
        adminbodies.parse_topic_list(b'{"topicList":[1]}')


def test_properties_text_both_ways() -> None:
    assert adminbodies.properties_text({"brokerPermission": "4"}) == b"brokerPermission=4\n"
    for bad in ({}, {"a=b": "1"}, {"": "1"}, {"k": "a\nb"}, {"k k": "1"}):
        with pytest.raises(ArgumentError):
            adminbodies.properties_text(bad)
    text = b"#comment\n! also\nbrokerName=broker-a\nmsg\\=key : v\\u0041\\tz\n\nempty=\nflag true\n"
    assert adminbodies.parse_properties_text(text) == {
        "brokerName": "broker-a", "msg=key": "vA\tz", "empty": "", "flag": "true"}


def test_names() -> None:
    assert adminbodies.check_topic("%RETRY%g") == "%RETRY%g"
    for bad in ("", "a b", "x" * 128, "t/1"):
        with pytest.raises(ArgumentError):
            adminbodies.check_topic(bad)
    with pytest.raises(ArgumentError):
        adminbodies.check_group("g!")
    assert adminbodies.perm_name(6) == "RW-"


def test_consumer_offsets_table() -> None:
    body = b'{"offsetTable":{"T@g":{"0":5,"1":7},"%RETRY%g@g":{0:1}}}'
    assert adminbodies.parse_consumer_offsets(body) == {("T", "g"): {0: 5, 1: 7}, ("%RETRY%g", "g"): {0: 1}}
    for bad in (b'{"offsetTable":{"Tg":{}}}', b'{"offsetTable":{"T@g":{"x":1}}}', b'{"offsetTable":{"T@g":{"0":"1"}}}'):
        with pytest.raises(BodyError):
            adminbodies.parse_consumer_offsets(bad)

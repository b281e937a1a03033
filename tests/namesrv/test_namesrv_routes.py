"""The route registry's rules, without sockets: registration, master/slave, versions, removal."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rocketq.namesrv.registerbodies import RegisterBrokerBody
from rocketq.namesrv.routes import Registration, RouteError, RouteTable
from rocketq.protocol.sharedbodies import DataVersion, TopicConfig

V1 = DataVersion(timestamp=1000, counter=1)
V2 = DataVersion(timestamp=1000, counter=2)


def body(*topics: str | TopicConfig, version: DataVersion = V1, filters: tuple[str, ...] = ()) -> RegisterBrokerBody:
    configs = tuple(t if isinstance(t, TopicConfig) else TopicConfig(t, 4, 4, 6) for t in topics)
    return RegisterBrokerBody(configs, version, filters)


def reg(name: str = "broker-a", broker_id: int = 0, addr: str = "10.0.0.1:10911", cluster: str = "C",
        ha: str = "10.0.0.1:10912", b: RegisterBrokerBody | None = None) -> Registration:
    return Registration(cluster, addr, name, broker_id, ha, b if b is not None else body("T"))


def route(rt: RouteTable, topic: str) -> dict[str, Any]:
    found = rt.pick_route(topic)
    assert found is not None, f"no route for {topic}"
    return found


def test_master_registration_builds_route_and_cluster_info() -> None:
    rt = RouteTable()
    result = rt.register_broker(reg(b=body("T", "U")), now=0)
    assert result.master_addr is None and result.ha_server_addr is None
    assert rt.pick_route("T") == {
        "queueDatas": [{"brokerName": "broker-a", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
                        "topicSysFlag": 0}],
        "brokerDatas": [{"cluster": "C", "brokerName": "broker-a", "brokerAddrs": {"0": "10.0.0.1:10911"}}],
        "filterServerTable": {},
    }
    assert rt.pick_route("missing") is None
    assert rt.cluster_info() == {
        "brokerAddrTable": {"broker-a": {"cluster": "C", "brokerName": "broker-a",
                                         "brokerAddrs": {"0": "10.0.0.1:10911"}}},
        "clusterAddrTable": {"C": ["broker-a"]},
    }
    assert rt.all_topics() == ["T", "U"]


def test_slave_gets_master_and_ha_address_and_does_not_change_queues() -> None:
    rt = RouteTable()
    rt.register_broker(reg(b=body("T")), now=0)
    result = rt.register_broker(reg(broker_id=1, addr="10.0.0.2:10911", ha="10.0.0.2:10912",
                                    b=body("T", TopicConfig("SLAVE_ONLY", 1, 1, 6))), now=0)
    assert result.master_addr == "10.0.0.1:10911"
    assert result.ha_server_addr == "10.0.0.1:10912"
    assert rt.all_topics() == ["T"]  # a slave's topic table is never used for routes
    assert route(rt, "T")["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}


def test_slave_without_live_master_gets_nothing() -> None:
    rt = RouteTable()
    result = rt.register_broker(reg(broker_id=1, addr="10.0.0.2:10911"), now=0)
    assert result.master_addr is None and result.ha_server_addr is None


def test_queues_rebuilt_only_when_data_version_changes() -> None:
    rt = RouteTable()
    rt.register_broker(reg(b=body(TopicConfig("T", 4, 4, 6))), now=0)
    # Same version, different content: a heartbeat, ignored for routes.
    rt.register_broker(reg(b=body(TopicConfig("T", 8, 8, 6))), now=1)
    assert route(rt, "T")["queueDatas"][0]["readQueueNums"] == 4
    rt.register_broker(reg(b=body(TopicConfig("T", 8, 8, 6), version=V2)), now=2)
    assert route(rt, "T")["queueDatas"][0]["readQueueNums"] == 8
    assert rt.broker_live_table["10.0.0.1:10911"].last_update == 2


def test_topics_missing_from_registration_stay_unless_configured() -> None:
    rt = RouteTable()
    rt.register_broker(reg(b=body("T", "U")), now=0)
    rt.register_broker(reg(b=body("T", version=V2)), now=1)
    assert rt.all_topics() == ["T", "U"]  # RocketMQ's default

    strict = RouteTable(delete_topic_with_registration=True)
    strict.register_broker(reg(b=body("T", "U")), now=0)
    strict.register_broker(reg(name="broker-b", addr="10.0.0.3:10911", b=body("U")), now=0)
    strict.register_broker(reg(b=body("T", version=V2)), now=1)
    assert strict.all_topics() == ["T", "U"]
    assert [q["brokerName"] for q in route(strict, "U")["queueDatas"]] == ["broker-b"]


def test_same_address_with_new_id_replaces_old_record() -> None:
    rt = RouteTable()
    rt.register_broker(reg(broker_id=1, addr="10.0.0.2:10911"), now=0)
    rt.register_broker(reg(broker_id=0, addr="10.0.0.2:10911", b=body("T")), now=1)
    assert rt.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.2:10911"}
    assert rt.all_topics() == ["T"]


def test_unregister_master_keeps_group_while_slave_lives() -> None:
    rt = RouteTable()
    rt.register_broker(reg(), now=0)
    rt.register_broker(reg(broker_id=1, addr="10.0.0.2:10911"), now=0)
    rt.unregister_broker("C", "10.0.0.1:10911", "broker-a", 0)
    assert route(rt, "T")["brokerDatas"][0]["brokerAddrs"] == {"1": "10.0.0.2:10911"}
    rt.unregister_broker("C", "10.0.0.2:10911", "broker-a", 1)
    assert rt.pick_route("T") is None
    assert rt.cluster_info() == {"brokerAddrTable": {}, "clusterAddrTable": {}}
    assert rt.all_topics() == [] and rt.broker_live_table == {}


def test_unregister_unknown_broker_is_harmless() -> None:
    rt = RouteTable()
    rt.register_broker(reg(), now=0)
    rt.unregister_broker("C", "10.9.9.9:1", "nobody", 0)
    assert rt.all_topics() == ["T"]


def test_expire_removes_only_silent_brokers_and_honours_their_own_timeout() -> None:
    rt = RouteTable()
    rt.register_broker(reg(), now=0)
    rt.register_broker(reg(name="broker-b", addr="10.0.0.3:10911", b=body("T")), now=100)
    rt.register_broker(reg(name="broker-c", addr="10.0.0.4:10911", b=body("V")), now=0, timeout=1000)
    assert rt.expire(now=120, timeout=120) == []
    removed = rt.expire(now=121, timeout=120)
    assert [live.broker_addr for live in removed] == ["10.0.0.1:10911"]
    assert [q["brokerName"] for q in route(rt, "T")["queueDatas"]] == ["broker-b"]
    assert rt.all_topics() == ["T", "V"]
    assert rt.cluster_info()["clusterAddrTable"] == {"C": ["broker-b", "broker-c"]}


def test_remove_by_connection_removes_only_that_connections_brokers() -> None:
    rt = RouteTable()
    conn_a, conn_b = object(), object()
    rt.register_broker(reg(), now=0, connection=conn_a)
    rt.register_broker(reg(name="broker-b", addr="10.0.0.3:10911", b=body("U")), now=0, connection=conn_b)
    assert rt.remove_by_connection(conn_a) == ["10.0.0.1:10911"]
    assert rt.all_topics() == ["U"]
    assert rt.remove_by_connection(conn_a) == []


def test_reregistration_on_a_new_connection_survives_the_old_ones_close() -> None:
    rt = RouteTable()
    old, new = object(), object()
    rt.register_broker(reg(), now=0, connection=old)
    rt.register_broker(reg(), now=1, connection=new)
    assert rt.remove_by_connection(old) == []
    assert rt.all_topics() == ["T"]


def test_wipe_write_perm_counts_topics_and_keeps_read() -> None:
    rt = RouteTable()
    rt.register_broker(reg(b=body("T", "U")), now=0)
    rt.register_broker(reg(name="broker-b", addr="10.0.0.3:10911", b=body("T")), now=0)
    assert rt.wipe_write_perm("broker-a") == 2
    perms = {q["brokerName"]: q["perm"] for q in route(rt, "T")["queueDatas"]}
    assert perms == {"broker-a": 4, "broker-b": 6}
    assert rt.wipe_write_perm("nobody") == 0


def test_delete_topic_everywhere_or_per_cluster() -> None:
    rt = RouteTable()
    rt.register_broker(reg(b=body("T")), now=0)
    rt.register_broker(reg(name="broker-b", cluster="D", addr="10.0.0.3:10911", b=body("T")), now=0)
    assert rt.delete_topic("T", "D") is True
    assert [q["brokerName"] for q in route(rt, "T")["queueDatas"]] == ["broker-a"]
    assert rt.delete_topic("T", "nonexistent") is False
    assert rt.delete_topic("T") is True
    assert rt.pick_route("T") is None
    assert rt.delete_topic("T") is False


def test_topics_by_cluster_and_system_topics() -> None:
    rt = RouteTable()
    rt.register_broker(reg(b=body("T")), now=0)
    rt.register_broker(reg(name="broker-b", cluster="D", addr="10.0.0.3:10911", b=body("U")), now=0)
    assert rt.topics_by_cluster("C") == ["T"]
    assert rt.topics_by_cluster("D") == ["U"]
    assert rt.topics_by_cluster("nope") == []
    topics, addr = rt.system_topics()
    assert topics == ["C", "D", "broker-a", "broker-b"]
    assert addr in ("10.0.0.1:10911", "10.0.0.3:10911")
    assert RouteTable().system_topics() == ([], None)


def test_filter_servers_are_kept_and_cleared() -> None:
    rt = RouteTable()
    rt.register_broker(reg(b=body("T", filters=("10.0.0.9:1",))), now=0)
    assert route(rt, "T")["filterServerTable"] == {"10.0.0.1:10911": ["10.0.0.9:1"]}
    rt.register_broker(reg(b=body("T")), now=1)
    assert route(rt, "T")["filterServerTable"] == {}


def test_query_data_version_helpers() -> None:
    rt = RouteTable()
    assert rt.is_topic_config_changed("10.0.0.1:10911", V1)
    rt.register_broker(reg(), now=0)
    assert not rt.is_topic_config_changed("10.0.0.1:10911", V1)
    assert rt.is_topic_config_changed("10.0.0.1:10911", V2)
    assert rt.data_version_of("10.0.0.1:10911") == V1
    rt.touch("10.0.0.1:10911", 50)
    assert rt.broker_live_table["10.0.0.1:10911"].last_update == 50
    rt.touch("unknown:1", 50)  # harmless


@pytest.mark.parametrize("bad", [
    reg(name=" "), reg(cluster=""), reg(broker_id=-1), reg(addr="nohost"), reg(addr="h:0"), reg(addr="h:99999"),
])
def test_invalid_registrations_are_refused_without_changing_state(bad: Registration) -> None:
    rt = RouteTable()
    with pytest.raises(RouteError):
        rt.register_broker(bad, now=0)
    assert rt.cluster_info() == {"brokerAddrTable": {}, "clusterAddrTable": {}}


def test_an_increment_rebuilds_only_its_topics_and_keeps_the_others() -> None:
    """RocketMQ's registerIncrementBrokerData: the body holds the changed topics and a new
    DataVersion; the broker's other routes stay as they were."""
    rt = RouteTable()
    rt.register_broker(reg(b=body("T", "U")), now=0)
    rt.register_broker(reg(b=body(TopicConfig("New", 8, 8, 6), version=V2)), now=1)
    assert rt.all_topics() == ["New", "T", "U"]
    assert route(rt, "New")["queueDatas"][0]["writeQueueNums"] == 8
    assert rt.data_version_of("10.0.0.1:10911") == V2


def test_wants_topics_only_when_register_broker_would_rebuild() -> None:
    rt = RouteTable()
    assert rt.wants_topics("broker-a", "10.0.0.1:10911", 0, V1)  # a new group
    rt.register_broker(reg(), now=0)
    assert not rt.wants_topics("broker-a", "10.0.0.1:10911", 0, V1)  # the periodic, unchanged table
    assert rt.wants_topics("broker-a", "10.0.0.1:10911", 0, V2)
    assert not rt.wants_topics("broker-a", "10.0.0.2:10911", 1, V2)  # a slave's table is never read
    rt.register_broker(reg(broker_id=1, addr="10.0.0.2:10911"), now=0)
    rt.unregister_broker("C", "10.0.0.1:10911", "broker-a", 0)
    assert rt.wants_topics("broker-a", "10.0.0.2:10911", 0, V1)  # the slave promoted: a new master


def test_a_full_table_after_an_increment_seen_first_is_read_at_the_same_data_version() -> None:
    """A name server that heard only an increment (it restarted, or the broker was starting)
    holds the table's DataVersion but not its other topics: the full registration under that
    same version must still be read, not skipped as the periodic unchanged table."""
    rt = RouteTable()
    increment = dataclasses.replace(reg(b=body("New", version=V2)), increment=True)
    rt.register_broker(increment, now=0)
    assert rt.wants_topics("broker-a", "10.0.0.1:10911", 0, V2)
    assert rt.is_topic_config_changed("10.0.0.1:10911", V2)  # QUERY_DATA_VERSION asks for the table
    rt.register_broker(reg(b=body("New", "T", "U", version=V2)), now=1)
    assert rt.all_topics() == ["New", "T", "U"]
    assert not rt.wants_topics("broker-a", "10.0.0.1:10911", 0, V2)  # now it holds the whole table
    rt.register_broker(dataclasses.replace(reg(b=body("V", version=DataVersion(1000, 3))), increment=True), now=2)
    assert not rt.wants_topics("broker-a", "10.0.0.1:10911", 0, DataVersion(1000, 3))  # increments on a full table

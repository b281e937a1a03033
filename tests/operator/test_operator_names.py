"""Child names and broker identities: one function each, and the ordinal arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rocketq_operator import identities, names
from rocketq_operator.identities import BrokerIdentity


def test_child_names() -> None:
    assert names.namesrv("demo") == "demo-namesrv"
    assert names.namesrv_pod("demo", 1) == "demo-namesrv-1"
    assert names.broker_group("demo", 0) == "demo-broker-0"
    assert names.broker_config("demo", 2) == "demo-broker-2-config"
    assert names.broker_pod("demo", 2, 1) == "demo-broker-2-1"
    assert names.store_claim("demo", 0, 1) == "store-demo-broker-0-1"


def test_addresses_use_stable_pod_dns_names() -> None:
    assert names.namesrv_addresses("demo", "mq", 2) == (
        "demo-namesrv-0.demo-namesrv.mq.svc:9876;demo-namesrv-1.demo-namesrv.mq.svc:9876"
    )
    assert names.broker_address("demo", "mq", 1, 0) == "demo-broker-1-0.demo-broker-1.mq.svc:10911"
    assert names.dledger_peers("demo", "mq", 0, 3) == (
        "n0-demo-broker-0-0.demo-broker-0.mq.svc:40911;"
        "n1-demo-broker-0-1.demo-broker-0.mq.svc:40911;"
        "n2-demo-broker-0-2.demo-broker-0.mq.svc:40911"
    )


@pytest.mark.parametrize(("cluster", "name", "index"), [
    ("demo", "demo-broker-0", 0),
    ("demo", "demo-broker-12", 12),
    ("demo-broker", "demo-broker-broker-3", 3),
    ("demo", "other-broker-0", None),
    ("demo", "demo-broker-01", None),
    ("demo", "demo-broker-x", None),
    ("demo", "demo-namesrv", None),
])
def test_group_index(cluster: str, name: str, index: int | None) -> None:
    assert names.group_index(cluster, name) == index


@pytest.mark.parametrize(("pod", "ordinal"), [
    ("demo-broker-0-0", 0), ("demo-broker-0-12", 12), ("demo", None), ("demo-", None), ("demo-07", None),
])
def test_pod_ordinal(pod: str, ordinal: int | None) -> None:
    assert names.pod_ordinal(pod) == ordinal


def test_master_slave_identities_follow_the_engine_contract() -> None:
    # masterOrdinal 0: brokerId == ordinal.
    assert [identities.master_slave_identity(o, 0) for o in range(3)] == [
        BrokerIdentity(0, True), BrokerIdentity(1, False), BrokerIdentity(2, False)]
    # masterOrdinal 2: ordinals below the master shift up by one, above stay.
    assert [identities.master_slave_identity(o, 2) for o in range(4)] == [
        BrokerIdentity(1, False), BrokerIdentity(2, False), BrokerIdentity(0, True), BrokerIdentity(3, False)]
    with pytest.raises(ValueError, match="non-negative"):
        identities.master_slave_identity(-1, 0)


def test_master_move_restarts_only_pods_whose_identity_changes() -> None:
    assert identities.changed_by_master_move(3, 0, 1) == [0, 1]
    assert identities.changed_by_master_move(5, 0, 3) == [0, 1, 2, 3]
    assert identities.changed_by_master_move(5, 3, 4) == [3, 4]
    assert identities.changed_by_master_move(2, 1, 1) == []


@given(replicas=st.integers(1, 5), data=st.data())
def test_broker_ids_are_unique_with_exactly_one_master(replicas: int, data: st.DataObject) -> None:
    master = data.draw(st.integers(0, replicas - 1))
    ids = [identities.master_slave_identity(o, master) for o in range(replicas)]
    assert sorted(i.broker_id for i in ids) == list(range(replicas))
    assert [i.is_master for i in ids].count(True) == 1

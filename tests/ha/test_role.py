"""The role-change request's fields and config/role.json, which overrides broker.conf's role."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.broker.settings import BrokerIdentity, BrokerRole
from rocketq.ha import role
from rocketq.ha.role import RoleChange, RoleChangeError


def test_a_promotion_always_means_broker_id_0() -> None:
    assert RoleChange.of("sync_master", "3") == RoleChange(BrokerRole.SYNC_MASTER, 0)


def test_a_promotion_may_ask_for_an_epoch_past_a_floor_and_the_file_never_keeps_it(tmp_path: Path) -> None:
    change = RoleChange.of("ASYNC_MASTER", "0", "", " 6 ")
    assert change == RoleChange(BrokerRole.ASYNC_MASTER, 0, epoch_above=6)
    assert RoleChange.of("ASYNC_MASTER", "0").epoch_above == 0
    role.save(tmp_path, change)
    assert role.load(tmp_path) == RoleChange(BrokerRole.ASYNC_MASTER, 0)


@pytest.mark.parametrize(("fields", "reason"), [
    (("LEADER", "1"), "expected ASYNC_MASTER"),
    (("SLAVE", "0"), "brokerId of 1 or more"),
    (("SLAVE", None), "brokerId of 1 or more"),
    (("SLAVE", "one"), "expected a number"),
    (("SLAVE", "1", "nohost"), "expected host:port"),
    (("ASYNC_MASTER", "0", "", "-1"), "masterEpochAbove='-1'"),
    (("ASYNC_MASTER", "0", "", "x"), "expected a non-negative number"),
])
def test_bad_requests_are_refused_with_the_reason(fields: tuple[str, ...], reason: str) -> None:
    with pytest.raises(RoleChangeError, match=reason):
        RoleChange.of(*fields)  # type: ignore[arg-type]


def test_the_saved_role_overrides_broker_conf(tmp_path: Path) -> None:
    conf = BrokerIdentity(broker_id=0, broker_role=BrokerRole.ASYNC_MASTER)
    assert role.apply_saved(conf, tmp_path) == (conf, "")
    role.save(tmp_path, RoleChange(BrokerRole.SLAVE, 2, "10.0.0.1:10912"))
    identity, master = role.apply_saved(conf, tmp_path)
    assert (identity.broker_role, identity.broker_id, master) == (BrokerRole.SLAVE, 2, "10.0.0.1:10912")


def test_a_role_file_that_does_not_parse_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / role.ROLE_FILE).write_text('{"brokerRole": "SLAVE"}')
    with pytest.raises(RoleChangeError, match="fix or delete"):
        role.apply_saved(BrokerIdentity(), tmp_path)

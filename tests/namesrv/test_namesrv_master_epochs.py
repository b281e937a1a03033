"""Fencing a stale master in the route table: brokerId 0 goes by master epoch when brokers send one
(rocketqMasterEpoch), by last registration otherwise (RocketMQ 4.x, and every Java broker)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.namesrv.registerbodies import RegisterBrokerBody
from rocketq.namesrv.routes import Registration, RouteError, RouteTable
from rocketq.protocol import masterepoch
from rocketq.protocol.sharedbodies import DataVersion, TopicConfig

OLD, NEW, SLAVE2 = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"
V1 = DataVersion(timestamp=1000, counter=1)


def reg(addr: str, broker_id: int = 0, epoch: int | None = None, name: str = "broker-a",
        topics: tuple[str, ...] = ("T",)) -> Registration:
    body = RegisterBrokerBody(tuple(TopicConfig(t, 4, 4, 6) for t in topics), V1)
    return Registration("C", addr, name, broker_id, addr.replace("10911", "10912"), body,
                        master_epoch=epoch)


def ids(rt: RouteTable, name: str = "broker-a") -> dict[int, str]:
    return dict(rt.broker_addr_table[name].addrs)


def promoted(rt: RouteTable) -> None:
    """OLD was master at epoch 0 with NEW its slave; NEW was promoted (epoch 1) and registered."""
    rt.register_broker(reg(OLD, epoch=0), now=0)
    rt.register_broker(reg(NEW, broker_id=1), now=0)
    rt.register_broker(reg(NEW, epoch=1), now=1)


def test_a_stale_master_does_not_take_broker_id_0_back_and_is_told_who_holds_it() -> None:
    rt = RouteTable()
    promoted(rt)
    live_before = rt.broker_live_table[OLD]
    result = rt.register_broker(reg(OLD, epoch=0, topics=("T", "ONLY_OLD")), now=2)
    assert ids(rt) == {0: NEW}
    assert result.stale_master_epoch == 1
    assert (result.master_addr, result.ha_server_addr) == (NEW, "10.0.0.2:10912")
    assert rt.all_topics() == ["T"], "a refused registration's topics are not routes"
    live_after = rt.broker_live_table[OLD]
    assert live_after.last_update == 2, "a refused registration is still a heartbeat"
    assert (live_after.data_version, live_after.connection) == (live_before.data_version, live_before.connection)


def test_the_stale_master_becoming_a_slave_keeps_the_new_master() -> None:
    rt = RouteTable()
    promoted(rt)
    rt.register_broker(reg(OLD, epoch=0), now=2)
    result = rt.register_broker(reg(OLD, broker_id=1), now=3)  # changeToSlave: no epoch as a slave
    assert ids(rt) == {0: NEW, 1: OLD}
    assert result.master_addr == NEW and result.stale_master_epoch is None


def test_equal_or_higher_epochs_and_the_holder_itself_are_accepted() -> None:
    rt = RouteTable()
    promoted(rt)
    assert rt.register_broker(reg(NEW, epoch=0), now=2).stale_master_epoch is None  # the holder, wiped
    assert ids(rt) == {0: NEW}
    assert rt.register_broker(reg(OLD, epoch=1), now=3).stale_master_epoch is None  # same epoch: last wins
    assert ids(rt) == {0: OLD}
    rt.register_broker(reg(NEW, epoch=5), now=4)
    assert ids(rt) == {0: NEW} and rt.master_epoch("broker-a") == 5


def test_the_group_epoch_is_the_highest_any_master_registered_with() -> None:
    rt = RouteTable()
    rt.register_broker(reg(OLD, epoch=3), now=0)
    rt.register_broker(reg(OLD, epoch=2), now=1)  # the holder may go lower; the group's stays
    assert rt.master_epoch("broker-a") == 3
    assert rt.register_broker(reg(NEW, epoch=2), now=2).stale_master_epoch == 3
    assert rt.master_epoch("broker-b") is None


def test_registrations_without_an_epoch_behave_as_rocketmq_4() -> None:
    rt = RouteTable()
    promoted(rt)
    assert rt.register_broker(reg(OLD), now=2).stale_master_epoch is None  # a Java broker: last wins
    assert ids(rt) == {0: OLD}
    plain = RouteTable()
    plain.register_broker(reg(OLD), now=0)
    plain.register_broker(reg(NEW), now=1)
    assert ids(plain) == {0: NEW} and plain.master_epoch("broker-a") is None


def test_only_master_registrations_count() -> None:
    rt = RouteTable()
    rt.register_broker(reg(OLD, epoch=1), now=0)
    rt.register_broker(reg(NEW, broker_id=1, epoch=9), now=0)
    assert rt.master_epoch("broker-a") == 1 and ids(rt) == {0: OLD, 1: NEW}


def test_with_no_live_master_a_lower_epoch_may_take_broker_id_0() -> None:
    """The fence protects a live master; it never leaves the group without one."""
    rt = RouteTable()
    promoted(rt)
    rt.register_broker(reg(SLAVE2, broker_id=2), now=150)
    rt.expire(now=200, timeout=120)  # NEW (and OLD) fell silent; SLAVE2 keeps the group and its epoch
    assert "broker-a" in rt.broker_addr_table and rt.master_epoch("broker-a") == 1
    assert rt.register_broker(reg(OLD, epoch=0), now=201).stale_master_epoch is None
    assert ids(rt) == {0: OLD, 2: SLAVE2}


def test_epochs_go_with_their_group_on_expiry_and_unregistration() -> None:
    rt = RouteTable()
    promoted(rt)
    rt.expire(now=500, timeout=120)
    assert rt.master_epoch("broker-a") is None
    assert rt.register_broker(reg(OLD, epoch=0), now=501).stale_master_epoch is None
    assert ids(rt) == {0: OLD}
    rt.register_broker(reg(NEW, name="broker-b", epoch=4), now=502)
    rt.unregister_broker("C", NEW, "broker-b", 0)
    assert rt.master_epoch("broker-b") is None and "broker-b" not in rt.broker_addr_table


def test_epochs_of_other_groups_do_not_interfere() -> None:
    rt = RouteTable()
    rt.register_broker(reg(OLD, name="broker-a", epoch=7), now=0)
    rt.register_broker(reg(NEW, name="broker-b", epoch=0), now=0)
    assert ids(rt, "broker-b") == {0: NEW} and rt.master_epoch("broker-b") == 0


def test_a_negative_epoch_is_refused() -> None:
    rt = RouteTable()
    try:
        rt.register_broker(reg(OLD, epoch=-1), now=0)
    except RouteError as exc:
        assert "epoch" in str(exc)
    else:
        raise AssertionError("a negative epoch was accepted")
    assert not rt.broker_addr_table


@given(st.lists(st.tuples(st.sampled_from([OLD, NEW, SLAVE2]), st.integers(0, 4)), min_size=1, max_size=12))
def test_the_master_is_always_a_registration_with_the_highest_epoch_so_far(
        regs: list[tuple[str, int]]) -> None:
    """Whatever order masters register in, brokerId 0 is held at the group's highest epoch."""
    rt = RouteTable()
    for now, (addr, epoch) in enumerate(regs):
        rt.register_broker(reg(addr, epoch=epoch), now=now)
    top = max(epoch for _, epoch in regs)
    assert rt.master_epoch("broker-a") == top
    holder = ids(rt)[0]
    assert (holder, top) in regs, "brokerId 0 is held by an address that registered the top epoch"


# --- the wire field -------------------------------------------------------------------------------


def test_the_ext_field_round_trips_and_is_absent_for_none() -> None:
    ext: dict[str, str] = {}
    masterepoch.write(ext, None)
    assert ext == {} and masterepoch.read(ext) is None and masterepoch.read(None) is None
    masterepoch.write(ext, 12)
    assert ext == {"rocketqMasterEpoch": "12"} and masterepoch.read(ext) == 12


@given(st.text(max_size=30))
def test_reading_the_ext_field_never_raises_and_takes_only_non_negative_longs(raw: str) -> None:
    value = masterepoch.read({masterepoch.EXT_FIELD: raw})
    if value is not None:
        assert 0 <= value <= masterepoch.MAX_EPOCH and int(raw) == value


@given(st.integers(-(1 << 70), 1 << 70))
def test_integers_read_back_when_they_are_a_java_long_epoch(n: int) -> None:
    expected = n if 0 <= n <= masterepoch.MAX_EPOCH else None
    assert masterepoch.read({masterepoch.EXT_FIELD: str(n)}) == expected

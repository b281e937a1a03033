"""Latency fault tolerance (RocketMQ's table) and queue selection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.faults import ISOLATION_LATENCY, LatencyFaultTolerance, not_available_duration
from rocketq.client.queues import MessageQueue
from rocketq.client.selectors import RoundRobin, hash_by_key, random_queue
from rocketq.protocol import nativecodecs
from rocketq.protocol.javahash import java_string_hash


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


@pytest.mark.parametrize("latency, duration", [
    (0, 0), (49, 0), (50, 0), (100, 0), (549, 0), (550, 30000), (999, 30000), (1000, 60000),
    (2000, 120000), (3000, 180000), (14999, 180000), (15000, 600000), (30000, 600000),
])
def test_not_available_duration_follows_rocketmq_table(latency: int, duration: int) -> None:
    assert not_available_duration(latency) == duration


def test_failure_isolates_for_ten_minutes_and_success_clears() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    faults.update("a", 10, isolation=True)
    assert not faults.is_available("a") and faults.is_available("b")
    clock.now += 599_999
    assert not faults.is_available("a")
    clock.now += 1
    assert faults.is_available("a")
    faults.update("b", 1200, isolation=False)
    assert not faults.is_available("b")
    faults.update("b", 20, isolation=False)
    assert faults.is_available("b") and "b" not in faults.marked()


def test_pick_one_at_least_prefers_the_soonest_recovery() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    assert faults.pick_one_at_least() is None
    faults.update("slow", 600, isolation=False)  # 30 s
    faults.update("dead", 0, isolation=True)  # 600 s
    assert faults.pick_one_at_least() == "slow"


def mqs(*brokers: str, n: int = 2) -> list[MessageQueue]:
    return [MessageQueue("T", b, i) for b in brokers for i in range(n)]


def test_round_robin_visits_every_queue_in_order_from_a_random_start() -> None:
    rr = RoundRobin(LatencyFaultTolerance())
    queues = mqs("a", "b")
    picks = [rr.choose(queues) for _ in range(8)]
    start = queues.index(picks[0])
    assert picks == [queues[(start + i) % 4] for i in range(8)]


def test_round_robin_skips_unavailable_and_last_failed_broker() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    rr = RoundRobin(faults)
    queues = mqs("a", "b", "c")
    faults.update("a", 0, isolation=True)
    for _ in range(10):
        assert rr.choose(queues).broker_name != "a"
    for _ in range(10):
        assert rr.choose(queues, last_broker="b").broker_name == "c"


def test_round_robin_falls_back_when_everything_is_marked() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    rr = RoundRobin(faults)
    faults.update("a", 0, isolation=True)
    faults.update("b", 700, isolation=False)
    assert rr.choose(mqs("a", "b")).broker_name == "b"
    with pytest.raises(ValueError):
        rr.choose([])


def test_hash_by_key_uses_java_hash_code() -> None:
    queues = mqs("a", "b", n=4)
    select = hash_by_key("order-42")
    assert select(queues) == queues[abs(java_string_hash("order-42")) % 8]
    assert all(hash_by_key("order-42")(queues) == select(queues) for _ in range(3))
    assert random_queue(queues) in queues


@given(st.text(min_size=1, max_size=40), st.integers(1, 64))
def test_hash_by_key_always_picks_a_queue(key: str, n: int) -> None:
    queues = mqs("a", n=n)
    assert hash_by_key(key)(queues) in queues


def test_marks_show_the_marked_brokers_only() -> None:
    faults = LatencyFaultTolerance(clock_ms=lambda: 1000)
    assert not faults.marks
    faults.update("a", 10, isolation=False)  # fast: no mark
    assert not faults.marks
    faults.update("a", 0, isolation=True)
    assert set(faults.marks) == {"a"} and faults.marks["a"].latency_ms == ISOLATION_LATENCY
    faults.update("a", 10, isolation=False)
    assert not faults.marks


_BROKERS = st.sampled_from(["a", "b", "c"])


@given(
    queues=st.lists(st.tuples(st.sampled_from(["T", "U"]), _BROKERS, st.integers(0, 7)), min_size=1, max_size=6),
    index=st.one_of(st.none(), st.integers(0, 0x7FFFFFFF), st.just(-1), st.just(1 << 40)),
    marked=st.sets(_BROKERS, max_size=2),
    last_broker=st.one_of(st.none(), _BROKERS),
    as_list=st.booleans(),
)
def test_choose_decides_as_the_pure_method(queues: list[tuple[str, str, int]], index: int | None,
                                           marked: set[str], last_broker: str | None, as_list: bool) -> None:
    """RoundRobin.choose (with the native codecs, its C twin) against the pure method, from
    the same state: the same queue and the same index left for the next send."""
    mq_list = [MessageQueue(*q) for q in queues]
    given_queues = mq_list if as_list else tuple(mq_list)
    pure_choose = nativecodecs.pure(RoundRobin.choose)
    outcomes = []
    for choose in (RoundRobin.choose, pure_choose):
        faults = LatencyFaultTolerance(clock_ms=lambda: 1000)
        for broker in sorted(marked):
            faults.update(broker, 0, isolation=True)
        rr = RoundRobin(faults)
        if index is not None:
            rr._indexes[mq_list[0].topic] = index
        picked = choose(rr, given_queues, last_broker)
        outcomes.append((picked, dict(rr._indexes)))
    if index is None:  # a random start: only where it lands is comparable
        assert outcomes[0][0] in mq_list and outcomes[1][0] in mq_list
    else:
        assert outcomes[0] == outcomes[1]

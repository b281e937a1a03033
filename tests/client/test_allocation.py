"""Allocation strategies against RocketMQ's published examples and the partition property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.allocation import STRATEGIES, allocate_averagely, allocate_averagely_by_circle
from rocketq.client.queues import MessageQueue


def queues(n: int, broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue("T", broker, i) for i in range(n)]


def ids(result: list[MessageQueue]) -> list[int]:
    return [mq.queue_id for mq in result]


CIDS3 = ["c0", "c1", "c2"]


def test_averagely_16_queues_3_consumers_is_contiguous_with_remainder_first() -> None:
    mqs = queues(16)
    assert ids(allocate_averagely("c0", mqs, CIDS3)) == list(range(0, 6))
    assert ids(allocate_averagely("c1", mqs, CIDS3)) == list(range(6, 11))
    assert ids(allocate_averagely("c2", mqs, CIDS3)) == list(range(11, 16))


def test_averagely_16_queues_4_consumers_gets_four_each_in_sequence() -> None:
    cids = ["c0", "c1", "c2", "c3"]
    assert [ids(allocate_averagely(c, queues(16), cids)) for c in cids] == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]


def test_averagely_5_queues_2_consumers_is_3_plus_2() -> None:
    assert ids(allocate_averagely("a", queues(5), ["a", "b"])) == [0, 1, 2]
    assert ids(allocate_averagely("b", queues(5), ["a", "b"])) == [3, 4]


def test_averagely_more_consumers_than_queues_leaves_the_last_idle() -> None:
    cids = ["a", "b", "c", "d"]
    assert [ids(allocate_averagely(c, queues(3), cids)) for c in cids] == [[0], [1], [2], []]


def test_by_circle_deals_queues_like_cards() -> None:
    mqs = queues(16)
    assert ids(allocate_averagely_by_circle("c0", mqs, CIDS3)) == [0, 3, 6, 9, 12, 15]
    assert ids(allocate_averagely_by_circle("c1", mqs, CIDS3)) == [1, 4, 7, 10, 13]
    assert ids(allocate_averagely_by_circle("c2", mqs, CIDS3)) == [2, 5, 8, 11, 14]


@pytest.mark.parametrize("strategy", [allocate_averagely, allocate_averagely_by_circle])
def test_unknown_consumer_gets_nothing_and_empty_id_is_refused(strategy) -> None:
    assert strategy("stranger", queues(4), ["a", "b"]) == []
    assert strategy("a", [], ["a", "b"]) == []
    with pytest.raises(ValueError):
        strategy("", queues(4), ["a"])


def test_strategies_are_named_as_in_rocketmq() -> None:
    assert STRATEGIES["AVG"] is allocate_averagely
    assert STRATEGIES["AVG_BY_CIRCLE"] is allocate_averagely_by_circle


@given(st.integers(0, 64), st.integers(1, 12), st.sampled_from([allocate_averagely, allocate_averagely_by_circle]))
def test_every_queue_goes_to_exactly_one_consumer(n_queues: int, n_consumers: int, strategy) -> None:
    mqs = queues(n_queues // 2, "broker-a") + queues(n_queues - n_queues // 2, "broker-b")
    mqs.sort()
    cids = sorted(f"10.0.0.{i}@{i}" for i in range(n_consumers))
    shares = [strategy(c, mqs, cids) for c in cids]
    taken = [mq for share in shares for mq in share]
    assert sorted(taken) == mqs
    sizes = [len(s) for s in shares]
    assert max(sizes) - min(sizes) <= 1

from __future__ import annotations

from rocketq.broker.traffic import TrafficSampler


def test_rates_are_offset_growth_per_second() -> None:
    now = [100.0]
    topics = {"T": {0: 10, 1: 5}}
    groups = [("T", "g", {0: 4, 1: 0})]
    sampler = TrafficSampler(lambda: topics, lambda: groups, clock=lambda: now[0])
    assert sampler.sample().broker_put_tps == 0  # the first sample only sets the baseline
    now[0] = 110.0
    topics["T"] = {0: 60, 1: 55}
    groups[0] = ("T", "g", {0: 24, 1: 30})
    rates = sampler.sample()
    assert rates.put_tps == {"T": 10.0}
    assert rates.consume_tps == {("g", "T"): 5.0}
    assert rates.broker_put_tps == 10.0 and rates.broker_get_tps == 5.0


def test_new_topics_and_offset_resets_never_give_negative_rates() -> None:
    now = [0.0]
    topics: dict[str, dict[int, int]] = {"A": {0: 100}}
    sampler = TrafficSampler(lambda: topics, lambda: [], clock=lambda: now[0])
    sampler.sample()
    now[0] = 1.0
    topics = {"A": {0: 50}, "B": {0: 7}}
    rates = sampler.sample()
    assert rates.put_tps == {"A": 0.0, "B": 0.0}


def test_put_latency_percentile_is_a_bucket_bound() -> None:
    from rocketq.broker.metrics import latency_percentile

    buckets = [0] * 13
    assert latency_percentile(buckets, 0.99) == 0.0
    buckets[1] = 990  # <= 10 ms
    buckets[3] = 10  # <= 100 ms
    assert latency_percentile(buckets, 0.99) == 10.0
    assert latency_percentile(buckets, 0.999) == 100.0
    buckets[12] = 1000
    assert latency_percentile(buckets, 0.99) == float("inf")

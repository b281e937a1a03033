"""promotion.decide: which slave may replace a lost master, from replicated offsets alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rocketq_operator.brokeradmin import BrokerRuntime
from rocketq_operator.promotion import decide, reference_offset

GAP = 1000


def slave(offset: int, behind: int = 0) -> BrokerRuntime:
    return BrokerRuntime(commitlog_max_offset=offset, ha_connections=1 if behind == 0 else 0,
                         ha_behind_bytes=behind, ha_in_sync=behind == 0)


def test_the_most_caught_up_in_sync_slave_wins_lowest_ordinal_on_a_tie() -> None:
    assert decide({1: slave(9_500), 2: slave(10_000)}, None, GAP).promote == 2
    assert decide({1: slave(10_000), 2: slave(10_000)}, None, GAP).promote == 1


def test_an_empty_slave_is_refused_even_within_the_gap() -> None:
    decision = decide({1: slave(0)}, 500, GAP)
    assert decision.promote is None
    assert "ordinal 1: offset 0 (empty)" in decision.reason


def test_a_lagging_slave_is_refused_against_another_slaves_view_of_the_master() -> None:
    # Slave 2 heard the master reach 50_000 and has 49_000; slave 1 has 10_000: only 2 may win.
    slaves = {1: slave(10_000), 2: slave(49_000, behind=1_000)}
    assert reference_offset(slaves, None) == 50_000
    assert decide(slaves, None, GAP).promote == 2
    decision = decide(slaves, None, GAP // 2)
    assert decision.promote is None
    assert "ordinal 1: offset 10000 (40000 bytes behind)" in decision.reason
    assert "ordinal 2: offset 49000 (1000 bytes behind)" in decision.reason


def test_the_masters_last_known_offset_counts() -> None:
    assert decide({1: slave(10_000)}, 10_500, GAP).promote == 1
    assert decide({1: slave(10_000)}, 20_000, GAP).promote is None


def test_a_forced_ordinal_is_taken_when_it_answers() -> None:
    assert decide({1: slave(0), 2: slave(5)}, 90_000, GAP, forced=1).promote == 1
    refused = decide({1: slave(0)}, 90_000, GAP, forced=2)
    assert refused.promote is None and "forced ordinal 2" in refused.reason


def test_an_empty_group_promotes_an_empty_slave() -> None:
    assert decide({1: slave(0)}, None, GAP).promote == 1


def test_no_slave_means_wait() -> None:
    assert decide({}, 100, GAP).promote is None


@given(st.dictionaries(st.integers(1, 4), st.tuples(st.integers(0, 10**6), st.integers(0, 10**4)), max_size=4),
       st.one_of(st.none(), st.integers(0, 10**6)), st.integers(0, 10**5))
def test_a_promoted_slave_is_never_empty_nor_beyond_the_gap(raw: dict[int, tuple[int, int]], master: int | None,
                                                           gap: int) -> None:
    slaves = {ordinal: slave(offset, behind) for ordinal, (offset, behind) in raw.items()}
    decision = decide(slaves, master, gap)
    if decision.promote is None:
        assert all(decision.reference - s.commitlog_max_offset > gap
                   or (s.commitlog_max_offset == 0 and decision.reference > 0) for s in slaves.values())
    else:
        chosen = slaves[decision.promote].commitlog_max_offset
        assert decision.reference - chosen <= gap and (chosen > 0 or decision.reference == 0)
        assert all(chosen >= s.commitlog_max_offset for s in slaves.values()
                   if decision.reference - s.commitlog_max_offset <= gap)

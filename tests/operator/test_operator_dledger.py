"""The operator's reading of DLedger groups: views, problems, status, roll gates, transfer
targets and the metrics, decided from member states without a cluster."""

from __future__ import annotations

import pytest
from rocketq_operator import dledger
from rocketq_operator.brokeradmin import DLedgerMember, RaftRole
from rocketq_operator.dledger import GroupView, MemberView, Problem
from rocketq_operator.metrics import DLedgerSample, Metrics

LIMIT = 100


def member(ordinal: int, role: RaftRole | None, term: int = 3, commit: int = 1000,
           leader: int | None = 0) -> MemberView:
    pod = f"demo-broker-0-{ordinal}"
    if role is None:
        return MemberView(ordinal, pod, None)
    return MemberView(ordinal, pod, DLedgerMember("demo-broker-0", f"n{ordinal}", role, term, commit, commit,
                                                  None if leader is None else f"n{leader}"))


def view(*members: MemberView) -> GroupView:
    return GroupView("demo-broker-0", len(members), {m.ordinal: m for m in members})


LEADER, FOLLOWER, CANDIDATE = RaftRole.LEADER, RaftRole.FOLLOWER, RaftRole.CANDIDATE
HEALTHY = view(member(0, LEADER), member(1, FOLLOWER, commit=990), member(2, FOLLOWER, commit=700))


def test_a_healthy_group_has_a_leader_a_quorum_and_lags() -> None:
    assert HEALTHY.leader == HEALTHY.members[0] and HEALTHY.term == 3 and HEALTHY.quorum == 3
    assert [HEALTHY.lag(m) for m in HEALTHY.members.values()] == [0, 10, 300]
    assert dledger.problem(HEALTHY) is None
    assert dledger.sample(HEALTHY) == DLedgerSample("demo-broker-0", True, 3, {
        "demo-broker-0-0": 0, "demo-broker-0-1": 10, "demo-broker-0-2": 300})
    lost = view(member(0, CANDIDATE, leader=None), member(1, None), member(2, None))
    assert dledger.sample(lost) == DLedgerSample("demo-broker-0", False, 3, {})
    assert dledger.status(HEALTHY) == {"leader": "demo-broker-0-0", "leaderId": "n0", "term": 3, "members": [
        {"pod": "demo-broker-0-0", "selfId": "n0", "role": "LEADER", "commitIndex": 1000, "lag": 0},
        {"pod": "demo-broker-0-1", "selfId": "n1", "role": "FOLLOWER", "commitIndex": 990, "lag": 10},
        {"pod": "demo-broker-0-2", "selfId": "n2", "role": "FOLLOWER", "commitIndex": 700, "lag": 300}]}


def test_a_deposed_leader_in_an_older_term_is_not_the_leader() -> None:
    split = view(member(0, LEADER, term=2), member(1, LEADER, term=3, leader=1), member(2, FOLLOWER, leader=1))
    assert split.leader == split.members[1] and split.quorum == 2
    assert not split.follows(split.members[0])
    assert dledger.problem(split) is None


@pytest.mark.parametrize(("group", "expected"), [
    (view(member(0, CANDIDATE, leader=None), member(1, None), member(2, None)),
     (Problem.NO_LEADER, "DLedger group demo-broker-0 has no leader: 1 of 3 members answer, a leader needs 2")),
    (view(member(0, LEADER), member(1, FOLLOWER, term=2), member(2, None)),
     (Problem.NO_QUORUM, "DLedger group demo-broker-0: leader demo-broker-0-0 has 1 of 3 members in its term "
                         "(as seen by the operator), quorum is 2")),
    (view(member(0, LEADER), member(1, FOLLOWER), member(2, None), member(3, None), member(4, None)),
     (Problem.NO_QUORUM, "DLedger group demo-broker-0: leader demo-broker-0-0 has 2 of 5 members in its term "
                         "(as seen by the operator), quorum is 3")),
])
def test_problems_say_what_keeps_a_group_from_writing(group: GroupView, expected: tuple[Problem, str]) -> None:
    assert dledger.problem(group) == expected


def test_an_unknown_member_is_reported_without_numbers() -> None:
    group = view(member(0, LEADER), member(1, FOLLOWER), member(2, None))
    assert dledger.status(group)["members"][2] == {"pod": "demo-broker-0-2", "selfId": "n2", "role": "UNKNOWN"}
    assert dledger.status(view(member(0, None), member(1, None), member(2, None))) == {"members": [
        {"pod": f"demo-broker-0-{o}", "selfId": f"n{o}", "role": "UNKNOWN"} for o in range(3)]}


def test_a_follower_restarts_only_while_every_other_member_follows_caught_up() -> None:
    assert dledger.roll_gate(HEALTHY, 2, LIMIT) is None, "the lagging member itself may go"
    assert dledger.roll_gate(HEALTHY, 1, LIMIT) == "demo-broker-0-2 is 300 entries behind demo-broker-0-0"
    assert dledger.roll_gate(view(member(0, LEADER), member(1, None), member(2, FOLLOWER)), 2, LIMIT) == (
        "demo-broker-0-1 does not answer")
    assert dledger.roll_gate(view(member(0, LEADER), member(1, CANDIDATE, term=4), member(2, FOLLOWER)), 2,
                             LIMIT) == "demo-broker-0-1 is CANDIDATE in term 4, not a follower of demo-broker-0-0"
    assert dledger.roll_gate(view(member(0, CANDIDATE), member(1, CANDIDATE), member(2, FOLLOWER)), 2, LIMIT) == (
        "demo-broker-0 has no leader")


def test_leadership_goes_to_the_preferred_leader_or_the_most_caught_up_follower() -> None:
    assert dledger.transfer_target(HEALTHY, LIMIT) == 1
    assert dledger.transfer_target(HEALTHY, 1000) == 1, "the least lag wins"
    assert dledger.transfer_target(HEALTHY, 1000, preferred="n2") == 2
    assert dledger.transfer_target(HEALTHY, LIMIT, preferred="n2") == 1, "a lagging preferred leader waits its turn"
    assert dledger.transfer_target(HEALTHY, 5) is None
    tie = view(member(0, LEADER), member(1, FOLLOWER), member(2, FOLLOWER))
    assert dledger.transfer_target(tie, LIMIT) == 1


def sample_lines(metrics: Metrics) -> set[str]:
    text = metrics.exposition().decode()
    return {line for line in text.splitlines() if line.startswith("rocketq_operator_dledger")}


def test_metrics_follow_each_pass_and_drop_what_is_gone() -> None:
    metrics = Metrics()
    metrics.record_dledger("mq", "demo", [
        DLedgerSample("demo-broker-0", True, 3, {"demo-broker-0-0": 0, "demo-broker-0-1": 12}),
        DLedgerSample("demo-broker-1", False, None, {}),
    ])
    labels = 'cluster="demo",namespace="mq"'
    lag = "rocketq_operator_dledger_member_lag_entries"
    assert sample_lines(metrics) == {
        f'rocketq_operator_dledger_has_leader{{broker_group="demo-broker-0",{labels}}} 1.0',
        f'rocketq_operator_dledger_has_leader{{broker_group="demo-broker-1",{labels}}} 0.0',
        f'rocketq_operator_dledger_term{{broker_group="demo-broker-0",{labels}}} 3.0',
        f'{lag}{{broker_group="demo-broker-0",{labels},pod="demo-broker-0-0"}} 0.0',
        f'{lag}{{broker_group="demo-broker-0",{labels},pod="demo-broker-0-1"}} 12.0',
    }
    metrics.record_dledger("mq", "demo", [DLedgerSample("demo-broker-0", True, 4, {"demo-broker-0-0": 0})])
    assert sample_lines(metrics) == {
        f'rocketq_operator_dledger_has_leader{{broker_group="demo-broker-0",{labels}}} 1.0',
        f'rocketq_operator_dledger_term{{broker_group="demo-broker-0",{labels}}} 4.0',
        f'{lag}{{broker_group="demo-broker-0",{labels},pod="demo-broker-0-0"}} 0.0',
    }
    metrics.record_dledger("other", "demo", [DLedgerSample("demo-broker-0", True, 1, {})])
    metrics.forget_cluster("mq", "demo")
    assert sample_lines(metrics) == {
        'rocketq_operator_dledger_has_leader{broker_group="demo-broker-0",cluster="demo",namespace="other"} 1.0',
        'rocketq_operator_dledger_term{broker_group="demo-broker-0",cluster="demo",namespace="other"} 1.0',
    }

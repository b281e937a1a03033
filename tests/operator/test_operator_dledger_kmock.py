"""DLedger mode end to end: the real operator against the kmock emulator, Raft played by the fake.

The StatefulSet emulator makes the pods and the fake BrokerAdmin plays each group's Raft
(``FakeBrokerAdmin.play_raft``): a majority of serving members elects the lowest ordinal, a
lost leader is replaced in a new term, and without a majority nobody leads. The operator sees
the groups only through ``dledger_member`` and ``transfer_leadership``, as it would see brokers.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from operator_fakes import COMMIT_INDEX
from operator_harness import OperatorEnv, fast_config
from rocketq_operator import names
from rocketq_operator.brokeradmin import GroupConfig, TopicConfig
from rocketq_operator.rendering import broker, pdb
from test_operator_kmock import as_applied, deleted_pods, phase, printer_columns, rendered_cluster, running

DLEDGER = {"brokers": {"mode": "DLedger", "replicasPerGroup": 3}}


def group_status(env: OperatorEnv, index: int = 0) -> dict[str, Any]:
    return dict(env.status("RocketMQCluster", "demo")["brokerGroups"][index])


def members(leader: int, term: int, lags: dict[int, int] | None = None, group: int = 0) -> list[dict[str, Any]]:
    lags = lags or {}
    return [{"pod": f"demo-broker-{group}-{o}", "selfId": f"n{o}", "role": "LEADER" if o == leader else "FOLLOWER",
             "commitIndex": COMMIT_INDEX - lags.get(o, 0), "lag": lags.get(o, 0)} for o in range(3)]


def address(ordinal: int, group: int = 0) -> str:
    return names.broker_address("demo", "mq", group, ordinal)


def progress(env: OperatorEnv) -> str:
    return str((env.condition("RocketMQCluster", "demo", "Progressing") or {}).get("message", ""))


async def test_a_dledger_cluster_runs_and_reports_leader_term_and_members(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"mode": "DLedger", "replicasPerGroup": 3, "groups": 2}})
    await running(env, "demo")
    cluster = rendered_cluster(env, "demo")
    for index in range(2):
        for obj in (broker.render_broker_configmap(cluster, index, 0), broker.render_broker_statefulset(cluster, index),
                    broker.render_broker_service(cluster, index), pdb.render_broker_pdb(cluster, index)):
            assert as_applied(env.get(obj["kind"], obj["metadata"]["name"])) == obj, obj["metadata"]["name"]
    assert (env.get("PodDisruptionBudget", "demo-broker-0") or {})["spec"]["minAvailable"] == 2
    assert "masterOrdinal" not in (env.get("ConfigMap", "demo-broker-0-config") or {})["data"]

    await env.wait_for(lambda: group_status(env, 1).get("members") == members(0, 1, group=1), "group 1's members")
    assert group_status(env) == {"brokerName": "demo-broker-0", "mode": "DLedger", "leader": "demo-broker-0-0",
                                 "leaderId": "n0", "term": 1, "members": members(0, 1), "readyReplicas": 3,
                                 "replicas": 3}
    body = env.get("RocketMQCluster", "demo")
    assert body is not None
    assert printer_columns(body)["Leaders"] == "demo-broker-0-0,demo-broker-1-0"
    assert env.events("DLedgerGroupNoLeader") == []


async def test_a_roll_restarts_followers_first_then_moves_leadership_away_before_the_leader(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", DLEDGER)
    await running(env, "demo")

    await env.patch("RocketMQCluster", "demo", {"spec": {"image": "rocketq/rocketq:0.2.0"}})
    await env.wait_for(lambda: len(deleted_pods(env)) == 3 and phase(env, "demo") == "Running",
                       "every member to be restarted")
    assert deleted_pods(env) == ["demo-broker-0-2", "demo-broker-0-1", "demo-broker-0-0"]
    # Nobody was restarted while leading: the leader handed over to the caught-up n1 first.
    assert env.sts.restarts == [("demo-broker-0-2", "FOLLOWER"), ("demo-broker-0-1", "FOLLOWER"),
                                ("demo-broker-0-0", "FOLLOWER")]
    assert env.admin.called("transfer_leadership") == [(address(0), "n1")]
    (event,) = env.events("LeadershipTransferred")
    assert event["message"] == ("leadership of demo-broker-0 moved from demo-broker-0-0 to demo-broker-0-1 "
                                "before demo-broker-0-0 restarts")
    await env.wait_for(lambda: group_status(env).get("leader") == "demo-broker-0-1", "status to name n1")
    assert group_status(env)["term"] == 2
    assert env.admin.called("set_broker_permission") == []


async def test_a_roll_waits_for_followers_to_catch_up_and_hands_over_to_the_preferred_leader(
        env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", {"brokers": {"mode": "DLedger", "replicasPerGroup": 3,
                                                             "config": {"preferredLeaderId": "n2"}}})
    await running(env, "demo")
    env.admin.commit_behind[address(1)] = 5000

    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"config": {"fileReservedTime": "24"}}}})
    await env.wait_for(lambda: "demo-broker-0-1 is 5000 entries behind demo-broker-0-0" in progress(env),
                       "the roll to wait for the lagging follower")
    assert deleted_pods(env) == []  # restarting n2 now would leave the leader and a lagging n1
    assert phase(env, "demo") == "Updating"
    assert group_status(env)["members"] == members(0, 1, {1: 5000})

    del env.admin.commit_behind[address(1)]
    await env.wait_for(lambda: len(deleted_pods(env)) == 3 and phase(env, "demo") == "Running",
                       "every member to be restarted")
    assert env.admin.called("transfer_leadership") == [(address(0), "n2")], "the preferred leader"
    assert [role for _pod, role in env.sts.restarts] == ["FOLLOWER"] * 3


async def test_the_operator_never_promotes_it_reports_a_group_without_leader(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", DLEDGER)
    await running(env, "demo")
    await env.wait_for(lambda: (env.get("ConfigMap", "demo-broker-0-config") or {})["metadata"].get(
        "annotations", {}).get("rocketq.io/metadata-synced") == "true", "the group to be seeded")

    env.sts.lost.add("demo-broker-0-0")  # the leader's node is gone: Raft elects n1 by itself
    await env.wait_for(lambda: group_status(env).get("leader") == "demo-broker-0-1", "the new leader in status")
    assert group_status(env)["term"] == 2
    assert group_status(env)["members"][0] == {"pod": "demo-broker-0-0", "selfId": "n0", "role": "UNKNOWN"}

    env.sts.lost.add("demo-broker-0-1")  # one member of three left: no quorum, no leader
    await env.wait_for(lambda: (env.condition("RocketMQCluster", "demo", "Degraded") or {}).get("reason")
                       == "DLedgerGroupNoLeader", "the no-leader condition")
    condition = env.condition("RocketMQCluster", "demo", "Degraded")
    assert condition is not None and condition["status"] == "True"
    assert "DLedger group demo-broker-0 has no leader: 1 of 3 members answer, a leader needs 2" in condition["message"]
    assert phase(env, "demo") == "Degraded"
    assert "leader" not in group_status(env)
    await asyncio.sleep(1.0)  # several passes: told once
    (event,) = env.events("DLedgerGroupNoLeader")
    assert event["type"] == "Warning"

    # Never promoted, fenced or re-identified: no pod deleted, no permission or config touched.
    assert deleted_pods(env) == []
    assert env.admin.called("set_broker_permission") == [] and env.admin.called("transfer_leadership") == []
    assert env.events("Failover") == []
    assert "masterOrdinal" not in (env.get("ConfigMap", "demo-broker-0-config") or {})["data"]

    # A restarted operator finds the problem in the status and does not say it again.
    await env.close()
    again = OperatorEnv(env.server, fast_config(), admin=env.admin)
    again.sts.lost |= env.sts.lost
    await again.start()
    try:
        passes = len(again.operator_requests("GET", "StatefulSet"))
        await again.wait_for(lambda: len(again.operator_requests("GET", "StatefulSet")) >= passes + 10,
                             "the new operator to make a few passes")
        assert len(again.events("DLedgerGroupNoLeader")) == 1

        again.sts.lost.clear()
        await running(again, "demo")
        assert group_status(again)["leader"] in {"demo-broker-0-0", "demo-broker-0-2"}
        assert len(again.events("DLedgerGroupNoLeader")) == 1
    finally:
        await again.close()


async def test_scaling_adds_whole_groups_and_drains_them_before_removal(env: OperatorEnv) -> None:
    await env.create("RocketMQCluster", "demo", DLEDGER)
    await env.create("RocketMQTopic", "orders", {"clusterRef": "demo", "readQueueNums": 4, "writeQueueNums": 4})
    await env.create("RocketMQConsumerGroup", "billing", {"clusterRef": "demo"})
    await running(env, "demo")

    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"groups": 2}}})
    await env.wait_for(lambda: env.get("StatefulSet", "demo-broker-1"), "the new StatefulSet")
    await running(env, "demo")
    assert (env.get("StatefulSet", "demo-broker-1") or {})["spec"]["replicas"] == 3
    assert env.names("Pod") >= {f"demo-broker-1-{o}" for o in range(3)}
    leader1 = address(0, group=1)
    await env.wait_for(lambda: "orders" in env.admin.topics.get(leader1, {}), "the topic on group 1's leader")
    assert env.admin.topics[leader1]["orders"] == TopicConfig("orders", 4, 4)
    assert env.admin.groups[leader1]["billing"] == GroupConfig("billing")

    env.admin.groups[leader1]["billing"] = GroupConfig("billing")
    env.admin.lags[(leader1, "billing")] = 7
    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"groups": 1}}})
    await env.wait_for(lambda: all(env.admin.perms.get(address(o, group=1)) == 4 for o in range(3)),
                       "every member of group 1 to become read-only")
    await env.wait_for(lambda: "demo-broker-1: 7 messages not consumed yet" in progress(env), "the drain to wait")
    assert env.get("StatefulSet", "demo-broker-1") is not None and group_status(env, 1)["draining"] is True

    env.admin.lags[(leader1, "billing")] = 0
    await env.wait_for(lambda: env.get("StatefulSet", "demo-broker-1") is None
                       and env.get("PodDisruptionBudget", "demo-broker-1") is None, "group 1 to be removed")
    status = await running(env, "demo")
    assert [g["brokerName"] for g in status["brokerGroups"]] == ["demo-broker-0"]
    assert all(address(o) not in env.admin.perms for o in range(3))


@pytest.mark.without_admission
async def test_raft_membership_is_not_resized_on_a_running_group(env: OperatorEnv) -> None:
    # The CRD's transition rule refuses this on a real API server; without CEL the operator does.
    await env.create("RocketMQCluster", "demo", DLEDGER)
    await running(env, "demo")
    configmap = env.get("ConfigMap", "demo-broker-0-config")
    await env.patch("RocketMQCluster", "demo", {"spec": {"brokers": {"replicasPerGroup": 5}}})
    await env.wait_for(lambda: (env.condition("RocketMQCluster", "demo", "Degraded") or {}).get("reason")
                       == "ImmutableFieldChange", "ImmutableFieldChange")
    assert "demo-broker-0: spec.brokers.replicasPerGroup cannot change on a running group" in (
        env.condition("RocketMQCluster", "demo", "Degraded") or {})["message"]
    assert (env.get("StatefulSet", "demo-broker-0") or {})["spec"]["replicas"] == 3
    assert (env.get("ConfigMap", "demo-broker-0-config") or {})["data"] == (configmap or {})["data"]
    assert deleted_pods(env) == []

"""``rocketq admin`` commands of ``rocketq.cli.adminruntime`` against a real name server and two
real brokers (``conftest.cluster``): write permissions, queryMsgByOffset, producer/consumer
clients, statistics, runtime broker config."""

from __future__ import annotations

from admin_processes import Cluster
from test_admin_integration import create_topic, eventually, run, run_json, send


def route_perms(cluster: Cluster, topic: str) -> dict[str, int]:
    return {q["brokerName"]: q["perm"] for q in run_json(cluster, "topicRoute", "-t", topic)["queueDatas"]}


def test_wipe_and_add_write_perm_change_only_the_name_servers_routes(cluster: Cluster) -> None:
    create_topic(cluster, "AdmWipe", 2)
    wiped = run(cluster, "wipeWritePerm", "-b", "broker-a").stdout
    assert f"wipe write perm of broker[broker-a] in name server[{cluster.namesrv_addr}] OK" in wiped
    assert route_perms(cluster, "AdmWipe") == {"broker-a": 4, "broker-b": 6}
    added = run_json(cluster, "addWritePerm", "-b", "broker-a")
    assert added["addTopicCount"][cluster.namesrv_addr] >= 1
    assert route_perms(cluster, "AdmWipe") == {"broker-a": 6, "broker-b": 6}


def test_update_topic_perm_on_one_master_and_on_a_cluster(cluster: Cluster) -> None:
    create_topic(cluster, "AdmPerm", 2)
    addr = cluster.brokers["broker-a"].addr
    text = run(cluster, "updateTopicPerm", "-t", "AdmPerm", "-b", addr, "-p", "4").stdout
    assert f"update topic perm from 6 to 4 in {addr} success." in text
    eventually(lambda: route_perms(cluster, "AdmPerm") == {"broker-a": 4, "broker-b": 6})
    again = run(cluster, "updateTopicPerm", "-t", "AdmPerm", "-b", addr, "-p", "4").stdout
    assert "new perm equals to the old one!" in again
    both = run_json(cluster, "updateTopicPerm", "-t", "AdmPerm", "-c", "DefaultCluster", "-p", "6")
    assert sorted(c["oldPerm"] for c in both) == [4, 6] and all(c["changed"] for c in both)
    eventually(lambda: route_perms(cluster, "AdmPerm") == {"broker-a": 6, "broker-b": 6})
    route = run_json(cluster, "topicRoute", "-t", "AdmPerm")
    queues = {q["brokerName"]: q["readQueueNums"] for q in route["queueDatas"]}
    assert queues == {"broker-a": 2, "broker-b": 2}  # the queue counts are kept
    refused = run(cluster, "updateTopicPerm", "-t", "AdmPerm", "-b", "127.0.0.1:1", "-p", "4", code=2)
    assert "not a master" in refused.output


def test_query_msg_by_offset(cluster: Cluster) -> None:
    create_topic(cluster, "AdmByOffset", 1)
    send(cluster, "AdmByOffset", "first", "-b", "broker-b", "-i", "0")
    second = send(cluster, "AdmByOffset", "second", "-b", "broker-b", "-i", "0")
    found = run_json(cluster, "queryMsgByOffset", "-t", "AdmByOffset", "-b", "broker-b", "-i", "0", "-o", "1")
    assert (found["offsetMsgId"], found["queueOffset"]) == (second["offsetMsgId"], 1)
    text = run(cluster, "queryMsgByOffset", "-t", "AdmByOffset", "-b", "broker-b", "-i", "0", "-o", "0").stdout
    assert "first" in text
    missing = run(cluster, "queryMsgByOffset", "-t", "AdmByOffset", "-b", "broker-b", "-i", "0", "-o", "5", code=1)
    assert "no message at offset 5" in missing.output

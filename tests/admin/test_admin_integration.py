"""Every ``rocketq admin`` command against a real name server and two real brokers.

The processes come from ``conftest.cluster`` (one name server, broker-a and broker-b in
DefaultCluster). Commands run through click's CliRunner with ``-n`` pointing at the name server;
each test uses its own topic and group names so the tests do not depend on one another's order.
Brokers register every second, so a route change is awaited with ``eventually`` (a bounded poll,
not a timing assertion).
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import orjson
import pytest
from admin_processes import ROCKETQ, Cluster
from click.testing import CliRunner, Result

from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, ArgumentError
from rocketq.admin.stats import MessageQueue
from rocketq.cli import admin as admin_cli
from rocketq.protocol import headers
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.requests import PullStatus
from rocketq.remoting.client import RemotingClient

T = TypeVar("T")
DEADLINE = 30.0


def run(cluster: Cluster, *args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    command, *rest = args
    result = CliRunner().invoke(admin_cli.command, [command, "-n", cluster.namesrv_addr, *rest], env=env)
    assert result.exit_code == code, f"exit {result.exit_code}:\n{result.output}"
    assert "Traceback" not in result.output
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def run_json(cluster: Cluster, *args: str) -> Any:
    return orjson.loads(run(cluster, *args, "--json").stdout)


def eventually(check: Callable[[], T]) -> T:
    """Poll until ``check`` returns something truthy without raising; bounded by DEADLINE."""
    deadline = time.monotonic() + DEADLINE
    value: T | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except (AssertionError, AdminError):
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            pytest.fail(f"condition never held, last value {value!r}")
        time.sleep(0.1)


def with_admin(cluster: Cluster, work: Callable[[AdminClient], Coroutine[Any, Any, T]]) -> T:
    async def go() -> T:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await work(admin)

    return asyncio.run(go())


def create_topic(cluster: Cluster, topic: str, queues: int = 4) -> None:
    run(cluster, "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", str(queues), "-w", str(queues))
    eventually(lambda: len(run_json(cluster, "topicRoute", "-t", topic)["brokerDatas"]) == 2)


def send(cluster: Cluster, topic: str, body: str, *extra: str) -> dict[str, Any]:
    return dict(run_json(cluster, "sendMessage", "-t", topic, "-p", body, *extra))


def commit(cluster: Cluster, group: str, topic: str, broker: str, queue_id: int, offset: int) -> None:
    """What a consumer does after consuming: UPDATE_CONSUMER_OFFSET to the queue's broker."""
    header = headers.UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id,
                                                      commit_offset=offset)

    async def work(admin: AdminClient) -> None:
        await admin.call(cluster.brokers[broker].addr, RequestCode.UPDATE_CONSUMER_OFFSET, header)

    with_admin(cluster, work)


# --- cluster and brokers ----------------------------------------------------------------------


def test_cluster_list(cluster: Cluster) -> None:
    text = run(cluster, "clusterList").stdout
    assert text.startswith("#Cluster Name")
    assert "broker-a" in text and "broker-b" in text and "ASYNC_MASTER" in text
    data = run_json(cluster, "clusterList", "-c", "DefaultCluster")
    assert sorted(d["brokerName"] for d in data) == ["broker-a", "broker-b"]
    assert all(d["online"] and d["runtime"]["brokerRole"] == "ASYNC_MASTER" for d in data)
    assert "not known" in run(cluster, "clusterList", "-c", "NoSuchCluster", code=2).output


def test_broker_status(cluster: Cluster) -> None:
    addr = cluster.brokers["broker-a"].addr
    text = run(cluster, "brokerStatus", "-b", addr).stdout
    assert "brokerRole" in text and "commitLogMaxOffset" in text
    both = run_json(cluster, "brokerStatus", "-c", "DefaultCluster")
    assert set(both) == {p.addr for p in cluster.brokers.values()}
    run(cluster, "brokerStatus", code=2)


def test_broker_config_read_and_runtime_update(cluster: Cluster) -> None:
    addr = cluster.brokers["broker-b"].addr
    text = run(cluster, "getBrokerConfig", "-b", addr).stdout
    assert f"============{addr}============" in text
    assert run_json(cluster, "getBrokerConfig", "-b", addr)[addr]["brokerName"] == "broker-b"
    try:
        out = run(cluster, "updateBrokerConfig", "-b", addr, "-k", "brokerPermission", "-v", "4").stdout
        assert f"update broker config success, {addr}" in out
        assert run_json(cluster, "getBrokerConfig", "-b", addr)[addr]["brokerPermission"] == "4"
        status = run_json(cluster, "brokerStatus", "-b", addr)
        assert status[addr]["brokerPermission"] == "4"
    finally:
        run(cluster, "updateBrokerConfig", "-c", "DefaultCluster", "-k", "brokerPermission", "-v", "6")
    configs = run_json(cluster, "getBrokerConfig", "-c", "DefaultCluster")
    assert {c["brokerPermission"] for c in configs.values()} == {"6"}
    refused = run(cluster, "updateBrokerConfig", "-b", addr, "-k", "listenPort", "-v", "1", code=1)
    assert "SYSTEM_ERROR" in refused.output and "listenPort" in refused.output
    run(cluster, "updateBrokerConfig", "-b", addr, "-k", "bad key", "-v", "1", code=2)


# --- topics -----------------------------------------------------------------------------------


def test_topic_lifecycle(cluster: Cluster) -> None:
    create_topic(cluster, "AdmTopicLife", 3)
    route = run(cluster, "topicRoute", "-t", "AdmTopicLife").stdout
    assert "broker-a" in route and "broker-b" in route and "RW-" in route
    assert "AdmTopicLife" in run(cluster, "topicList").stdout.splitlines()
    assert "AdmTopicLife" in run_json(cluster, "topicList")
    rows = run_json(cluster, "topicList", "-c")
    assert {"cluster": "DefaultCluster", "topic": "AdmTopicLife", "group": ""} in rows
    status = run_json(cluster, "topicStatus", "-t", "AdmTopicLife")
    assert len(status) == 6 and all(s["maxOffset"] == 0 for s in status)

    out = run(cluster, "deleteTopic", "-t", "AdmTopicLife", "-c", "DefaultCluster").stdout
    assert "delete topic [AdmTopicLife] from NameServer success." in out

    def gone() -> bool:
        result = CliRunner().invoke(admin_cli.command, ["topicRoute", "-n", cluster.namesrv_addr, "-t", "AdmTopicLife"])
        return result.exit_code == 1 and "TOPIC_NOT_EXIST" in result.output

    eventually(gone)
    assert "AdmTopicLife" not in run_json(cluster, "topicList")


def test_update_topic_on_one_broker_with_order(cluster: Cluster) -> None:
    addr = cluster.brokers["broker-a"].addr
    out = run(cluster, "updateTopic", "-b", addr, "-t", "AdmOrdered", "-r", "2", "-w", "2", "-p", "6", "-o", "true")
    assert f"create topic to {addr} success." in out.stdout
    assert "orderConf=[broker-a:2]" in out.stdout
    route = eventually(lambda: run_json(cluster, "topicRoute", "-t", "AdmOrdered"))
    assert [b["brokerName"] for b in route["brokerDatas"]] == ["broker-a"]
    assert route["queueDatas"][0]["writeQueueNums"] == 2

    async def conf(admin: AdminClient) -> str | None:
        return await admin.get_kv_config("ORDER_TOPIC_CONFIG", "AdmOrdered")

    assert with_admin(cluster, conf) == "broker-a:2"


def test_update_topic_needs_a_target_and_valid_values(cluster: Cluster) -> None:
    run(cluster, "updateTopic", "-t", "AdmNoTarget", code=2)
    run(cluster, "updateTopic", "-c", "DefaultCluster", "-t", "AdmBad", "-r", "0", code=2)
    run(cluster, "updateTopic", "-c", "DefaultCluster", "-t", "AdmBad", "-p", "9", code=2)
    run(cluster, "updateTopic", "-b", "nohost", "-t", "AdmBad", code=2)
    assert "not known" in run(cluster, "updateTopic", "-c", "Nope", "-t", "AdmBad", code=2).output


def test_missing_topic_is_a_named_error(cluster: Cluster) -> None:
    result = run(cluster, "topicRoute", "-t", "AdmNoSuchTopic", code=1)
    assert "TOPIC_NOT_EXIST (17)" in result.output
    run(cluster, "topicStatus", "-t", "AdmNoSuchTopic", code=1)


# --- messages ---------------------------------------------------------------------------------


def test_send_then_find_the_message_every_way(cluster: Cluster) -> None:
    create_topic(cluster, "AdmMessages", 2)
    sent = send(cluster, "AdmMessages", "hello admin", "-k", "order-1 order-2", "-c", "TagA",
                "-b", "broker-b", "-i", "1")
    assert sent["sendStatus"] == "SEND_OK" and sent["brokerName"] == "broker-b" and sent["queueId"] == 1
    other = send(cluster, "AdmMessages", "second", "-k", "order-9", "-b", "broker-a")
    assert other["brokerName"] == "broker-a"
    text = run(cluster, "sendMessage", "-t", "AdmMessages", "-p", "third").stdout
    assert text.startswith("#Broker Name") and "SEND_OK" in text

    block = run(cluster, "queryMsgById", "-i", sent["offsetMsgId"]).stdout
    assert "Message Body        : hello admin" in block and "Tags                : [TagA]" in block
    both = run_json(cluster, "queryMsgById", "-i", f"{sent['offsetMsgId']},{other['offsetMsgId']}")
    assert [m["body"] for m in both] == ["hello admin", "second"]

    by_key = run_json(cluster, "queryMsgByKey", "-t", "AdmMessages", "-k", "order-2")
    assert [m["msgId"] for m in by_key] == [sent["msgId"]]
    assert sent["msgId"] in run(cluster, "queryMsgByKey", "-t", "AdmMessages", "-k", "order-1").stdout
    assert run_json(cluster, "queryMsgByKey", "-t", "AdmMessages", "-k", "no-such-key") == []

    unique = run_json(cluster, "queryMsgByUniqueKey", "-t", "AdmMessages", "-i", sent["msgId"])
    assert [(m["body"], m["queueId"]) for m in unique] == [("hello admin", 1)]
    assert "hello admin" in run(cluster, "queryMsgByUniqueKey", "-t", "AdmMessages", "-i", sent["msgId"]).stdout
    by_offset_id = run_json(cluster, "queryMsgByUniqueKey", "-t", "AdmMessages", "-i", other["offsetMsgId"])
    assert [m["body"] for m in by_offset_id] == ["second"]
    missing = run(cluster, "queryMsgByUniqueKey", "-t", "AdmMessages", "-i", "0" * 32, code=1)
    assert "unique key" in missing.output

    status = run_json(cluster, "topicStatus", "-t", "AdmMessages")
    assert sum(s["maxOffset"] - s["minOffset"] for s in status) == 3


def test_query_by_id_refuses_what_is_not_an_id(cluster: Cluster) -> None:
    assert "offset message id" in run(cluster, "queryMsgById", "-i", "XYZ", code=2).output
    run(cluster, "queryMsgById", "-i", ",", code=2)


def test_print_msg(cluster: Cluster) -> None:
    create_topic(cluster, "AdmPrint", 2)
    before = int(time.time() * 1000)
    bodies = [f"print-{i}" for i in range(5)]
    for i, body in enumerate(bodies):
        send(cluster, "AdmPrint", body, "-c", "even" if i % 2 == 0 else "odd")
    text = run(cluster, "printMsg", "-t", "AdmPrint").stdout
    assert sorted(line.split("BODY: ")[1] for line in text.splitlines() if line.startswith("MSGID")) == bodies
    assert text.count("MessageQueue [topic=AdmPrint") == 4

    lines = run(cluster, "printMsg", "-t", "AdmPrint", "--json").stdout.splitlines()
    assert sorted(orjson.loads(line)["body"] for line in lines) == bodies
    evens = [orjson.loads(x)["body"] for x in run(cluster, "printMsg", "-t", "AdmPrint", "-s", "even", "--json")
             .stdout.splitlines()]
    assert sorted(evens) == ["print-0", "print-2", "print-4"]
    ranged = run(cluster, "printMsg", "-t", "AdmPrint", "-b", str(before), "-e", "now", "-d", "false").stdout
    assert ranged.count("MSGID") == 5 and "BODY" not in ranged
    assert run(cluster, "printMsg", "-t", "AdmPrint", "-b", "now", "--json").stdout.strip() == ""
    run(cluster, "printMsg", "-t", "AdmPrint", "-b", "now", "-e", "0", code=2)


def test_print_msg_time_range_includes_its_end_millisecond(cluster: Cluster) -> None:
    create_topic(cluster, "AdmPrintEdge", 1)
    send(cluster, "AdmPrintEdge", "edge")
    stored = orjson.loads(run(cluster, "printMsg", "-t", "AdmPrintEdge", "--json").stdout)["storeTimestamp"]
    at = run(cluster, "printMsg", "-t", "AdmPrintEdge", "-b", str(stored), "-e", str(stored), "--json").stdout
    assert [orjson.loads(line)["body"] for line in at.splitlines()] == ["edge"]
    run(cluster, "printMsg", "-t", "AdmPrint", "-c", "no-such-charset", code=2)


def test_send_to_missing_queue_is_refused(cluster: Cluster) -> None:
    create_topic(cluster, "AdmSendQ", 1)
    result = run(cluster, "sendMessage", "-t", "AdmSendQ", "-p", "x", "-b", "broker-a", "-i", "7", code=1)
    assert "has no writable queue on broker broker-a with id 7" in result.output


# --- groups and offsets -----------------------------------------------------------------------


def test_sub_group_lifecycle(cluster: Cluster) -> None:
    out = run(cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", "AdmGroupLife", "-r", "5", "-d", "true").stdout
    assert out.count("create subscription group to") == 2 and "retryMaxTimes=5" in out

    async def groups(admin: AdminClient) -> list[Any]:
        return [(await admin.all_groups(p.addr)).get("AdmGroupLife") for p in cluster.brokers.values()]

    configs = with_admin(cluster, groups)
    assert all(c is not None and c.retry_max_times == 5 and c.consume_broadcast_enable for c in configs)
    out = run(cluster, "deleteSubGroup", "-c", "DefaultCluster", "-g", "AdmGroupLife", "-r").stdout
    assert out.count("delete subscription group [AdmGroupLife]") == 2
    assert "delete topic [%RETRY%AdmGroupLife]" in out
    assert with_admin(cluster, groups) == [None, None]
    run(cluster, "updateSubGroup", "-g", "AdmGroupLife", code=2)
    run(cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", "bad group", code=2)


def test_consumer_progress_reset_and_clone(cluster: Cluster) -> None:
    create_topic(cluster, "AdmProgress", 2)
    for i in range(6):
        send(cluster, "AdmProgress", f"m{i}", "-b", "broker-a" if i < 4 else "broker-b", "-i", str(i % 2))
    run(cluster, "resetOffsetByTime", "-g", "AdmProg", "-t", "AdmProgress", "-s", "0")
    progress = run_json(cluster, "consumerProgress", "-g", "AdmProg")
    assert progress["diffTotal"] == 6 and len(progress["offsets"]) == 4
    assert "Consume Diff Total: 6" in run(cluster, "consumerProgress", "-g", "AdmProg").stdout

    commit(cluster, "AdmProg", "AdmProgress", "broker-a", 0, 2)
    assert run_json(cluster, "consumerProgress", "-g", "AdmProg", "-t", "AdmProgress")["diffTotal"] == 4

    out = run(cluster, "cloneGroupOffset", "-s", "AdmProg", "-d", "AdmProgCopy", "-t", "AdmProgress").stdout
    assert "clone group offset success" in out
    copy = run_json(cluster, "consumerProgress", "-g", "AdmProgCopy")
    assert copy["diffTotal"] == 4

    reset = run_json(cluster, "resetOffsetByTime", "-g", "AdmProgCopy", "-t", "AdmProgress", "-s", "-1")
    assert {(r["brokerName"], r["queueId"]): r["offset"] for r in reset} == {
        ("broker-a", 0): 2, ("broker-a", 1): 2, ("broker-b", 0): 1, ("broker-b", 1): 1}
    assert run_json(cluster, "consumerProgress", "-g", "AdmProgCopy")["diffTotal"] == 0
    text = run(cluster, "resetOffsetByTime", "-g", "AdmProgCopy", "-t", "AdmProgress",
               "-s", "2000-01-01#00:00:00:000").stdout
    assert text.startswith("rollback consumer offset by specified group[AdmProgCopy]")
    assert run_json(cluster, "consumerProgress", "-g", "AdmProgCopy")["diffTotal"] == 6

    summary = {row["group"]: row for row in run_json(cluster, "consumerProgress")}
    assert summary["AdmProg"]["diffTotal"] == 4 and summary["AdmProg"]["count"] == 0
    assert "AdmProgCopy" in run(cluster, "consumerProgress").stdout
    run(cluster, "consumerProgress", "-t", "AdmProgress", code=2)
    assert "has not consumed" in run(cluster, "consumerProgress", "-g", "AdmNeverSeen", code=1).output


@contextmanager
def online_consumer(cluster: Cluster, group: str, topic: str) -> Iterator[None]:
    """A consumer connection kept open (heartbeat sent) in its own thread and loop."""
    ready, stop = threading.Event(), threading.Event()
    failure: list[BaseException] = []
    body = orjson.dumps({"clientID": "127.0.0.1@admin-test", "producerDataSet": [], "consumerDataSet": [{
        "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
        "subscriptionDataSet": [{"topic": topic, "subString": "TagA || TagB", "tagsSet": ["TagA", "TagB"],
                                 "codeSet": [], "subVersion": 1, "classFilterMode": False, "expressionType": "TAG"}],
    }]})

    async def hold() -> None:
        client = RemotingClient(name="test-consumer")
        try:
            for proc in cluster.brokers.values():
                answer = await client.invoke(proc.addr, RemotingCommand(code=RequestCode.HEART_BEAT, body=body), 5)
                assert answer.code == ResponseCode.SUCCESS, answer.remark
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)
        finally:
            await client.close()

    def main() -> None:
        try:
            asyncio.run(hold())
        except BaseException as exc:  # reported to the test below
            failure.append(exc)
            ready.set()

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    ready.wait(DEADLINE)
    try:
        assert not failure, failure
        yield
    finally:
        stop.set()
        thread.join(DEADLINE)


def test_consumer_connection(cluster: Cluster) -> None:
    create_topic(cluster, "AdmConn", 1)
    offline = run(cluster, "consumerConnection", "-g", "AdmConnGroup", code=1)
    assert "CONSUMER_NOT_ONLINE (206)" in offline.output
    with online_consumer(cluster, "AdmConnGroup", "AdmConn"):
        text = run(cluster, "consumerConnection", "-g", "AdmConnGroup").stdout
        assert "127.0.0.1@admin-test" in text and "TagA || TagB" in text and "CLUSTERING" in text
        data = run_json(cluster, "consumerConnection", "-g", "AdmConnGroup")
        assert [c["clientId"] for c in data["connectionSet"]] == ["127.0.0.1@admin-test"]
        summary = {row["group"]: row for row in run_json(cluster, "consumerProgress")}
        assert summary["AdmConnGroup"]["count"] == 1 and summary["AdmConnGroup"]["messageModel"] == "CLUSTERING"
        rows = run_json(cluster, "topicList", "-c")
        assert {"cluster": "DefaultCluster", "topic": "AdmConn", "group": "AdmConnGroup"} in rows


# --- the client's own surface -----------------------------------------------------------------


def test_kv_config_wipe_and_offsets(cluster: Cluster) -> None:
    create_topic(cluster, "AdmClient", 1)
    sent = send(cluster, "AdmClient", "one", "-b", "broker-a", "-i", "0", "-k", "kv")
    addr = cluster.brokers["broker-a"].addr

    async def work(admin: AdminClient) -> None:
        await admin.put_kv_config("AdmNs", "k", "v")
        assert await admin.get_kv_config("AdmNs", "k") == "v"
        assert await admin.kv_list("AdmNs") == {"k": "v"}
        await admin.delete_kv_config("AdmNs", "k")
        assert await admin.get_kv_config("AdmNs", "k") is None
        assert await admin.wipe_write_perm("no-such-broker") == {cluster.namesrv_addr: 0}
        assert "AdmClient" in await admin.topics_by_cluster("DefaultCluster")
        assert "AdmClient" in await admin.all_topic_config(addr)
        queue = MessageQueue("AdmClient", "broker-a", 0)
        assert await admin.max_offset(addr, "AdmClient", 0) == 1
        assert await admin.min_offset(addr, "AdmClient", 0) == 0
        assert await admin.search_offset(addr, "AdmClient", 0, 0) == 0
        pulled = await admin.pull(addr, queue, 0)
        assert pulled.status is PullStatus.FOUND and [m.body for m in pulled.messages] == [b"one"]
        assert pulled.messages[0].offset_msg_id == sent["offsetMsgId"]
        assert (await admin.pull(addr, queue, 1)).status is PullStatus.NO_NEW_MSG
        assert await admin.query_message(addr, "AdmClient", "absent") == []
        with pytest.raises(AdminError) as refused:
            await admin.view_message(addr, 1 << 40)
        assert refused.value.name == "SYSTEM_ERROR"
        with pytest.raises(ArgumentError):
            await admin.create_topic(addr, TopicConfig("bad topic"))

    with_admin(cluster, work)


def test_namesrv_from_environment_and_failover(cluster: Cluster) -> None:
    result = CliRunner().invoke(admin_cli.command, ["clusterList"], env={"NAMESRV_ADDR": cluster.namesrv_addr})
    assert result.exit_code == 0 and "broker-a" in result.output
    missing = CliRunner().invoke(admin_cli.command, ["clusterList"], env={"NAMESRV_ADDR": None})
    assert missing.exit_code == 2 and "namesrvAddr" in missing.output
    # a dead name server first in the list: the next one answers
    both = f"127.0.0.1:1;{cluster.namesrv_addr}"
    result = CliRunner().invoke(admin_cli.command, ["topicList", "-n", both])
    assert result.exit_code == 0 and "TBW102" in result.output
    dead = CliRunner().invoke(admin_cli.command, ["topicList", "-n", "127.0.0.1:1"])
    assert dead.exit_code == 1 and "RemotingConnectError" in dead.output and "Traceback" not in dead.output
    bad = CliRunner().invoke(admin_cli.command, ["topicList", "-n", "nonsense"])
    assert bad.exit_code == 2 and "host:port" in bad.output


def test_the_installed_command(cluster: Cluster) -> None:
    """``rocketq admin`` as users run it: the console script, a separate process."""
    done = subprocess.run([ROCKETQ, "admin", "clusterList", "-n", cluster.namesrv_addr, "--json"],
                          capture_output=True, timeout=DEADLINE, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert sorted(d["brokerName"] for d in orjson.loads(done.stdout)) == ["broker-a", "broker-b"]
    refused = subprocess.run([ROCKETQ, "admin", "topicRoute", "-n", cluster.namesrv_addr, "-t", "AdmNothing"],
                             capture_output=True, timeout=DEADLINE, check=False)
    assert refused.returncode == 1 and b"TOPIC_NOT_EXIST" in refused.stderr and b"Traceback" not in refused.stderr

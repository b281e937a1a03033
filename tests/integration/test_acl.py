"""ACL against real `rocketq namesrv` + `rocketq broker` processes (aclEnable=true).

Every request code that touches data is sent three ways on raw connections — unsigned, signed
with a wrong secret, signed right — and only the last reaches its handler. The SDK, the admin
client and `rocketq admin` sign when given credentials; a changed plain_acl.yml takes effect
while the broker runs.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from clusterprocs import Processes
from test_sdk_push import FAST, wait_until
from test_sdk_trace import wait_for_trace
from test_startup_errors import assert_one_line_error, broker_args, run
from test_transactions import TX_CONFIG, Answers, Collector

from rocketq.acl import signing
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.client import BrokerError, Message, Producer, PullConsumer, PushConsumer
from rocketq.client.transactionproducer import LocalTransactionState, TransactionProducer
from rocketq.protocol import traces
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.client import RemotingClient

TOPIC = "AclTopic"
DENIED_TOPIC = "DeniedTopic"
APP = ("appAccess", "appSecret1")
ADMIN = ("adminAccess", "adminSecret1")
ACL_FILE = f"""
globalWhiteRemoteAddresses:
accounts:
- accessKey: {APP[0]}
  secretKey: {APP[1]}
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms: [{TOPIC}=PUB|SUB, {DENIED_TOPIC}=DENY]
  groupPerms: [deniedGroup=DENY]
- accessKey: {ADMIN[0]}
  secretKey: {ADMIN[1]}
  admin: true
"""
TIMEOUT = 5.0


@dataclass
class AclCluster:
    namesrv: str
    broker: str
    acl_file: Path


def start(processes: Processes, tmp: Path, config: dict[str, str] | None = None) -> AclCluster:
    acl_file = tmp / "plain_acl.yml"
    acl_file.write_text(ACL_FILE)
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config={"aclEnable": "true", "rocketmq.acl.plain.file": str(acl_file),
                                                  "autoCreateTopicEnable": "false", "traceTopicEnable": "true",
                                                  **(config or {})})
    return AclCluster(ns.address, broker.address, acl_file)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    tmp = tmp_path_factory.mktemp("acl")
    procs = Processes(tmp)
    try:
        made = start(procs, tmp)
        asyncio.run(create_topics(made))
        yield made
    finally:
        procs.stop_all()


async def create_topics(cluster: AclCluster) -> None:
    async with AdminClient(cluster.namesrv, access_key=ADMIN[0], secret_key=ADMIN[1]) as admin:
        for topic in (TOPIC, DENIED_TOPIC, "OtherTopic"):
            await admin.create_topic(cluster.broker, TopicConfig(topic, 4, 4, 6))


@pytest.fixture
async def clients() -> AsyncIterator[dict[str, RemotingClient]]:
    made = {
        "unsigned": RemotingClient(name="acl-unsigned"),
        "wrong": RemotingClient(name="acl-wrong", rpc_hook=signing.Signer(APP[0], "notTheSecret")),
        "app": RemotingClient(name="acl-app", rpc_hook=signing.Signer(*APP)),
        "admin": RemotingClient(name="acl-admin", rpc_hook=signing.Signer(*ADMIN)),
    }
    try:
        yield made
    finally:
        for client in made.values():
            await client.close()


def send_v2(topic: str, group: str = "aclPG") -> dict[str, str]:
    return {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
            "g": str(int(time.time() * 1000)), "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}


def heartbeat(group: str, topic: str) -> bytes:
    return orjson.dumps({"clientID": "127.0.0.1@acl", "producerDataSet": [], "consumerDataSet": [
        {"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
         "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
         "subscriptionDataSet": [{"topic": topic, "subString": "*", "tagsSet": [], "codeSet": [],
                                  "subVersion": 0, "expressionType": "TAG"}]}]})


PULL = {"consumerGroup": "aclCG", "topic": TOPIC, "queueId": "0", "queueOffset": "0", "maxMsgNums": "1",
        "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"}
DATA_REQUESTS: list[tuple[str, int, dict[str, str], bytes]] = [
    ("send v2", RequestCode.SEND_MESSAGE_V2, send_v2(TOPIC), b"hello"),
    ("send v1", RequestCode.SEND_MESSAGE, {"producerGroup": "aclPG", "topic": TOPIC, "defaultTopic": "TBW102",
                                           "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
                                           "bornTimestamp": "0", "flag": "0"}, b"hello"),
    ("pull", RequestCode.PULL_MESSAGE, PULL, b""),
    ("heartbeat", RequestCode.HEART_BEAT, {}, heartbeat("aclCG", TOPIC)),
    ("update offset", RequestCode.UPDATE_CONSUMER_OFFSET,
     {"consumerGroup": "aclCG", "topic": TOPIC, "queueId": "0", "commitOffset": "0"}, b""),
    ("query offset", RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "aclCG", "topic": TOPIC, "queueId": "0"},
     b""),
    ("max offset", RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": "0"}, b""),
    ("query message", RequestCode.QUERY_MESSAGE,
     {"topic": TOPIC, "key": "k", "maxNum": "8", "beginTimestamp": "0", "endTimestamp": "9999999999999"}, b""),
    ("consumer list", RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "aclCG"}, b""),
    ("unregister", RequestCode.UNREGISTER_CLIENT, {"clientID": "127.0.0.1@acl", "consumerGroup": "aclCG"}, b""),
    ("send back", RequestCode.CONSUMER_SEND_MSG_BACK,
     {"group": "aclCG", "offset": "0", "delayLevel": "0", "originTopic": TOPIC}, b""),
]
ADMIN_REQUESTS: list[tuple[str, int, dict[str, str], bytes]] = [
    ("create topic", RequestCode.UPDATE_AND_CREATE_TOPIC,
     {"topic": "AdminMade", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
      "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}, b""),
    ("delete topic", RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "AdminMade"}, b""),
    ("create group", RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, orjson.dumps({"groupName": "adminGroup"})),
    ("delete group", RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "adminGroup"}, b""),
    ("broker config", RequestCode.UPDATE_BROKER_CONFIG, {}, b"brokerPermission=6\n"),
]


async def call(client: RemotingClient, addr: str, code: int, ext: dict[str, str], body: bytes) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand(code=code, ext_fields=dict(ext), body=body), TIMEOUT)


def refused(answer: RemotingCommand, reason: str) -> bool:
    return answer.code == ResponseCode.NO_PERMISSION and (answer.remark or "").endswith(reason)


@pytest.mark.parametrize(("what", "code", "ext", "body"), DATA_REQUESTS + ADMIN_REQUESTS,
                         ids=[r[0] for r in DATA_REQUESTS + ADMIN_REQUESTS])
async def test_unsigned_and_wrongly_signed_requests_are_refused_right_ones_run(
        cluster: AclCluster, clients: dict[str, RemotingClient], what: str, code: int, ext: dict[str, str],
        body: bytes) -> None:
    unsigned = await call(clients["unsigned"], cluster.broker, code, ext, body)
    assert refused(unsigned, "No accessKey is configured"), unsigned
    assert unsigned.remark and unsigned.remark.startswith("org.apache.rocketmq.acl.common.AclException: ")
    wrong = await call(clients["wrong"], cluster.broker, code, ext, body)
    assert refused(wrong, f"Check signature failed for accessKey={APP[0]}"), wrong
    signer = "admin" if (what, code, ext, body) in ADMIN_REQUESTS else "app"
    right = await call(clients[signer], cluster.broker, code, ext, body)
    assert right.code != ResponseCode.NO_PERMISSION, right
    if code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_MESSAGE, RequestCode.HEART_BEAT,
                RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP):
        assert right.code == ResponseCode.SUCCESS, right


@pytest.mark.parametrize(("what", "code", "ext", "body"), ADMIN_REQUESTS, ids=[r[0] for r in ADMIN_REQUESTS])
async def test_admin_codes_need_an_admin_account(cluster: AclCluster, clients: dict[str, RemotingClient],
                                                 what: str, code: int, ext: dict[str, str], body: bytes) -> None:
    answer = await call(clients["app"], cluster.broker, code, ext, body)
    assert refused(answer, f"Need admin permission for request code={code}, but accessKey={APP[0]} is not"), answer


@pytest.mark.parametrize(("code", "ext", "body", "reason"), [
    (RequestCode.SEND_MESSAGE_V2, send_v2(DENIED_TOPIC), b"x", f"No default permission for topic:{DENIED_TOPIC}"),
    (RequestCode.SEND_MESSAGE_V2, send_v2("OtherTopic"), b"x", "No default permission for topic:OtherTopic"),
    (RequestCode.PULL_MESSAGE, {**PULL, "consumerGroup": "deniedGroup"}, b"",
     "No default permission for group:deniedGroup"),
    (RequestCode.PULL_MESSAGE, {**PULL, "topic": DENIED_TOPIC}, b"", f"No default permission for topic:{DENIED_TOPIC}"),
    (RequestCode.HEART_BEAT, {}, heartbeat("aclCG", DENIED_TOPIC), f"No default permission for topic:{DENIED_TOPIC}"),
    (RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "deniedGroup", "topic": TOPIC, "queueId": "0",
                                          "commitOffset": "0"}, b"", "No default permission for group:deniedGroup"),
])
async def test_signed_requests_outside_the_accounts_permissions_are_refused(
        cluster: AclCluster, clients: dict[str, RemotingClient], code: int, ext: dict[str, str], body: bytes,
        reason: str) -> None:
    assert refused(await call(clients["app"], cluster.broker, code, ext, body), reason)


async def test_sdk_clients_with_credentials_work_and_without_are_refused(cluster: AclCluster) -> None:
    async with Producer("aclProducer", namesrv_addr=cluster.namesrv, access_key=APP[0], secret_key=APP[1],
                        enable_msg_trace=True) as good:
        sent = await good.send(Message(TOPIC, b"signed body"))
    async with AdminClient(cluster.namesrv, access_key=ADMIN[0], secret_key=ADMIN[1]) as admin:
        assert await wait_for_trace(admin, sent.msg_id, 1, traces.DEFAULT_TRACE_TOPIC)  # the trace producer signs too
    async with Producer("aclStranger", namesrv_addr=cluster.namesrv, retry_times_when_send_failed=0) as bad:
        with pytest.raises(BrokerError, match="No accessKey is configured"):
            await bad.send(Message(TOPIC, b"unsigned"))
    async with PullConsumer("aclPuller", namesrv_addr=cluster.namesrv, access_key=APP[0],
                            secret_key=APP[1]) as consumer:
        result = await consumer.pull(sent.message_queue, "*", sent.queue_offset, max_nums=1)
    assert [m.body for m in result.messages] == [b"signed body"]


async def test_push_consumers_and_transactions_sign_every_request_check_backs_included(tmp_path: Path) -> None:
    procs = Processes(tmp_path)
    try:
        made = start(procs, tmp_path, TX_CONFIG)
        await create_topics(made)
        credentials = {"access_key": APP[0], "secret_key": APP[1]}
        answers = Answers(LocalTransactionState.UNKNOWN, LocalTransactionState.COMMIT)
        collector = Collector()
        push = PushConsumer("aclPushGroup", namesrv_addr=made.namesrv, **credentials, **FAST)
        push.subscribe(TOPIC, "*")
        push.register_listener(collector)
        async with TransactionProducer("aclTxGroup", answers, namesrv_addr=made.namesrv, topics=[TOPIC],
                                       heartbeat_broker_interval=1000, **credentials) as producer, push:
            now = await producer.send_message_in_transaction(Message(TOPIC, b"commit-now"),
                                                             arg=LocalTransactionState.COMMIT)
            later = await producer.send_message_in_transaction(Message(TOPIC, b"decided-by-check-back"))
            assert later.local_transaction_state is LocalTransactionState.UNKNOW
            # the answer to the broker's check goes back on its connection: it must be signed too
            await wait_until(lambda: {b"commit-now", b"decided-by-check-back"} <= set(collector.bodies()))
    finally:
        procs.stop_all()
    assert now.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
    assert len(answers.checked) >= 1
    assert "ACL refused" not in next(tmp_path.glob("broker-a-*.log")).read_text()


def test_rocketq_admin_signs_with_the_credentials_it_is_given(cluster: AclCluster) -> None:
    base = [sys.executable, "-m", "rocketq", "admin", "updateTopic", "-n", cluster.namesrv, "-b", cluster.broker]
    plain = subprocess.run([*base, "-t", "CliTopic"], capture_output=True, text=True, timeout=60)
    assert plain.returncode != 0 and "No accessKey is configured" in plain.stderr
    signed = subprocess.run([*base, "-t", "CliTopic", "--accessKey", ADMIN[0], "--secretKey", ADMIN[1]],
                            capture_output=True, text=True, timeout=60)
    assert signed.returncode == 0, signed.stderr


async def test_a_changed_file_takes_effect_while_the_broker_runs(tmp_path: Path) -> None:
    procs = Processes(tmp_path)
    try:
        made = start(procs, tmp_path)
        await create_topics(made)
        client = RemotingClient(name="acl-reload", rpc_hook=signing.Signer(*APP))
        try:
            before = await call(client, made.broker, RequestCode.SEND_MESSAGE_V2, send_v2("OtherTopic"), b"x")
            assert refused(before, "No default permission for topic:OtherTopic")
            made.acl_file.write_text(ACL_FILE.replace(f"{DENIED_TOPIC}=DENY", "OtherTopic=PUB"))
            deadline = time.monotonic() + 10
            while True:
                after = await call(client, made.broker, RequestCode.SEND_MESSAGE_V2, send_v2("OtherTopic"), b"x")
                if after.code == ResponseCode.SUCCESS or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert after.code == ResponseCode.SUCCESS, after
            made.acl_file.write_text("accounts: [broken")  # a broken file keeps the accounts it had
            await asyncio.sleep(1.5)
            again = await call(client, made.broker, RequestCode.SEND_MESSAGE_V2, send_v2("OtherTopic"), b"x")
            assert again.code == ResponseCode.SUCCESS, again
        finally:
            await client.close()
    finally:
        procs.stop_all()
    assert "keeping the previous accounts" in next(tmp_path.glob("broker-a-*.log")).read_text()


@pytest.mark.parametrize(("content", "phrase"), [
    (None, "cannot read"),
    ("accounts:\n- {accessKey: short, secretKey: 12345678}\n", "accounts[0].accessKey"),
])
def test_a_broker_with_an_unusable_acl_file_exits_2_naming_it(tmp_path: Path, content: str | None,
                                                              phrase: str) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    if content is not None:
        acl_file.write_text(content)
    result = run(*broker_args(tmp_path / "store", "--set", "aclEnable=true",
                              "--set", f"rocketmq.acl.plain.file={acl_file}"), timeout=30)
    assert_one_line_error(result, 2, str(acl_file), phrase)


def test_acl_without_a_file_location_is_a_configuration_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ROCKETMQ_HOME"}
    result = subprocess.run([sys.executable, "-m", "rocketq", *broker_args(tmp_path / "store", "--set",
                                                                          "aclEnable=true")],
                            capture_output=True, text=True, timeout=30, env=env, stdin=subprocess.DEVNULL)
    assert_one_line_error(result, 2, "rocketmq.acl.plain.file")

"""ACL on the gRPC endpoint: MQv2-HMAC-SHA1 signatures checked against plain_acl.yml accounts,
and the proxy in front of brokers that have ACL on too (its own remoting calls signed), in
CLUSTER mode (``rocketq proxy``) and LOCAL mode (``grpcServerPort`` in an ACL broker's conf)."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
import yaml
from clusterprocs import Processes
from proxycluster import FAST_BROKER, create_topics, wait_until
from pyclient import RECEIVE_TRIES, PyClient, PyClientError

from rocketq.acl import plainacl
from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.local.ports import free_port
from rocketq.proxy import auth
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

ACCOUNTS = {"accounts": [
    {"accessKey": "rocketmq2", "secretKey": "12345678", "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
     "topicPerms": ["GrpcNormal=PUB|SUB"]},
]}
DATE = "20261124T203000Z"


def config() -> plainacl.AclConfig:
    return plainacl.parse(yaml.safe_dump(ACCOUNTS))


def headers(ak: str = "rocketmq2", sk: str = "12345678", date: str = DATE) -> dict[str, str]:
    value = f"MQv2-HMAC-SHA1 Credential={ak}, SignedHeaders=x-mq-date-time, Signature={auth.sign(sk, date)}"
    return {"authorization": value, "x-mq-date-time": date}


def refusal(metadata: dict[str, str]) -> int:
    with pytest.raises(ProxyError) as err:
        auth.authenticate(config(), metadata, "10.0.0.9")
    return err.value.code


def test_a_good_signature_names_the_account_and_bad_ones_are_unauthorized() -> None:
    account = auth.authenticate(config(), headers(), "10.0.0.9")
    assert account is not None and account.access_key == "rocketmq2"
    assert refusal(headers(sk="wrong-secret")) == Code.UNAUTHORIZED
    assert refusal(headers(ak="nobody12")) == Code.UNAUTHORIZED
    assert refusal({"x-mq-date-time": DATE}) == Code.UNAUTHORIZED
    assert refusal({"authorization": "Basic abc"}) == Code.UNAUTHORIZED
    signed_other_time = headers()
    signed_other_time["x-mq-date-time"] = "20261124T203001Z"
    assert refusal(signed_other_time) == Code.UNAUTHORIZED


def test_credential_scope_after_a_slash_is_ignored() -> None:
    value = headers()["authorization"].replace("Credential=rocketmq2", "Credential=rocketmq2/20261124/region")
    assert auth.authenticate(config(), {**headers(), "authorization": value}, "10.0.0.9") is not None


def test_topic_and_group_permissions() -> None:
    account = auth.authenticate(config(), headers(), "10.0.0.9")
    auth.authorize(account, {"GrpcNormal": 4})
    with pytest.raises(ProxyError) as err:
        auth.authorize(account, {"OtherTopic": 4})
    assert err.value.code == Code.FORBIDDEN


def test_what_heartbeats_terminations_and_settings_need() -> None:
    group, topic = pb.Resource(name="cg1"), pb.Resource(name="T1")
    assert auth.heartbeat_needs(pb.ClientType.SIMPLE_CONSUMER, group) == {"%RETRY%cg1": 8}
    assert auth.heartbeat_needs(pb.ClientType.PRODUCER, group) == {}
    assert auth.group_needs(pb.Resource()) == {}
    publishing = pb.Settings(publishing=pb.Publishing(topics=[topic, pb.Resource(name="T2")]))
    assert auth.settings_needs(publishing) == {"T1": 4, "T2": 4}
    subscription = pb.Settings(subscription=pb.Subscription(
        group=group, subscriptions=[pb.SubscriptionEntry(topic=topic)]))
    assert auth.settings_needs(subscription) == {"%RETRY%cg1": 8, "T1": 8}
    assert auth.settings_needs(pb.Settings()) == {}


@pytest.mark.parametrize(("peer", "ip"), [("ipv4:127.0.0.1:5000", "127.0.0.1"), ("ipv6:[::1]:5000", "::1")])
def test_peer_ip(peer: str, ip: str) -> None:
    assert auth.peer_ip(peer) == ip


# --- a proxy in front of ACL brokers (real processes, the official Python client) -------------

PROXY_ACCOUNT = ("rocketmq2", "12345678")
"""The proxy's own account: admin with no resource list, so the brokers let it do anything (as
RocketMQ's shipped tools.yml account); the test's admin client creates topics with it too."""
PRODUCER = ("grpcProducer", "producerSecret")
CONSUMER = ("grpcConsumer", "consumerSecret")
CONSUMER_GROUP = "acl-cg"
BROKER_ACCOUNTS = {"accounts": [
    {"accessKey": PROXY_ACCOUNT[0], "secretKey": PROXY_ACCOUNT[1], "admin": True},
    {"accessKey": PRODUCER[0], "secretKey": PRODUCER[1], "defaultTopicPerm": "DENY", "defaultGroupPerm": "DENY",
     "topicPerms": ["GrpcNormal=PUB"]},
    {"accessKey": CONSUMER[0], "secretKey": CONSUMER[1], "defaultTopicPerm": "DENY", "defaultGroupPerm": "DENY",
     "topicPerms": ["GrpcNormal=SUB"], "groupPerms": [f"{CONSUMER_GROUP}=SUB"]},
]}
FORBIDDEN = "40300"


@dataclass
class AclCluster:
    endpoint: str
    """A proxy that checks clients and signs its calls to the brokers."""
    unsigned_endpoint: str
    """A proxy that does neither (a misconfiguration): the brokers must refuse what it forwards."""
    tmp: pathlib.Path
    clients: list[PyClient]
    namesrv: str = ""

    def client(self, credentials: tuple[str, str], endpoint: str | None = None) -> PyClient:
        c = PyClient(endpoint or self.endpoint, self.tmp / f"client-{len(self.clients)}", credentials)
        self.clients.append(c)
        return c


def acl_broker_config(tmp: pathlib.Path) -> dict[str, str]:
    accounts = tmp / "plain_acl.yml"
    accounts.write_text(yaml.safe_dump(BROKER_ACCOUNTS))
    return {**FAST_BROKER, "aclEnable": "true", "rocketmq.acl.plain.file": str(accounts)}


def start_proxy(procs: Processes, namesrv: str, conf: pathlib.Path, values: dict[str, object]) -> str:
    conf.write_text(json.dumps(values))
    port = free_port()
    procs.start(["proxy", "-n", namesrv, "--grpc-port", str(port), "-c", str(conf)], conf.stem)
    return f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    tmp = tmp_path_factory.mktemp("proxy-acl")
    procs = Processes(tmp)
    clients: list[PyClient] = []
    try:
        ns = procs.namesrv()
        config = acl_broker_config(tmp)
        broker = procs.broker(ns.address, config=config)
        asyncio.run(create_topics(ns.address, broker.address, PROXY_ACCOUNT))
        # the account as RocketMQ's tools.yml holds it, read through rocketq's key for its path
        tools = tmp / "tools.yml"
        tools.write_text(yaml.safe_dump({"accessKey": PROXY_ACCOUNT[0], "secretKey": PROXY_ACCOUNT[1]}))
        signed = start_proxy(procs, ns.address, tmp / "proxy-signed.json", {
            "aclEnable": True, "rocketmq.acl.plain.file": config["rocketmq.acl.plain.file"],
            "enableAclRpcHookForClusterMode": True, "innerClientCredentialsFile": str(tools)})
        unsigned = start_proxy(procs, ns.address, tmp / "proxy-unsigned.json", {})
        yield AclCluster(signed, unsigned, tmp, clients, ns.address)
    finally:
        for c in clients:
            c.close()
        procs.stop_all()


def produce_and_consume(producer: PyClient, consumer: PyClient, body: str) -> None:
    """``producer`` sends one message to GrpcNormal, ``consumer`` (group acl-cg) receives and acks it."""
    producer.call("producer", topics=["GrpcNormal"])
    sent = producer.call("send", topic="GrpcNormal", body=body)["id"]
    consumer.call("consumer", group=CONSUMER_GROUP, topic="GrpcNormal", await_s=5)
    got: list[dict[str, object]] = []
    for _ in range(RECEIVE_TRIES):
        got += consumer.call("receive", n=8, invisible_s=30)["messages"]
        if got:
            break
    assert [(m["id"], m["body"]) for m in got] == [(sent, body)]
    consumer.call("ack", id=sent)


def test_permitted_producer_and_consumer_work_through_the_signing_proxy(acl_cluster: AclCluster) -> None:
    produce_and_consume(acl_cluster.client(PRODUCER), acl_cluster.client(CONSUMER), "through ACL brokers")


def test_a_v2_consumer_is_registered_with_acl_brokers_through_the_signing_proxy(acl_cluster: AclCluster) -> None:
    consumer = acl_cluster.client(CONSUMER)
    consumer.call("consumer", group=CONSUMER_GROUP, topic="GrpcNormal", await_s=5)
    client_id = consumer.call("client_ids")["consumer"]

    async def listed() -> list[str]:
        async with AdminClient(acl_cluster.namesrv, access_key=PROXY_ACCOUNT[0], secret_key=PROXY_ACCOUNT[1]) as admin:
            try:
                conn = await cluster_ops.consumer_connection(admin, CONSUMER_GROUP)
            except AdminError:
                return []
            return [c.client_id for c in conn.connections]
    # its heartbeats go on its own broker connection, signed with the proxy's account like every call
    wait_until(lambda: client_id in asyncio.run(listed()), timeout=30)


def route_code(endpoint: str, account: tuple[str, str]) -> int:
    """The status code of a QueryRoute for GrpcNormal signed with ``account`` (the Python client
    only says its route failed, not why)."""
    with grpc.insecure_channel(endpoint) as channel:
        answer = grpc_v2.MessagingServiceStub(channel).QueryRoute(
            spb.QueryRouteRequest(topic=pb.Resource(name="GrpcNormal")),
            metadata=(("x-mq-client-id", "acl-test@1"), *headers(*account).items()), timeout=10)
    return int(answer.status.code)


def settings_code(endpoint: str, account: tuple[str, str], settings: pb.Settings) -> int:
    """The status a Telemetry stream answers to ``settings`` signed with ``account``."""
    with grpc.insecure_channel(endpoint) as channel:
        replies = grpc_v2.MessagingServiceStub(channel).Telemetry(
            iter([spb.TelemetryCommand(settings=settings)]),
            metadata=(("x-mq-client-id", "acl-test@2"), *headers(*account).items()), timeout=10)
        return int(next(replies).status.code)


def test_telemetry_settings_need_the_rights_they_announce(acl_cluster: AclCluster) -> None:
    topic = pb.Resource(name="GrpcNormal")
    publishing = pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=pb.Publishing(topics=[topic]))
    assert settings_code(acl_cluster.endpoint, PRODUCER, publishing) == Code.OK
    assert settings_code(acl_cluster.endpoint, CONSUMER, publishing) == Code.FORBIDDEN
    subscribing = pb.Settings(client_type=pb.ClientType.SIMPLE_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name=CONSUMER_GROUP), subscriptions=[pb.SubscriptionEntry(topic=topic)]))
    assert settings_code(acl_cluster.endpoint, CONSUMER, subscribing) == Code.OK
    subscribing.subscription.group.name = "other-cg"
    assert settings_code(acl_cluster.endpoint, CONSUMER, subscribing) == Code.FORBIDDEN


def test_a_wrong_secret_is_unauthorized(acl_cluster: AclCluster) -> None:
    assert route_code(acl_cluster.endpoint, PRODUCER) == Code.OK
    assert route_code(acl_cluster.endpoint, (PRODUCER[0], "not-the-secret")) == Code.UNAUTHORIZED
    assert route_code(acl_cluster.endpoint, ("nobody123", "not-the-secret")) == Code.UNAUTHORIZED
    bad = acl_cluster.client((PRODUCER[0], "not-the-secret"))
    with pytest.raises(PyClientError):  # at start-up or at the send: the client fetches routes in the background
        bad.call("producer", topics=["GrpcNormal"])
        bad.call("send", topic="GrpcNormal", body="refused")


def test_an_account_added_to_the_file_is_known_to_the_proxy_without_a_restart(acl_cluster: AclCluster) -> None:
    newcomer = ("lateJoiner", "lateSecret")
    assert route_code(acl_cluster.endpoint, newcomer) == Code.UNAUTHORIZED
    accounts = acl_cluster.tmp / "plain_acl.yml"
    data = yaml.safe_load(accounts.read_text())
    data["accounts"].append({"accessKey": newcomer[0], "secretKey": newcomer[1], "topicPerms": ["GrpcNormal=SUB"]})
    accounts.write_text(yaml.safe_dump(data))
    wait_until(lambda: route_code(acl_cluster.endpoint, newcomer) == Code.OK, timeout=30)


def test_an_account_without_pub_on_the_topic_cannot_send(acl_cluster: AclCluster) -> None:
    consumer_account = acl_cluster.client(CONSUMER)
    consumer_account.call("producer", topics=["GrpcNormal"])  # its route: SUB is enough to ask it
    with pytest.raises(PyClientError, match=FORBIDDEN):
        consumer_account.call("send", topic="GrpcNormal", body="no PUB")


def test_an_account_without_sub_on_the_group_cannot_receive(acl_cluster: AclCluster) -> None:
    consumer = acl_cluster.client(CONSUMER)
    consumer.call("consumer", group="other-cg", topic="GrpcNormal", await_s=5)
    with pytest.raises(PyClientError, match=FORBIDDEN):
        consumer.call("receive", n=8, invisible_s=30)


def test_a_proxy_that_does_not_sign_gets_no_success_from_acl_brokers(acl_cluster: AclCluster) -> None:
    client = acl_cluster.client(PRODUCER, acl_cluster.unsigned_endpoint)
    client.call("producer", topics=["GrpcNormal"])  # routes come from the name server, which has no ACL
    # The broker refuses the proxy's unsigned calls: its send (40300), and before it the topic
    # config read, so the route accepts no message type and the client refuses to send at all.
    with pytest.raises(PyClientError, match=f"{FORBIDDEN}|queue accept message types"):
        client.call("send", topic="GrpcNormal", body="unsigned")


def test_local_mode_in_a_broker_with_acl(tmp_path: pathlib.Path) -> None:
    procs = Processes(tmp_path)
    clients: list[PyClient] = []
    try:
        ns = procs.namesrv()
        grpc_port = free_port()
        broker = procs.broker(ns.address, config={**acl_broker_config(tmp_path), "grpcServerPort": str(grpc_port)})
        asyncio.run(create_topics(ns.address, broker.address, PROXY_ACCOUNT))
        endpoint = f"127.0.0.1:{grpc_port}"
        for i, account in enumerate((PRODUCER, CONSUMER, (PRODUCER[0], "not-the-secret"))):
            clients.append(PyClient(endpoint, tmp_path / f"client-{i}", account))
        producer, consumer, bad = clients
        produce_and_consume(producer, consumer, "local with ACL")
        with pytest.raises(PyClientError, match=FORBIDDEN):
            producer.call("consumer", group=CONSUMER_GROUP, topic="GrpcNormal", await_s=5)
            producer.call("receive", n=8, invisible_s=30)
        assert route_code(endpoint, (PRODUCER[0], "not-the-secret")) == Code.UNAUTHORIZED
        with pytest.raises(PyClientError):
            bad.call("producer", topics=["GrpcNormal"])
            bad.call("send", topic="GrpcNormal", body="refused")
    finally:
        for c in clients:
            c.close()
        procs.stop_all()

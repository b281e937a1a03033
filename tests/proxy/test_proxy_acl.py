"""ACL on the gRPC endpoint: MQv2-HMAC-SHA1 signatures checked against plain_acl.yml accounts."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Iterator

import pytest
import yaml
from clusterprocs import Processes
from pyclient import PyClient, PyClientError

from conftest import create_topics
from rocketq.acl import plainacl
from rocketq.local.ports import free_port
from rocketq.proxy import auth
from rocketq.proxy.status import Code, ProxyError

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


@pytest.mark.parametrize(("peer", "ip"), [("ipv4:127.0.0.1:5000", "127.0.0.1"), ("ipv6:[::1]:5000", "::1")])
def test_peer_ip(peer: str, ip: str) -> None:
    assert auth.peer_ip(peer) == ip


@pytest.fixture
def acl_proxy(tmp_path: pathlib.Path) -> Iterator[tuple[str, pathlib.Path]]:
    procs = Processes(tmp_path)
    try:
        ns = procs.namesrv()
        broker = procs.broker(ns.address)
        asyncio.run(create_topics(ns.address, broker.address))
        accounts = tmp_path / "plain_acl.yml"
        accounts.write_text(yaml.safe_dump(ACCOUNTS))
        conf = tmp_path / "rmq-proxy.json"
        conf.write_text(json.dumps({"aclEnable": True, "rocketmq.acl.plain.file": str(accounts)}))
        port = free_port()
        procs.start(["proxy", "-n", ns.address, "--grpc-port", str(port), "-c", str(conf)], "proxy")
        yield f"127.0.0.1:{port}", tmp_path
    finally:
        procs.stop_all()


def test_the_python_client_signs_and_a_wrong_secret_is_refused(acl_proxy: tuple[str, pathlib.Path]) -> None:
    endpoint, tmp = acl_proxy
    good = PyClient(endpoint, tmp / "good", ("rocketmq2", "12345678"))
    bad = PyClient(endpoint, tmp / "bad", ("rocketmq2", "not-the-secret"))
    try:
        good.call("producer", topics=["GrpcNormal"])
        assert good.call("send", topic="GrpcNormal", body="signed")["id"]
        with pytest.raises(PyClientError, match="GrpcFifo"):  # its route is FORBIDDEN to this account
            good.call("send", topic="GrpcFifo", body="not allowed")
        with pytest.raises(PyClientError):
            bad.call("producer", topics=["GrpcNormal"])
            bad.call("send", topic="GrpcNormal", body="refused")
    finally:
        good.close()
        bad.close()

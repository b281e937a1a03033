"""The operator's proxy pod for a cluster with ``spec.acl``, run in front of a real ACL broker.

The cluster is the trial example with ``acl.secretName`` set. The ACL Secret is laid out as its
volume mount would be (``plain_acl.yml`` and the proxy's ``tools.yml``), the broker runs with the
ACL keys of its rendered broker.conf and the proxy with its rendered rmq-proxy.json and command,
the only substitutions being the mount paths, the gRPC port and NAMESRV_ADDR (as in
test_operator_pod_proxy.py). A signed send through the proxy reaches the broker (so the proxy
signs its broker calls with the Secret's account); a wrong secret is UNAUTHORIZED and an
account without PUB is FORBIDDEN.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from rocketq_operator.rendering import brokerconf
from rocketq_operator.rendering import proxy as proxy_rendering
from rocketq_operator.spec import Cluster

from e2e.renderedpods import example_cluster, run_broker, run_namesrv, wait_ready
from e2e.test_operator_pod_proxy import STOP_TIMEOUT_S, TOPIC, _create_topic, _mount_configmap, _pod_process
from rocketq.local.ports import free_port
from rocketq.proxy import auth
from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

ADMIN = ("rocketmq2", "12345678")
"""The account of the Secret's tools.yml (the proxy's) and of the test's topic creation."""
SENDER = ("orderSender", "senderSecret")
READER = ("orderReader", "readerSecret")
ACCOUNTS = {"accounts": [
    {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
    {"accessKey": SENDER[0], "secretKey": SENDER[1], "defaultTopicPerm": "DENY", "topicPerms": [f"{TOPIC}=PUB"]},
    {"accessKey": READER[0], "secretKey": READER[1], "defaultTopicPerm": "DENY", "topicPerms": [f"{TOPIC}=SUB"]},
]}
DATE = "20261124T233000Z"


def _cluster() -> Cluster:
    trial = example_cluster("trial-cluster.yaml")
    return dataclasses.replace(trial, spec=dataclasses.replace(trial.spec, acl_secret_name="trial-acl"))


@pytest.fixture
def acl_mount(tmp_path: Path) -> Path:
    """The ACL Secret's keys as files, where its volume would mount them."""
    mount = tmp_path / "etc-rocketq-acl"
    mount.mkdir()
    (mount / "plain_acl.yml").write_text(yaml.safe_dump(ACCOUNTS))
    (mount / "tools.yml").write_text(yaml.safe_dump({"accessKey": ADMIN[0], "secretKey": ADMIN[1]}))
    return mount


def _mounted(value: str, mount: Path) -> str:
    return value.replace(brokerconf.ACL_DIR, str(mount))


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[str]:
    yield from run_namesrv(tmp_path)


@pytest.fixture
def broker(tmp_path: Path, namesrv: str, acl_mount: Path) -> Iterator[str]:
    rendered = brokerconf.broker_settings(_cluster(), 0)
    acl = {key: _mounted(rendered[key], acl_mount) for key in ("aclEnable", brokerconf.ACL_FILE_KEY)}
    yield from run_broker(tmp_path, namesrv, _cluster().meta.name, "trial-broker-0", acl)


def _metadata(account: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    value = (f"{auth.ALGORITHM} Credential={account[0]}, SignedHeaders={auth.DATE_TIME}, "
             f"Signature={auth.sign(account[1], DATE)}")
    return (("x-mq-client-id", "pod-acl-test@1"), (auth.AUTHORIZATION, value), (auth.DATE_TIME, DATE))


def _message(body: bytes) -> pb.Message:
    return pb.Message(topic=pb.Resource(name=TOPIC), body=body, system_properties=pb.SystemProperties(
        message_id="01ACL0000000000000000000001", message_type=pb.NORMAL, body_encoding=pb.IDENTITY))


async def test_the_rendered_proxy_pod_signs_its_calls_to_acl_brokers_and_checks_clients(
        namesrv: str, broker: str, acl_mount: Path, tmp_path: Path) -> None:
    cluster = _cluster()
    await _create_topic(namesrv, broker, ADMIN)
    deployment = proxy_rendering.render_proxy_deployment(cluster)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "acl", "mountPath": brokerconf.ACL_DIR, "readOnly": True} in container["volumeMounts"]
    port = free_port()
    mount = tmp_path / "etc-rocketq"
    config = _mount_configmap(proxy_rendering.render_proxy_configmap(cluster), mount, port)
    (mount / proxy_rendering.CONFIG_KEY).write_text(_mounted(json.dumps(config), acl_mount))
    log = tmp_path / "proxy.log"
    proc = _pod_process(container, mount, namesrv, log)
    try:
        wait_ready(proc, log)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = grpc_v2.MessagingServiceStub(channel)
            sent = await stub.SendMessage(spb.SendMessageRequest(messages=[_message(b"signed")]),
                                          metadata=_metadata(SENDER), timeout=10)
            assert sent.status.code == Code.OK, sent.status
            assert sent.entries[0].offset >= 0
            wrong = await stub.SendMessage(spb.SendMessageRequest(messages=[_message(b"x")]),
                                           metadata=_metadata((SENDER[0], "not-the-secret")), timeout=10)
            assert wrong.status.code == Code.UNAUTHORIZED, wrong.status
            reader = await stub.SendMessage(spb.SendMessageRequest(messages=[_message(b"x")]),
                                            metadata=_metadata(READER), timeout=10)
            assert reader.status.code == Code.FORBIDDEN, reader.status
    finally:
        proc.terminate()
        assert proc.wait(STOP_TIMEOUT_S) == 0, log.read_text(errors="replace")

"""TLS on the gRPC endpoint (``tls.server.mode=enforcing``): a test-mode self-signed certificate,
PEM files, the official Python client over TLS, plaintext refused, bad files stopping the start."""

from __future__ import annotations

import asyncio
import json
import pathlib
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from clusterprocs import Proc, Processes
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from proxycluster import create_topics
from pyclient import PyClient

from rocketq.local.ports import free_port
from rocketq.proxy import settings as proxy_settings
from rocketq.proxy import tls
from rocketq.proxy.settings import ProxySettings
from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2
from rocketq.settings import SettingsError

ID = (("x-mq-client-id", "tls-test@1"),)
CALL_TIMEOUT_S = 20.0
ENFORCING = {"tls.server.mode": "enforcing"}


@dataclass
class TlsCluster:
    namesrv: Proc
    test_mode: Proc
    """A proxy serving a certificate it made itself (tlsTestModeEnable, RocketMQ's default)."""
    files: Proc
    """A proxy serving cert.pem / key.pem (tlsTestModeEnable=false)."""
    cert: pathlib.Path
    tmp: pathlib.Path


def _start_proxy(procs: Processes, tmp: pathlib.Path, ns: str, name: str, config: dict[str, object]) -> Proc:
    conf = tmp / f"{name}.json"
    conf.write_text(json.dumps(config))
    proxy = procs.start(["proxy", "-n", ns, "--grpc-port", str(free_port()), "-c", str(conf)], name)
    proxy.address = proxy.address.replace("0.0.0.0", "127.0.0.1")
    return proxy


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsCluster]:
    tmp = tmp_path_factory.mktemp("tls")
    pair = tls.self_signed(("localhost", "127.0.0.1"))
    (tmp / "cert.pem").write_bytes(pair.cert_pem)
    (tmp / "key.pem").write_bytes(pair.key_pem)
    procs = Processes(tmp)
    try:
        ns = procs.namesrv()
        broker = procs.broker(ns.address)
        asyncio.run(create_topics(ns.address, broker.address))
        test_mode = _start_proxy(procs, tmp, ns.address, "proxy-test-mode", ENFORCING)
        files = _start_proxy(procs, tmp, ns.address, "proxy-files", {
            **ENFORCING, "tlsTestModeEnable": False, "tlsCertPath": str(tmp / "cert.pem"),
            "tlsKeyPath": str(tmp / "key.pem")})
        yield TlsCluster(ns, test_mode, files, tmp / "cert.pem", tmp)
    finally:
        procs.stop_all()


def served_certificate(endpoint: str) -> bytes:
    """The certificate the port presents (PEM), read without trusting it; ALPN h2 as gRPC clients offer."""
    host, port = endpoint.rsplit(":", 1)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    with socket.create_connection((host, int(port)), timeout=CALL_TIMEOUT_S) as raw, \
            context.wrap_socket(raw, server_hostname=host) as wrapped:
        der = wrapped.getpeercert(binary_form=True)
    assert der is not None
    return ssl.DER_cert_to_PEM_cert(der).encode()


async def query_route(channel: grpc.aio.Channel, endpoint: str) -> spb.QueryRouteResponse:
    host, port = endpoint.rsplit(":", 1)
    dialled = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))])
    stub = grpc_v2.MessagingServiceStub(channel)
    answer: spb.QueryRouteResponse = await stub.QueryRoute(
        spb.QueryRouteRequest(topic=pb.Resource(name="GrpcNormal"), endpoints=dialled), metadata=ID,
        timeout=CALL_TIMEOUT_S)
    return answer


async def test_a_test_mode_endpoint_answers_over_tls_with_its_own_certificate_as_root(
        tls_cluster: TlsCluster) -> None:
    endpoint = tls_cluster.test_mode.address
    root = served_certificate(endpoint)
    assert root != tls_cluster.cert.read_bytes()  # made by the proxy, not the files' certificate
    async with grpc.aio.secure_channel(endpoint, grpc.ssl_channel_credentials(root)) as channel:
        answer = await query_route(channel, endpoint)
    assert answer.status.code == Code.OK
    assert {a.port for q in answer.message_queues for a in q.broker.endpoints.addresses} == {
        int(endpoint.rsplit(":", 1)[1])}
    assert "certificate SHA-256" in tls_cluster.test_mode.log.read_text()


async def test_a_plaintext_client_to_a_tls_port_fails_with_unavailable(tls_cluster: TlsCluster) -> None:
    endpoint = tls_cluster.files.address
    async with grpc.aio.insecure_channel(endpoint) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await query_route(channel, endpoint)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_client_that_does_not_trust_the_certificate_is_refused(tls_cluster: TlsCluster) -> None:
    endpoint = tls_cluster.test_mode.address  # its certificate is not cert.pem
    trusting_other = grpc.ssl_channel_credentials(tls_cluster.cert.read_bytes())
    async with grpc.aio.secure_channel(endpoint, trusting_other) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await query_route(channel, endpoint)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE


def test_the_official_python_client_sends_and_receives_over_tls(tls_cluster: TlsCluster) -> None:
    client = PyClient(tls_cluster.files.address, tls_cluster.tmp / "pyclient-tls", trust=tls_cluster.cert)
    try:
        sent, got = client.send_and_receive("GrpcNormal", "tls-cg", "over tls")
        assert [(m["id"], m["body"]) for m in got] == [(sent, "over tls")]
        client.call("ack", id=sent)
    finally:
        client.close()


def _start_fails(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocketq", *args], capture_output=True, text=True, timeout=60)


def _proxy_with(tmp: pathlib.Path, config: dict[str, object]) -> subprocess.CompletedProcess[str]:
    conf = tmp / "rmq-proxy.json"
    conf.write_text(json.dumps(config))
    return _start_fails(["proxy", "-n", "127.0.0.1:1", "--grpc-port", "0", "-c", str(conf)])


def test_a_missing_certificate_file_stops_the_proxy_with_exit_2(tmp_path: pathlib.Path) -> None:
    done = _proxy_with(tmp_path, {**ENFORCING, "tlsTestModeEnable": "false",
                                  "tlsCertPath": str(tmp_path / "nope.crt"), "tlsKeyPath": str(tmp_path / "k")})
    assert done.returncode == 2, done.stderr
    assert f"tlsCertPath {tmp_path / 'nope.crt'}: cannot read" in done.stderr


def test_a_key_of_another_certificate_stops_the_proxy_with_exit_2(tmp_path: pathlib.Path) -> None:
    one, other = tls.self_signed(("localhost",)), tls.self_signed(("localhost",))
    (tmp_path / "c.pem").write_bytes(one.cert_pem)
    (tmp_path / "k.pem").write_bytes(other.key_pem)
    done = _proxy_with(tmp_path, {**ENFORCING, "tlsTestModeEnable": False, "tlsCertPath": str(tmp_path / "c.pem"),
                                  "tlsKeyPath": str(tmp_path / "k.pem")})
    assert done.returncode == 2, done.stderr
    assert "is not the private key of tlsCertPath" in done.stderr


def test_a_file_that_is_not_pem_stops_the_proxy_with_exit_2(tmp_path: pathlib.Path) -> None:
    pair = tls.self_signed(("localhost",))
    (tmp_path / "c.pem").write_text("not a certificate\n")
    (tmp_path / "k.pem").write_bytes(pair.key_pem)
    done = _proxy_with(tmp_path, {**ENFORCING, "tlsTestModeEnable": False, "tlsCertPath": str(tmp_path / "c.pem"),
                                  "tlsKeyPath": str(tmp_path / "k.pem")})
    assert done.returncode == 2 and "not a PEM certificate" in done.stderr, done.stderr


def test_permissive_mode_is_refused_rather_than_guessed(tmp_path: pathlib.Path) -> None:
    done = _proxy_with(tmp_path, {"tls.server.mode": "permissive"})
    assert done.returncode == 2 and "either TLS or plaintext" in done.stderr, done.stderr


def test_a_broker_with_a_bad_tls_file_stops_before_serving(tmp_path: pathlib.Path) -> None:
    done = _start_fails(["broker", "-n", "127.0.0.1:1", "--store-dir", str(tmp_path / "s"), "-p", "0",
                         "--metrics-port", "-1", "--set", "grpcServerPort=0", "--set", "tls.server.mode=enforcing",
                         "--set", "tlsTestModeEnable=false", "--set", f"tlsCertPath={tmp_path / 'nope.crt'}",
                         "--set", f"tlsKeyPath={tmp_path / 'nope.key'}"])
    assert done.returncode == 2, done.stderr
    assert "tlsCertPath" in done.stderr and "listening" not in done.stdout


def test_a_broker_serves_its_local_endpoint_over_tls(tmp_path: pathlib.Path) -> None:
    procs = Processes(tmp_path)
    try:
        ns = procs.namesrv()
        grpc_port = free_port()
        broker = procs.broker(ns.address, config={"grpcServerPort": str(grpc_port), **ENFORCING})
        asyncio.run(create_topics(ns.address, broker.address))
        endpoint = f"127.0.0.1:{grpc_port}"

        async def ask() -> spb.QueryRouteResponse:
            credentials = grpc.ssl_channel_credentials(served_certificate(endpoint))
            async with grpc.aio.secure_channel(endpoint, credentials) as channel:
                return await query_route(channel, endpoint)

        assert asyncio.run(ask()).status.code == Code.OK
    finally:
        procs.stop_all()


# --- the settings and the key pair, without processes ------------------------------------------

def _settings(**values: str) -> ProxySettings:
    return proxy_settings.load({"namesrvAddr": "127.0.0.1:9876", **values})[0]


def test_tls_is_off_by_default_and_the_mode_is_read_in_any_case() -> None:
    assert not _settings().tls_enabled and tls.key_pair(_settings(), ("localhost",)) is None
    assert _settings(**{"tls.server.mode": "ENFORCING"}).tls_enabled
    with pytest.raises(SettingsError, match="expected one of disabled, permissive, enforcing"):
        _settings(**{"tls.server.mode": "on"})


def test_the_test_mode_certificate_names_the_hosts_and_matches_its_key(tmp_path: pathlib.Path) -> None:
    pair = tls.key_pair(_settings(**ENFORCING), ("localhost", "127.0.0.1", "broker-0.example", "127.0.0.1"))
    assert pair is not None
    names = x509.load_pem_x509_certificate(pair.cert_pem).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "broker-0.example"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    (tmp_path / "c.pem").write_bytes(pair.cert_pem)
    (tmp_path / "k.pem").write_bytes(pair.key_pem)
    assert tls.read_pair(tmp_path / "c.pem", tmp_path / "k.pem") == pair  # the files check accepts it


def test_files_default_to_rocketmqs_place_under_rocketmq_home(tmp_path: pathlib.Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    files_mode = _settings(**ENFORCING, tlsTestModeEnable="false")
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    with pytest.raises(SettingsError, match="set tlsCertPath or ROCKETMQ_HOME"):
        tls.key_pair(files_mode, ("localhost",))
    monkeypatch.setenv("ROCKETMQ_HOME", str(tmp_path))
    with pytest.raises(SettingsError, match=f"tlsCertPath {tmp_path / 'conf/tls/rocketmq.crt'}: cannot read"):
        tls.key_pair(files_mode, ("localhost",))


def test_an_encrypted_key_is_refused_by_name(tmp_path: pathlib.Path) -> None:
    pair = tls.self_signed(("localhost",))
    key = serialization.load_pem_private_key(pair.key_pem, password=None)
    (tmp_path / "c.pem").write_bytes(pair.cert_pem)
    (tmp_path / "k.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.BestAvailableEncryption(b"secret")))
    with pytest.raises(SettingsError, match="not an unencrypted PEM private key"):
        tls.read_pair(tmp_path / "c.pem", tmp_path / "k.pem")

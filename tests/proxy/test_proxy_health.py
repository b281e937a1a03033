"""``rocketq proxy health``: the exec probe for TLS proxies, run as the kubelet runs it (a child
process, judged by its exit code) against real ``rocketq proxy`` processes, one serving a
CA-signed certificate that names only a Service (as a pod's certificate does), one plaintext."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from clusterprocs import Proc, Processes
from testcerts import issue

from rocketq.local.ports import free_port
from rocketq.proxy import healthcheck

PROBE_TIMEOUT_S = 60.0
UNREACHABLE_NAMESRV = "127.0.0.1:1"
"""The proxy serves its health service without brokers (calls then answer in-band errors)."""
SERVICE_NAME = "demo-proxy.mq.svc"


@dataclass
class Proxies:
    tls: Proc
    plaintext: Proc


def _port(proc: Proc) -> int:
    return int(proc.address.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxies]:
    tmp = tmp_path_factory.mktemp("health")
    issued = issue((SERVICE_NAME, f"*.{SERVICE_NAME}"))
    (tmp / "tls.crt").write_bytes(issued.cert_pem + issued.ca_pem)  # a chain, as cert-manager writes tls.crt
    (tmp / "tls.key").write_bytes(issued.key_pem)
    (tmp / "tls.json").write_text(json.dumps({
        "tls.server.mode": "enforcing", "tlsTestModeEnable": False,
        "tlsCertPath": str(tmp / "tls.crt"), "tlsKeyPath": str(tmp / "tls.key")}))
    procs = Processes(tmp)
    try:
        tls = procs.start(["proxy", "-n", UNREACHABLE_NAMESRV, "--grpc-port", str(free_port()),
                           "-c", str(tmp / "tls.json")], "proxy-tls")
        plaintext = procs.start(["proxy", "-n", UNREACHABLE_NAMESRV, "--grpc-port", str(free_port())],
                                "proxy-plaintext")
        yield Proxies(tls, plaintext)
    finally:
        procs.stop_all()


def probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocketq", "proxy", "health", *args], capture_output=True,
                          text=True, timeout=PROBE_TIMEOUT_S)


def test_a_tls_proxy_is_serving_over_tls(proxies: Proxies) -> None:
    done = probe("--port", str(_port(proxies.tls)), "--tls")
    assert (done.returncode, done.stdout.strip()) == (0, "SERVING"), done.stderr


def test_the_messaging_service_is_serving_by_name_and_an_unknown_name_is_not(proxies: Proxies) -> None:
    port = str(_port(proxies.tls))
    assert probe("--port", port, "--tls", "--service", "apache.rocketmq.v2.MessagingService").returncode == 0
    unknown = probe("--port", port, "--tls", "--service", "nope")
    assert unknown.returncode == 1 and "NOT_FOUND" in unknown.stderr, unknown.stderr


def test_plaintext_to_a_tls_port_fails_the_probe(proxies: Proxies) -> None:
    done = probe("--port", str(_port(proxies.tls)), "--timeout", "3")
    assert done.returncode == 1 and "UNAVAILABLE" in done.stderr, done.stderr


def test_a_plaintext_proxy_passes_without_tls_and_fails_with_it(proxies: Proxies) -> None:
    port = str(_port(proxies.plaintext))
    assert probe("--port", port).returncode == 0
    done = probe("--port", port, "--tls", "--timeout", "3")
    assert done.returncode == 1 and "no TLS handshake" in done.stderr, done.stderr


def test_a_closed_port_fails_the_probe() -> None:
    done = probe("--port", str(free_port()), "--tls", "--timeout", "3")
    assert done.returncode == 1 and "no TLS handshake" in done.stderr, done.stderr


def test_the_probe_fails_once_the_proxy_stopped(tmp_path: pathlib.Path) -> None:
    procs = Processes(tmp_path)
    try:
        proxy = procs.start(["proxy", "-n", UNREACHABLE_NAMESRV, "--grpc-port", str(free_port())], "proxy")
        assert probe("--port", str(_port(proxy))).returncode == 0
        proxy.stop()
        assert probe("--port", str(_port(proxy)), "--timeout", "3").returncode == 1
    finally:
        procs.stop_all()


# --- the name the call is made under, without processes -----------------------------------------

@pytest.mark.parametrize(("hosts", "common", "expected"), [
    ((SERVICE_NAME, "10.0.0.7"), "x", SERVICE_NAME),
    (("*.mq.svc",), "x", f"{healthcheck.WILDCARD_STAND_IN}.mq.svc"),
    (("10.0.0.7", "::1"), "x", "10.0.0.7"),
    ((), "proxy.example", "proxy.example"),
])
def test_the_call_names_a_host_the_certificate_carries(hosts: tuple[str, ...], common: str, expected: str) -> None:
    assert healthcheck.name_in(issue(hosts, common).cert_pem) == expected

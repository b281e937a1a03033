"""The TLS proxy pod as the operator renders it (``spec.proxy.tls``), run as a real process.

The trial cluster's proxy with ``tls.secretName``: a CA-issued certificate for the proxy's Service
(and 127.0.0.1, the address this test dials) stands in for the Secret. The Secret's two keys are
laid out as its volume mount would lay them out, the ConfigMap's rmq-proxy.json as its mount
would, and the container's exact command runs with the pod's environment in front of a real name
server and broker. Then the probes run as the kubelet would run them (a TCP connect for startup
and readiness, the liveness exec command), and the official ``rocketmq-python-client`` sends and
receives over TLS, trusting only the CA. Substituted, as in ``test_operator_pod_proxy.py``: the
mount paths, the gRPC port and NAMESRV_ADDR; and the exec's ``python`` is this interpreter.
"""

from __future__ import annotations

import base64
import json
import pathlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from rocketq_operator import proxytls
from rocketq_operator.rendering import proxy as proxy_rendering
from rocketq_operator.spec import Cluster, ProxyTlsMode, ProxyTlsSpec

from e2e.renderedpods import example_cluster, run_broker, run_namesrv, wait_ready
from e2e.test_operator_pod_proxy import STOP_TIMEOUT_S, TOPIC, _create_topic, _pod_process
from rocketq.local.ports import free_port

_PROXY_TESTS = pathlib.Path(__file__).resolve().parents[1] / "tests" / "proxy"
if str(_PROXY_TESTS) not in sys.path:
    sys.path.insert(0, str(_PROXY_TESTS))

from pyclient import PyClient  # noqa: E402 - the official client's driver, shared with tests/proxy
from testcerts import issue  # noqa: E402

SECRET = "trial-proxy-tls"
SERVICE_HOST = "trial-proxy.rocketq-trial.svc"
PROBE_TIMEOUT_S = 60.0


def _cluster() -> Cluster:
    cluster = example_cluster("trial-cluster.yaml")
    tls = ProxyTlsSpec(SECRET, ProxyTlsMode.ENFORCING)
    return replace(cluster, spec=replace(cluster.spec, proxy=replace(cluster.spec.proxy, tls=tls)))


@pytest.fixture
def namesrv(tmp_path: pathlib.Path) -> Iterator[str]:
    yield from run_namesrv(tmp_path)


@pytest.fixture
def broker(tmp_path: pathlib.Path, namesrv: str) -> Iterator[str]:
    yield from run_broker(tmp_path, namesrv, _cluster().meta.name, "trial-broker-0")


def _mount_secret(volume: dict[str, Any], data: dict[str, str], mount: pathlib.Path) -> None:
    """The Secret volume's items as the kubelet writes them: each key decoded into its path."""
    mount.mkdir(parents=True)
    for item in volume["secret"]["items"]:
        (mount / item["path"]).write_bytes(base64.b64decode(data[item["key"]]))


def _mount_configmap(configmap: dict[str, Any], mount: pathlib.Path, tls_mount: pathlib.Path, port: int) -> None:
    """rmq-proxy.json as mounted, with this machine's port and the Secret's mount in place of TLS_DIR."""
    mount.mkdir(parents=True)
    config = json.loads(configmap["data"][proxy_rendering.CONFIG_KEY])
    assert config["tlsCertPath"].startswith(proxy_rendering.TLS_DIR)
    config = {key: value.replace(proxy_rendering.TLS_DIR, str(tls_mount)) if isinstance(value, str) else value
              for key, value in config.items()}
    config["grpcServerPort"] = port
    (mount / proxy_rendering.CONFIG_KEY).write_text(json.dumps(config))


def _tcp_probe(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def _exec_probe(command: list[str], rendered_port: int, port: int) -> subprocess.CompletedProcess[str]:
    assert command[0] == "python" and str(rendered_port) in command
    args = [sys.executable, *(str(port) if arg == str(rendered_port) else arg for arg in command[1:])]
    return subprocess.run(args, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)


async def test_the_rendered_tls_proxy_pod_passes_its_probes_and_serves_the_official_client_over_tls(
        namesrv: str, broker: str, tmp_path: pathlib.Path) -> None:
    cluster = _cluster()
    await _create_topic(namesrv, broker)
    issued = issue((SERVICE_HOST, "127.0.0.1"))
    data = {"tls.crt": base64.b64encode(issued.cert_pem + issued.ca_pem).decode(),
            "tls.key": base64.b64encode(issued.key_pem).decode()}
    digest = proxytls.check({"data": data}, SECRET)
    assert isinstance(digest, str), digest

    template = proxy_rendering.render_proxy_deployment(cluster, digest)["spec"]["template"]
    (container,) = template["spec"]["containers"]
    (volume,) = [v for v in template["spec"]["volumes"] if v["name"] == proxy_rendering.TLS_VOLUME]
    rendered_port = container["ports"][0]["containerPort"]
    port = free_port()
    tls_mount, config_mount = tmp_path / "etc-rocketq-tls", tmp_path / "etc-rocketq"
    _mount_secret(volume, data, tls_mount)
    _mount_configmap(proxy_rendering.render_proxy_configmap(cluster), config_mount, tls_mount, port)
    log = tmp_path / "proxy.log"
    proc = _pod_process(container, config_mount, namesrv, log)
    try:
        assert wait_ready(proc, log).endswith(f":{port}")
        for probe in ("startupProbe", "readinessProbe"):
            assert container[probe]["tcpSocket"] == {"port": rendered_port}
            _tcp_probe(port)
        liveness = _exec_probe(container["livenessProbe"]["exec"]["command"], rendered_port, port)
        assert (liveness.returncode, liveness.stdout.strip()) == (0, "SERVING"), liveness.stderr

        (tmp_path / "ca.crt").write_bytes(issued.ca_pem)
        client = PyClient(f"127.0.0.1:{port}", tmp_path / "pyclient", trust=tmp_path / "ca.crt")
        try:
            sent, got = client.send_and_receive(TOPIC, "tls-pod-cg", "through the rendered TLS pod")
            assert [(m["id"], m["body"]) for m in got] == [(sent, "through the rendered TLS pod")]
            client.call("ack", id=sent)
        finally:
            client.close()
        assert "serves TLS" in log.read_text(errors="replace")
    finally:
        proc.terminate()
        assert proc.wait(STOP_TIMEOUT_S) == 0, log.read_text(errors="replace")

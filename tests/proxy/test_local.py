"""LOCAL mode: `grpcServerPort` in broker.conf serves RocketMQ 5 clients from the broker process."""

from __future__ import annotations

import asyncio
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest
from clusterprocs import Processes, scrape_metrics
from proxycluster import create_topics
from pyclient import PyClient

from rocketq.local.ports import free_port
from rocketq.metrics import announcing


@pytest.fixture
def processes(tmp_path: pathlib.Path) -> Iterator[Processes]:
    procs = Processes(tmp_path)
    try:
        yield procs
    finally:
        procs.stop_all()


def test_a_broker_with_grpc_server_port_serves_the_python_client(processes: Processes,
                                                                 tmp_path: pathlib.Path) -> None:
    ns = processes.namesrv()
    grpc_port = free_port()
    broker = processes.broker(ns.address, config={"grpcServerPort": str(grpc_port)})
    asyncio.run(create_topics(ns.address, broker.address))
    client = PyClient(f"127.0.0.1:{grpc_port}", tmp_path / "pyclient")
    try:
        sent, got = client.send_and_receive("GrpcNormal", "local-cg", "local")
        assert [(m["id"], m["body"]) for m in got] == [(sent, "local")]
        client.call("ack", id=sent)
    finally:
        client.close()
    assert "ignoring broker.conf keys" not in broker.log.read_text()
    metrics_port = announcing.find_port(broker.log.read_text())
    assert metrics_port is not None
    samples = scrape_metrics(metrics_port)  # the endpoint's series are on the broker's /metrics
    assert ({"proxy_mode": "LOCAL", "cluster": "DefaultCluster"}, 1.0) in samples["rocketmq_proxy_up"]
    assert ({"method": "SendMessage", "code": "OK"}, 1.0) in samples["rocketmq_proxy_rpc_total"]


def test_grpc_server_port_without_a_name_server_stops_the_broker_at_start(tmp_path: pathlib.Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rocketq", "broker", "--store-dir", str(tmp_path / "s"),
                           "-p", "0", "--metrics-port", "-1", "--set", "grpcServerPort=0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "grpcServerPort needs namesrvAddr" in done.stderr

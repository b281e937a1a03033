"""Replication state is visible: runtime info, brokerStatus, clusterList and /metrics."""

from __future__ import annotations

import asyncio
import time
import urllib.request

from click.testing import CliRunner
from clusterprocs import Processes
from haprocs import runtime, start_pair, wait_replicated
from prometheus_client.parser import text_string_to_metric_families

from rocketq.cli import admin as admin_cli
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.local.ports import free_port


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name.startswith("rocketmq_replication")}


def admin(namesrv: str, *args: str) -> str:
    result = CliRunner().invoke(admin_cli.command, [args[0], "-n", namesrv, *args[1:]])
    assert result.exit_code == 0, result.output
    return result.output


async def send(namesrv: str, count: int) -> None:
    async with Producer("state-pg", namesrv_addr=namesrv) as producer:
        for i in range(count):
            await producer.send(Message("StateIT", b"s%d" % i))


def test_runtime_info_admin_and_metrics_show_replication(procs: Processes) -> None:
    ns = procs.namesrv()
    metrics_port = free_port()
    master, slave = start_pair(procs, ns.address, metrics_port=metrics_port)
    asyncio.run(send(ns.address, 20))
    slave_info = asyncio.run(wait_replicated(master, slave))
    assert slave_info["masterAddr"] == master.address
    assert slave_info["haClientState"] == "transferring" and slave_info["haInSync"] == "true"
    master_info = asyncio.run(runtime(master.address))
    assert master_info["haConnectionCount"] == "1"
    assert master_info["haSlaveAckOffset"] == master_info["commitLogMaxOffset"]
    assert master_info["haBehindBytes"] == "0"
    metrics = scrape(metrics_port)
    assert metrics["rocketmq_replication_connections"] == 1 and metrics["rocketmq_replication_in_sync"] == 1
    assert metrics["rocketmq_replication_lag_bytes"] == 0
    assert "haInSync" in admin(ns.address, "brokerStatus", "-b", slave.address)
    listing = admin(ns.address, "clusterList")
    assert "1 slave, 0 B behind" in listing and "in sync" in listing
    slave.proc.stop()
    deadline = time.monotonic() + 20
    while asyncio.run(runtime(master.address))["haConnectionCount"] != "0":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert scrape(metrics_port)["rocketmq_replication_in_sync"] == 0
    assert "no slave" in admin(ns.address, "clusterList")

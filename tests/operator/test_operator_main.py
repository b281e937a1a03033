"""``kopf run -m rocketq_operator.main`` as a real process, against the kmock API emulator.

The operator process logs in with a kubeconfig that points at the emulator (kopf's own login
through the kubernetes client), creates the children of a cluster, serves /metrics and
/healthz, and writes JSON log lines. It is stopped by its handle.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import kmock
import pytest
from admin_processes import free_port
from operator_harness import ApiServer, OperatorEnv, declare_resources

pytestmark = pytest.mark.slow

KOPF = str(Path(sys.executable).with_name("kopf"))
STOP_TIMEOUT = 20


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    async with ApiServer() as api, kmock.Server(api):
        declare_resources(api)
        yield api


async def test_kopf_run_main_reconciles_and_serves_metrics(server: ApiServer, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "emulator",
        "clusters": [{"name": "emulator", "cluster": {"server": str(server.url)}}],
        "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "nobody"}}],
        "users": [{"name": "nobody", "user": {"token": "test"}}],
    }))
    port = free_port()
    log = tmp_path / "operator.log"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "ROCKETQ_OPERATOR_METRICS_PORT": str(port),
           "ROCKETQ_OPERATOR_RECONCILE_INTERVAL": "0.5", "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as sink:
        process = subprocess.Popen([KOPF, "run", "-m", "rocketq_operator.main", "--all-namespaces"],
                                   stdout=sink, stderr=subprocess.STDOUT, env=env)
    try:
        helper = OperatorEnv(server, config=None)  # only its API helpers; no operator started here
        await helper.create("RocketMQCluster", "demo", {})
        await helper.wait_for(lambda: helper.get("StatefulSet", "demo-broker-0"), "the broker StatefulSet",
                              timeout=60)
        assert helper.get("StatefulSet", "demo-namesrv") is not None
        await helper.wait_for(lambda: helper.status("RocketMQCluster", "demo").get("phase") == "Creating",
                              "status from the operator process", timeout=60)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                metrics = await response.text()
            async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 200
        assert 'rocketq_operator_reconciles_total{kind="RocketMQCluster",result="ok"}' in metrics
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(process.wait, STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)
    lines = log.read_text().splitlines()
    assert lines, "the operator logged nothing"
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert any(r.get("message", "").startswith("Serving /metrics") for r in records)

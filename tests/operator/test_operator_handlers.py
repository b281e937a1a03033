"""The glue between kopf and the reconcilers: passes over one object never overlap, and a
periodic pass starts from the cluster as it is once it may run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from operator_fakes import FakeBrokerAdmin
from rocketq_operator import handlers, runtime
from rocketq_operator.metrics import DLedgerSample, Metrics
from test_operator_applying import MemoryApi

KEY = ("RocketMQCluster", "mq", "demo")


async def test_a_periodic_pass_reads_the_cluster_only_once_it_holds_the_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read before waiting, a tick would reconcile the spec a change handler had just replaced,
    and put the old children back (an image change rolled back, then forward again)."""
    api = MemoryApi()
    api.objects[KEY] = {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster",
                        "metadata": {"name": "demo", "namespace": "mq"}, "spec": {"image": "old"}}
    seen: list[str] = []

    async def reconcile(_ctx: Any, body: Any) -> dict[str, Any]:
        seen.append(body["spec"]["image"])
        return {"phase": "Running"}

    monkeypatch.setattr(handlers.reconciler, "reconcile", reconcile)
    rt = runtime.Runtime(api=api, admin=FakeBrokerAdmin(), config=runtime.OperatorConfig(metrics_port=0),
                         metrics=Metrics())
    lock = rt.lock(*KEY)
    await lock.acquire()  # a change handler's pass is under way
    tick = asyncio.create_task(handlers._tick_cluster(rt, "mq", "demo"))
    await asyncio.sleep(0.05)
    api.objects[KEY]["spec"]["image"] = "new"
    lock.release()
    await tick
    assert seen == ["new"]
    assert api.objects[KEY]["status"] == {"phase": "Running"}
    assert api.writes[-1] == ("patch", "demo", {"status": {"phase": "Running"}})


def test_a_deleted_cluster_leaves_no_dledger_series() -> None:
    metrics = Metrics()
    rt = runtime.Runtime(api=MemoryApi(), admin=FakeBrokerAdmin(), config=runtime.OperatorConfig(metrics_port=0),
                         metrics=metrics)
    sample = DLedgerSample("demo-broker-0", True, 2, {"demo-broker-0-1": 3})
    metrics.record_dledger("mq", "demo", [sample])
    rt.forget("RocketMQTopic", "mq", "demo")  # a topic of the same name is not the cluster
    assert b"rocketq_operator_dledger_term{" in metrics.exposition()
    rt.forget(*KEY)
    assert [line for line in metrics.exposition().splitlines() if line.startswith(b"rocketq_operator_dledger")] == []

"""The `make run` workload: a local cluster, a real produce/consume run, and what happened.

Starts one name server and two broker groups as processes (``LocalCluster``), creates a topic
with 8 queues on both masters, starts a clustering PushConsumer, then sends the requested number
of 1 KiB messages with batched and with plain sync sends across both brokers. It waits until the
consumer has seen every message, then prints counts (sent, failed, received, duplicates, missing),
throughput of each phase, and send and end-to-end latency percentiles. When PySpark and
``rocketq_spark`` are installed (the ``analytics`` extra), it then runs the consumer_lag Spark job
in local mode on the cluster and prints its report, and finally stops the cluster.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.cluster import cluster_masters
from rocketq.bench.loadgen import ConsumerBench, ProducerBench, ProducerResult, SendMode
from rocketq.local.cluster import ClusterLayout, LocalCluster

TOPIC = "DemoTopic"
GROUP = "demo_consumer"


@dataclass(frozen=True)
class DemoPlan:
    messages: int = 100_000
    size: int = 1024
    sync_share: float = 0.2
    """Fraction of the messages sent with plain sync sends; the rest go in batches of 32."""
    timeout: float = 300.0


def _say(text: str) -> None:
    print(text, flush=True)


async def _create_topic(namesrv: str) -> list[str]:
    async with AdminClient(namesrv) as admin:
        masters = cluster_masters(await admin.cluster_info(), "DefaultCluster")
        for addr in masters:
            await admin.create_topic(addr, TopicConfig(TOPIC, 8, 8))
    return masters


async def _workload(namesrv: str, plan: DemoPlan) -> bool:
    masters = await _create_topic(namesrv)
    _say(f"topic {TOPIC}: 8 queues on each of {len(masters)} brokers ({', '.join(masters)})")
    quiet = lambda _line: None  # noqa: E731 - the per-second lines would drown the summary
    consumer_bench = ConsumerBench(namesrv, TOPIC, GROUP, expected=plan.messages, report=quiet)
    consumer = await consumer_bench.start()
    sync_count = int(plan.messages * plan.sync_share)
    phases: list[tuple[str, ProducerResult]] = []
    started = time.perf_counter()
    batch = ProducerBench(namesrv, TOPIC, size=plan.size, concurrency=8, mode=SendMode.BATCH, batch_size=32,
                          total=plan.messages - sync_count, report=quiet, group="demo_producer_batch")
    phases.append(("batched sends (32/batch, 8 in flight)", await batch.run()))
    sync = ProducerBench(namesrv, TOPIC, size=plan.size, concurrency=32, mode=SendMode.SYNC, total=sync_count,
                         report=quiet, group="demo_producer_sync", first_seq=plan.messages - sync_count)
    phases.append(("sync sends (32 in flight)", await sync.run()))
    sent = sum(r.sent for _n, r in phases)
    failed = sum(r.failed for _n, r in phases)
    _say(f"\nproduced {sent} messages of {plan.size} B in {time.perf_counter() - started:.1f}s, {failed} failed")
    for name, r in phases:
        _say(f"  {name:<40} {r.sent:>7} msgs  {r.tps:>9.0f} msg/s  send RT {r.latency.summary()}")
    result = await consumer_bench.wait(consumer, plan.timeout)
    missing = sent - len(result.sequences)
    _say(f"consumed {result.received} messages in {result.elapsed:.1f}s = {result.tps:.0f} msg/s, "
         f"duplicates {result.duplicates}, missing {max(0, missing)}")
    _say(f"  end-to-end latency (send call -> listener): {result.latency.summary()}")
    return failed == 0 and missing == 0


def _lag_report(namesrv: str, work_dir: Path) -> None:
    """The consumer_lag job (spark-apps/) over this cluster, in Spark local mode, if installed."""
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("rocketq_spark") is None:
        _say("\n(no Spark lag report: pip install -e '.[analytics]' adds it)")
        return
    # optional, found at run time: the engine itself never needs Spark
    consumer_lag = importlib.import_module("rocketq_spark.jobs.consumer_lag")

    _say("\nSpark consumer_lag job (local mode) on this cluster:")
    consumer_lag.main(["--namesrv", namesrv, "--history", str(work_dir / "lag-history"),
                       "--output", str(work_dir / "lag-report")])


def run(plan: DemoPlan, base_dir: Path | None = None) -> bool:
    with tempfile.TemporaryDirectory(prefix="rocketq-demo-") as tmp:
        layout = ClusterLayout.with_free_ports(base_dir or Path(tmp))
        cluster = LocalCluster(layout)
        _say("starting a local cluster: 1 name server + 2 broker groups ...")
        state = cluster.up()
        for p in state.processes:
            _say(f"  {p.name:<9} pid {p.pid:<7} {p.address}")
        try:
            ok = asyncio.run(_workload(state.namesrv, plan))
            _lag_report(state.namesrv, layout.base_dir)
        finally:
            cluster.down()
            _say("cluster stopped")
    _say("RESULT: " + ("every message sent was consumed exactly once" if ok else "messages were lost or failed"))
    return ok

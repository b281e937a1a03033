"""A broker's /metrics and /health, scraped over HTTP while it serves traffic."""

from __future__ import annotations

import urllib.request

from clusterprocs import Processes
from clusterprocs import scrape_metrics as _scrape

from rocketq.client import Message, Producer, PullConsumer
from rocketq.local.ports import free_port


async def test_metrics_show_traffic_backlog_and_role(processes: Processes) -> None:
    ns = processes.namesrv()
    metrics_port = free_port()
    processes.broker(ns.address, extra=("--metrics-port", str(metrics_port)))
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/health", timeout=5) as resp:
        assert resp.status == 200
    async with Producer("m-pg", namesrv_addr=ns.address) as producer, \
            PullConsumer("m-cg", namesrv_addr=ns.address) as consumer:
        for i in range(10):
            await producer.send(Message("MetricsIT", b"m%d" % i), selector=lambda queues: queues[0])
        mq = (await consumer.fetch_subscribe_queues("MetricsIT"))[0]
        await consumer.update_offset(mq, 4)
    metrics = _scrape(metrics_port)
    labels = {"cluster": "DefaultCluster", "broker": "broker-a"}
    assert (labels, 10.0) in metrics["rocketmq_broker_messages_put_total"]
    assert (labels, 1.0) in metrics["rocketmq_broker_is_master"]
    assert ({**labels, "group": "m-cg", "topic": "MetricsIT"}, 6.0) in metrics["rocketmq_group_diff"]
    assert ({**labels, "group": "m-cg", "topic": "MetricsIT"}, 6.0) in metrics["rocketmq_consumer_lag_messages"]
    for name in ("rocketmq_broker_tps", "rocketmq_broker_qps", "rocketmq_brokeruntime_put_latency_99",
                 "rocketmq_brokeruntime_commitlog_disk_ratio", "rocketmq_brokeruntime_commitlogdir_capacity_free"):
        assert name in metrics, name

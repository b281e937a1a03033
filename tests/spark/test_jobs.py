"""Both jobs in local mode against the shared cluster: numbers, findings, files, and bad input."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rocketq_spark.jobs import consumer_lag, trace_analysis
from sparkcluster import DATA_TOPIC, FAST_GROUP, LAG_GROUP, SLOW_GROUP, TRACED_TOPIC, Workload

from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient

pytestmark = pytest.mark.slow


class Pushgateway(http.server.BaseHTTPRequestHandler):
    bodies: list[tuple[str, str]] = []

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self.bodies.append((self.path, self.rfile.read(length).decode()))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        return None


@pytest.fixture
def pushgateway() -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), Pushgateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_consumer_lag_job_matches_consumer_progress(spark: Any, workload: Workload, tmp_path: Path,
                                                    pushgateway: str, capsys: Any) -> None:
    argv = ["--namesrv", workload.namesrv, "--history", str(tmp_path / "history"), "--output",
            str(tmp_path / "out"), "--pushgateway", pushgateway]
    assert consumer_lag.main(argv, spark) == 0
    assert consumer_lag.main(argv, spark) == 0  # a second run: trends and stuck queues need two
    report = capsys.readouterr().out

    async def progress() -> Any:
        async with AdminClient(workload.namesrv) as admin:
            return await cluster_ops.consumer_progress(admin, LAG_GROUP)

    expected = asyncio.run(progress())
    queues = spark.read.parquet(str(tmp_path / "out" / "queues")).where(f"group = '{LAG_GROUP}'").collect()
    assert {(q.topic, q.brokerName, q.queueId): (q.brokerOffset, q.consumerOffset, q.lag) for q in queues} == {
        (mq.topic, mq.broker_name, mq.queue_id): (o.broker_offset, o.consumer_offset, o.diff)
        for mq, o in expected.offsets}
    lagging = [q for q in queues if q.lag > 0]
    assert lagging and all(q.stuck and q.noConsumer and q.drainSeconds is None for q in lagging)
    assert all(q.runs == 2 and q.lagGrowthPerSec == 0 for q in queues)
    assert not any(q.stuck or q.noConsumer for q in queues if q.lag == 0)
    groups = spark.read.parquet(str(tmp_path / "out" / "groups")).where(f"group = '{LAG_GROUP}'").collect()
    (data,) = [g for g in groups if g.topic == DATA_TOPIC]
    assert (data.lag, data.stuckQueues, data.noConsumerQueues) == (12, len(lagging), len(lagging))
    assert history_dates(tmp_path / "history")
    assert (tmp_path / "out" / "report.txt").read_text().strip() in report
    assert f"{LAG_GROUP} {DATA_TOPIC}" in report and "stuck queues" in report
    assert (tmp_path / "out" / "lag_over_time.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    path, body = Pushgateway.bodies[-1]
    assert path == "/metrics/job/rocketq-consumer-lag"
    assert f'rocketq_spark_consumer_lag{{group="{LAG_GROUP}",topic="{DATA_TOPIC}"}} 12.0' in body


def history_dates(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name.startswith("date="))


def test_trace_job_finds_the_orphan_the_retry_and_the_slow_consumer(spark: Any, workload: Workload,
                                                                     tmp_path: Path) -> None:
    out = tmp_path / "traces"
    argv = ["--namesrv", workload.namesrv, "--output", str(out), "--start", str(workload.started_ms - 1000),
            "--end", "now", "--orphan-minutes", "0"]
    assert trace_analysis.main(argv, spark) == 0
    orphans = spark.read.parquet(str(out / "orphans")).collect()
    assert [(o.msgId, o.group, o.topic) for o in orphans] == [(workload.orphan_id, SLOW_GROUP, TRACED_TOPIC)]
    consumers = spark.read.parquet(str(out / "slowest_consumers")).orderBy("avgCostMs", ascending=False).collect()
    assert consumers[0].group == SLOW_GROUP and consumers[0].avgCostMs >= 200
    msgs = spark.read.parquet(str(out / "messages")).where(f"topic = '{TRACED_TOPIC}'").collect()
    by_group: dict[str, dict[str, Any]] = {}
    for m in msgs:
        by_group.setdefault(m.group, {})[m.msgId] = m
    assert set(by_group[FAST_GROUP]) == {*workload.traced_ids, workload.orphan_id}
    assert set(by_group[SLOW_GROUP]) == set(workload.traced_ids)
    retried = by_group[FAST_GROUP][workload.retried_id]
    assert (retried.attempts, retried.retries, retried.success) == (2, 1, True)
    odd = [m for m in msgs if not (m.success and m.endToEndMs >= 0 and m.firstConsumeDelayMs is not None)]
    assert odd == []
    stats = {(s.topic, s.group): s for s in spark.read.parquet(str(out / "topic_groups")).collect()}
    assert stats[(TRACED_TOPIC, FAST_GROUP)].retriedMessages == 1
    assert stats[(TRACED_TOPIC, FAST_GROUP)].failureRate == pytest.approx(1 / 11)
    report = (out / "report.txt").read_text()
    assert "orphans (not consumed by a subscribed group after 0 min): 1" in report
    assert (out / "latency.png").exists() and (out / "slowest_consumers.png").exists()


def test_an_empty_range_gives_an_empty_report(spark: Any, workload: Workload, tmp_path: Path, capsys: Any) -> None:
    argv = ["--namesrv", workload.namesrv, "--output", str(tmp_path), "--start", "1000", "--end", "2000"]
    assert trace_analysis.main(argv, spark) == 0
    assert "no trace records in this range" in capsys.readouterr().out


@pytest.mark.parametrize(("job", "argv", "message"), [
    (consumer_lag, ["--namesrv", "127.0.0.1:1", "--history", "h", "--output", "o"], "unreachable"),
    (consumer_lag, ["--history", "h", "--output", "o", "--stuck-runs", "1", "--namesrv", "x:1"], "--stuck-runs"),
    (trace_analysis, ["--namesrv", "127.0.0.1:1", "--output", "o", "--start", "yesterday"], "time 'yesterday'"),
    (trace_analysis, ["--namesrv", "127.0.0.1:1", "--output", "o", "--start", "now", "--end=-1h"], "before"),
])
def test_bad_input_fails_with_one_clear_line(job: Any, argv: list[str], message: str, capsys: Any,
                                             monkeypatch: Any) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    assert job.main(argv, spark=object()) == 2  # never reaches Spark
    assert message in capsys.readouterr().err


def test_unknown_group_and_topic_are_refused(workload: Workload, capsys: Any) -> None:
    assert consumer_lag.main(["--namesrv", workload.namesrv, "--history", "h", "--output", "o", "--group",
                              "no-such-group"], spark=object()) == 2
    assert "not known" in capsys.readouterr().err
    assert trace_analysis.main(["--namesrv", workload.namesrv, "--output", "o", "--trace-topic", "NoTraces"],
                               spark=object()) == 2
    assert "TOPIC_NOT_EXIST" in capsys.readouterr().err

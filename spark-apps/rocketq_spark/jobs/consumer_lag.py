"""The consumer_lag job: snapshot every group's offsets, keep the history, report lag trends.

    python -m rocketq_spark.jobs.consumer_lag --namesrv 127.0.0.1:9876 \\
        --history ./lag-history --output ./lag-output [--group G] [--window-minutes 60] \\
        [--stuck-runs 2] [--pushgateway http://pushgateway:9091]

Each run: read ``rocketmq_offsets`` -> append the snapshot to ``--history`` (Parquet,
partitioned by ``date``; a local path or any Hadoop URI) -> ``lag.queue_metrics`` and
``lag.group_metrics`` over the window -> write ``queues/`` and ``groups/`` (Parquet) under
``--output``, plus ``report.txt`` and ``lag_over_time.png`` when the output is local -> push the
group summary when ``--pushgateway`` is given. The text report is printed too. Run it every few
minutes (the ScheduledSparkApplication does) so that trends and stuck queues have runs to compare.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from rocketq_spark import charts, jobargs, lag, pushing
from rocketq_spark.jobargs import JobError

JOB_NAME = "rocketq-consumer-lag"


def arguments(argv: Sequence[str] | None) -> Any:
    p = jobargs.parser("Consumer lag snapshot, history and report.")
    p.add_argument("--history", default=os.environ.get("ROCKETQ_LAG_HISTORY"),
                   help="history table path or URI (default: $ROCKETQ_LAG_HISTORY)")
    p.add_argument("--group", default=None, help="only this consumer group (default: every group)")
    p.add_argument("--window-minutes", type=int, default=60, help="trend window (default 60)")
    p.add_argument("--stuck-runs", type=int, default=2,
                   help="runs without consumer progress that make a queue with lag stuck (default 2)")
    p.add_argument("--pushgateway", default=os.environ.get("PUSHGATEWAY_URL"),
                   help="Prometheus Pushgateway host:port or URL (default: $PUSHGATEWAY_URL; none: no push)")
    p.add_argument("--cluster", default=None,
                   help="the RocketMQCluster's name: pushed series get rocketq_cluster (and namespace) labels")
    p.add_argument("--cluster-namespace", default=None, help="the RocketMQCluster's namespace (with --cluster)")
    args = p.parse_args(argv)
    args.namesrv = jobargs.need_namesrv(args.namesrv)
    if not args.history:
        raise JobError("no history path: pass --history or set ROCKETQ_LAG_HISTORY")
    if args.window_minutes < 1:
        raise JobError(f"--window-minutes {args.window_minutes}: must be at least 1")
    if args.stuck_runs < 2:
        raise JobError(f"--stuck-runs {args.stuck_runs}: must be at least 2 (a run compares with earlier ones)")
    return args


def report(groups: list[Any], queues: list[Any], run_ms: int, window_minutes: int) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(run_ms / 1000))
    lines = [f"consumer lag at {when} (trend over the last {window_minutes} min)"]
    if not groups:
        lines.append("no consumer group has committed offsets: nothing to report")
        return "\n".join(lines)
    lines.append(f"{'group':<28} {'topic':<28} {'queues':>6} {'lag':>9} {'growth/s':>9} {'drain':>10} "
                 f"{'stuck':>5} {'unserved':>8}")
    for g in groups:
        growth = "-" if g["lagGrowthPerSec"] is None else f"{g['lagGrowthPerSec']:+.2f}"
        drain = _duration(g["drainSeconds"], g["lag"])
        lines.append(f"{g['group']:<28} {g['topic']:<28} {g['queues']:>6} {g['lag']:>9} {growth:>9} {drain:>10} "
                     f"{g['stuckQueues']:>5} {g['noConsumerQueues']:>8}")
    stuck = [q for q in queues if q["stuck"]]
    unserved = [q for q in queues if q["noConsumer"]]
    for title, rows in (("stuck queues (lag, consumer offset not moving)", stuck),
                        ("queues with backlog and no consumer online", unserved)):
        if rows:
            lines.append(f"{title}:")
            lines.extend(f"  {q['group']} {q['topic']} {q['brokerName']}/{q['queueId']} lag {q['lag']}" for q in rows)
    return "\n".join(lines)


def _duration(seconds: float | None, lag_now: int) -> str:
    if lag_now == 0:
        return "0s"
    if seconds is None:
        return "never"
    return f"{seconds / 3600:.1f}h" if seconds >= 3600 else f"{seconds:.0f}s"


def run(args: Any, spark: Any) -> str:
    from pyspark.sql import functions as F

    run_ms = time.time_ns() // 1_000_000
    window_ms = args.window_minutes * 60_000
    reader = spark.read.format("rocketmq_offsets").option("namesrv", args.namesrv)
    if args.group:
        reader = reader.option("group", args.group)
    snap = lag.snapshot(reader.load(), run_ms).cache()
    if snap.isEmpty():
        return report([], [], run_ms, args.window_minutes)
    snap.write.mode("append").partitionBy("date").parquet(args.history)
    history = spark.read.parquet(args.history)
    if args.group:
        history = history.where(F.col("group") == args.group)
    queues_df = lag.queue_metrics(history, run_ms, window_ms, args.stuck_runs).cache()
    groups_df = lag.group_metrics(queues_df)
    queues_df.write.mode("overwrite").parquet(f"{args.output.rstrip('/')}/queues")
    groups_df.write.mode("overwrite").parquet(f"{args.output.rstrip('/')}/groups")
    groups = [r.asDict() for r in groups_df.collect()]
    queues = [r.asDict() for r in queues_df.orderBy(*lag.QUEUE_KEY).collect()]
    text = report(groups, queues, run_ms, args.window_minutes)
    local = jobargs.local_dir(args.output)
    if local is not None:
        points = [(r["group"], r["runTimestamp"], r["lag"]) for r in lag.lag_over_time(history, run_ms, window_ms)
                  .collect()]
        local.mkdir(parents=True, exist_ok=True)
        (local / "report.txt").write_text(text + "\n")
        charts.lag_over_time(points, local / "lag_over_time.png")
    if args.pushgateway:
        pushing.push_lag(args.pushgateway, JOB_NAME, groups,
                         pushing.grouping_key(args.cluster, args.cluster_namespace))
    snap.unpersist()
    queues_df.unpersist()
    return text


def main(argv: Sequence[str] | None = None, spark: Any = None) -> int:
    return jobargs.main(argv, spark, app_name=JOB_NAME, parse=arguments, run=run,
                        check=lambda args: jobargs.check_cluster(args.namesrv, group=args.group))


if __name__ == "__main__":
    sys.exit(main())

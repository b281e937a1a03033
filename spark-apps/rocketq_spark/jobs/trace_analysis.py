"""The trace_analysis job: what happened to each traced message, and who was slow.

    python -m rocketq_spark.jobs.trace_analysis --namesrv 127.0.0.1:9876 --output ./trace-output \\
        [--start=-1h] [--end=now] [--trace-topic RMQ_SYS_TRACE_TOPIC] [--orphan-minutes 10] \\
        [--subscription Topic=group ...] [--top 10]

Reads the trace topic's messages stored in ``[start, end]`` with the ``rocketmq`` source, decodes
and joins them (``tracejoin``), and writes under ``--output``: ``messages/``, ``topic_groups/``,
``orphans/``, ``slowest_consumers/``, ``slowest_clients/`` (Parquet), and, when the output is
local, ``report.txt``, ``latency.png`` (end-to-end p99 per topic/group) and
``slowest_consumers.png``. An empty range gives an empty report, not an error.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from rocketq.protocol import traces
from rocketq_spark import charts, jobargs, tracejoin
from rocketq_spark.jobargs import JobError

JOB_NAME = "rocketq-trace-analysis"


def arguments(argv: Sequence[str] | None, now_ms: int) -> Any:
    p = jobargs.parser("Message trace analysis over a time range.")
    p.add_argument("--trace-topic", default=os.environ.get("ROCKETQ_TRACE_TOPIC", traces.DEFAULT_TRACE_TOPIC))
    p.add_argument("--start", default="-1h",
                   help="now, -<n>[smhd] (write --start=-1h), epoch ms or ISO-8601 (default -1h)")
    p.add_argument("--end", default="now", help="as --start (default now)")
    p.add_argument("--orphan-minutes", type=float, default=10.0,
                   help="a message not consumed by a subscribed group this long after its send is an orphan")
    p.add_argument("--subscription", action="append", default=[], metavar="TOPIC=GROUP",
                   help="a group that consumes a topic, in addition to those seen in the traces (repeatable)")
    p.add_argument("--top", type=int, default=10, help="rows in the slowest-consumer and -client tables")
    args = p.parse_args(argv)
    args.namesrv = jobargs.need_namesrv(args.namesrv)
    args.start_ms = jobargs.parse_time(args.start, now_ms)
    args.end_ms = jobargs.parse_time(args.end, now_ms)
    if args.end_ms < args.start_ms:
        raise JobError(f"--end {args.end} is before --start {args.start}")
    if args.orphan_minutes < 0 or args.top < 1:
        raise JobError("--orphan-minutes must be >= 0 and --top >= 1")
    args.subscriptions = []
    for item in args.subscription:
        topic, sep, group = item.partition("=")
        if not sep or not topic or not group:
            raise JobError(f"--subscription {item!r}: expected TOPIC=GROUP")
        args.subscriptions.append((topic, group))
    return args


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}ms"


def report(args: Any, stats: list[Any], orphan_rows: list[Any], orphan_count: int, consumers: list[Any],
           clients: list[Any]) -> str:
    span = (f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(args.start_ms / 1000))} .. "
            f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(args.end_ms / 1000))}")
    lines = [f"message traces in {args.trace_topic}, {span}"]
    if not stats and not orphan_count and not clients:
        lines.append("no trace records in this range: nothing to report")
        return "\n".join(lines)
    lines.append(f"{'topic':<24} {'group':<24} {'msgs':>6} {'ok':>6} {'fail%':>6} {'retried':>7} "
                 f"{'1st delay':>9} {'e2e p50':>8} {'p90':>8} {'p99':>8}")
    for s in stats:
        lines.append(f"{s['topic']:<24} {s['group']:<24} {s['messages']:>6} {s['succeeded']:>6} "
                     f"{100 * (s['failureRate'] or 0):>5.1f}% {s['retriedMessages']:>7} "
                     f"{_ms(s['avgFirstConsumeDelayMs']):>9} {_ms(s['endToEndP50']):>8} {_ms(s['endToEndP90']):>8} "
                     f"{_ms(s['endToEndP99']):>8}")
    lines.append(f"orphans (not consumed by a subscribed group after {args.orphan_minutes:g} min): {orphan_count}")
    lines.extend(f"  {o['topic']} {o['group']} {o['msgId']}" for o in orphan_rows)
    lines.append("slowest consumers (avg listener time per message):")
    lines.extend(f"  {c['group']:<24} {c['calls']:>6} calls  avg {_ms(c['avgCostMs'])}  p99 {_ms(c['costP99'])}"
                 for c in consumers)
    lines.append("slowest producer clients (avg send time):")
    lines.extend(f"  {c['producerGroup']:<24} {c['clientHost']:<16} {c['sends']:>6} sends  avg "
                 f"{_ms(c['avgSendCostMs'])}  p99 {_ms(c['sendCostP99'])}" for c in clients)
    return "\n".join(lines)


MAX_LISTED_ORPHANS = 20
"""Orphans named in the text report; the Parquet output has them all."""


def run(args: Any, spark: Any) -> str:
    raw = (spark.read.format("rocketmq").option("namesrv", args.namesrv).option("topic", args.trace_topic)
           .option("startingTimestamp", str(args.start_ms)).option("endingTimestamp", str(args.end_ms)).load())
    recs = tracejoin.records(raw).cache()
    if recs.isEmpty():
        return report(args, [], [], 0, [], [])
    pub = tracejoin.pubs(recs)
    tries = tracejoin.attempts(recs).cache()
    delivered = tracejoin.deliveries(tries)
    msgs = tracejoin.messages(pub, delivered).cache()
    subs = tracejoin.subscriptions(spark, msgs, args.subscriptions)
    orphan_df = tracejoin.orphans(pub, delivered, subs, args.end_ms - int(args.orphan_minutes * 60_000)).cache()
    tables = {
        "messages": msgs,
        "topic_groups": tracejoin.topic_group_stats(msgs),
        "orphans": orphan_df,
        "slowest_consumers": tracejoin.slowest_consumers(tries, args.top),
        "slowest_clients": tracejoin.slowest_clients(pub, args.top),
    }
    out = args.output.rstrip("/")
    for name, df in tables.items():
        df.write.mode("overwrite").parquet(f"{out}/{name}")
    # the small tables are read back from what was written: one computation each
    read = {name: [r.asDict() for r in spark.read.parquet(f"{out}/{name}").collect()]
            for name in ("topic_groups", "slowest_consumers", "slowest_clients")}
    stats = sorted(read["topic_groups"], key=lambda s: (s["topic"], s["group"]))
    consumers = sorted(read["slowest_consumers"], key=lambda c: -(c["avgCostMs"] or 0))
    clients = sorted(read["slowest_clients"], key=lambda c: -(c["avgSendCostMs"] or 0))
    orphan_count = orphan_df.count()
    text = report(args, stats, [r.asDict() for r in orphan_df.limit(MAX_LISTED_ORPHANS).collect()], orphan_count,
                  consumers, clients)
    local = jobargs.local_dir(args.output)
    if local is not None:
        local.mkdir(parents=True, exist_ok=True)
        (local / "report.txt").write_text(text + "\n")
        charts.bars([f"{s['topic']} / {s['group']}" for s in stats], [s["endToEndP99"] or 0 for s in stats],
                    "End-to-end latency p99 (send -> consumed)", "ms", local / "latency.png")
        charts.bars([c["group"] for c in consumers], [c["avgCostMs"] or 0 for c in consumers],
                    "Slowest consumers (avg listener time per message)", "ms", local / "slowest_consumers.png")
    for df in (recs, tries, msgs, orphan_df):
        df.unpersist()
    return text


def main(argv: Sequence[str] | None = None, spark: Any = None) -> int:
    return jobargs.main(argv, spark, app_name=JOB_NAME, run=run,
                        parse=lambda given: arguments(given, time.time_ns() // 1_000_000),
                        check=lambda args: jobargs.check_cluster(args.namesrv, topic=args.trace_topic))


if __name__ == "__main__":
    sys.exit(main())

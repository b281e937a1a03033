"""Consumer lag analysis: pure DataFrame transforms over offset snapshots.

Each run of the lag job takes a *snapshot* (the ``rocketmq_offsets`` rows stamped with the run's
time) and appends it to a history table. From the history inside a window, per
(group, topic, brokerName, queueId) of the current snapshot:

* ``lag``: brokerOffset - consumerOffset now;
* ``lagGrowthPerSec``: (lag now - lag at the window's first run) / seconds between them; positive
  means the backlog grows. Null with a single run;
* ``consumeRatePerSec``: how fast the consumer offset moved over the same span;
* ``drainSeconds``: lag / consumeRate: the estimated time to drain at the current pace; 0 when
  there is no lag, null when the consumer does not advance (it never drains);
* ``stuck``: lag > 0 and the consumer offset identical in the last ``stuck_runs`` runs;
* ``noConsumer``: lag > 0 and no client of the group online.

Per group and topic the same numbers are summed (drain time from the sums). No I/O here.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

QUEUE_KEY: Final = ["group", "topic", "brokerName", "queueId"]
GROUP_KEY: Final = ["group", "topic"]


def snapshot(offsets: DataFrame, run_ms: int) -> DataFrame:
    """The offsets rows stamped with the run (epoch ms) and its UTC date (the history's partition)."""
    return (offsets.withColumn("runTimestamp", F.lit(run_ms).cast("long"))
            .withColumn("date", F.date_format(F.timestamp_millis(F.col("runTimestamp")), "yyyy-MM-dd")))


def _drain(lag: str, rate: str) -> F.Column:
    return (F.when(F.col(lag) == 0, F.lit(0.0))
            .when(F.col(rate) > 0, F.col(lag) / F.col(rate))
            .otherwise(F.lit(None).cast("double")))


def queue_metrics(history: DataFrame, run_ms: int, window_ms: int, stuck_runs: int) -> DataFrame:
    """One row per queue of the run at ``run_ms``, with the window's trend."""
    recent = history.where(F.col("runTimestamp").between(run_ms - window_ms, run_ms))
    newest_first = Window.partitionBy(*QUEUE_KEY).orderBy(F.col("runTimestamp").desc())
    ranked = recent.withColumn("recency", F.row_number().over(newest_first))
    last_runs = F.col("recency") <= stuck_runs
    agg = ranked.groupBy(*QUEUE_KEY).agg(
        F.max("runTimestamp").alias("lastRun"),
        F.min("runTimestamp").alias("firstRun"),
        F.count(F.lit(1)).alias("runs"),
        F.max_by("brokerOffset", "runTimestamp").alias("brokerOffset"),
        F.max_by("consumerOffset", "runTimestamp").alias("consumerOffset"),
        F.min_by("consumerOffset", "runTimestamp").alias("firstConsumerOffset"),
        F.max_by("lag", "runTimestamp").alias("lag"),
        F.min_by("lag", "runTimestamp").alias("firstLag"),
        F.max_by("lastTimestamp", "runTimestamp").alias("lastTimestamp"),
        F.max_by("consumers", "runTimestamp").alias("consumers"),
        F.sum(F.when(last_runs, 1).otherwise(0)).alias("stuckWindowRuns"),
        F.max(F.when(last_runs, F.col("consumerOffset"))).alias("stuckMax"),
        F.min(F.when(last_runs, F.col("consumerOffset"))).alias("stuckMin"),
    ).where(F.col("lastRun") == run_ms)
    seconds = (F.col("lastRun") - F.col("firstRun")) / 1000.0
    return (agg
            .withColumn("lagGrowthPerSec", F.when(seconds > 0, (F.col("lag") - F.col("firstLag")) / seconds))
            .withColumn("consumeRatePerSec",
                        F.when(seconds > 0, (F.col("consumerOffset") - F.col("firstConsumerOffset")) / seconds))
            .withColumn("drainSeconds", _drain("lag", "consumeRatePerSec"))
            .withColumn("stuck", (F.col("lag") > 0) & (F.col("stuckWindowRuns") >= stuck_runs)
                        & (F.col("stuckMax") == F.col("stuckMin")))
            .withColumn("noConsumer", (F.col("lag") > 0) & (F.col("consumers") == 0))
            .select(*QUEUE_KEY, "brokerOffset", "consumerOffset", "lag", "lastTimestamp", "consumers", "runs",
                    "lagGrowthPerSec", "consumeRatePerSec", "drainSeconds", "stuck", "noConsumer",
                    F.col("lastRun").alias("runTimestamp")))


def group_metrics(queues: DataFrame) -> DataFrame:
    """Per group and topic: summed lag and rates, drain time, and how many queues are stuck or unserved."""
    return (queues.groupBy(*GROUP_KEY).agg(
        F.count(F.lit(1)).alias("queues"),
        F.sum("lag").alias("lag"),
        F.sum("lagGrowthPerSec").alias("lagGrowthPerSec"),
        F.sum("consumeRatePerSec").alias("consumeRatePerSec"),
        F.sum(F.col("stuck").cast("int")).alias("stuckQueues"),
        F.sum(F.col("noConsumer").cast("int")).alias("noConsumerQueues"),
        F.max("consumers").alias("consumers"),
    ).withColumn("drainSeconds", _drain("lag", "consumeRatePerSec")).orderBy(F.col("lag").desc(), *GROUP_KEY))


def lag_over_time(history: DataFrame, run_ms: int, window_ms: int) -> DataFrame:
    """Total lag per group at each run of the window (the chart's data)."""
    return (history.where(F.col("runTimestamp").between(run_ms - window_ms, run_ms))
            .groupBy("group", "runTimestamp").agg(F.sum("lag").alias("lag")).orderBy("runTimestamp", "group"))

"""Message trace analysis: pure DataFrame transforms from trace messages to per-message facts.

Input: rows of the ``rocketmq`` source read from the trace topic. Each body holds several trace
records (``rocketq.protocol.traces``); ``records`` decodes them into one row each (bad records
are skipped: anyone may write to the trace topic). Then:

* ``pubs``: one row per published msgId (its successful Pub): topic, producer group, client,
  send start (``pubTimestamp``) and cost. ``storeTimestamp`` is estimated as send start + send
  cost (the Pub record carries no store time; the broker stored it before answering).
* ``attempts``: one row per listener call and message: SubBefore joined with its SubAfter by
  requestId and msgId, giving the consumer group, start, retryTimes, cost and success. A call
  with no SubAfter (still running, or its trace lost) counts as unfinished, not successful.
* ``deliveries``: per msgId and group: first consume start, attempts, retries, success, when it
  finished successfully.
* ``messages``: pubs left-joined with deliveries: ``firstConsumeDelayMs`` (first consume start -
  store time), ``endToEndMs`` (successful finish - send start), retries, success.
* ``orphans``: published at least ``orphan_ms`` before the range's end, on a topic a group is
  known to consume (it consumed some message of that topic in the range, or was named), and
  never delivered to that group.
* ``topic_group_stats``, ``slowest_consumers``, ``slowest_clients``: the report's tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, IntegerType, LongType, StringType, StructField, StructType

from rocketq.protocol import traces

PERCENTILES: Final = [0.5, 0.9, 0.99]
RECORD: Final = StructType([
    StructField("type", StringType()),
    StructField("timestamp", LongType()),
    StructField("regionId", StringType()),
    StructField("group", StringType()),
    StructField("topic", StringType()),
    StructField("msgId", StringType()),
    StructField("tags", StringType()),
    StructField("keys", StringType()),
    StructField("storeHost", StringType()),
    StructField("bodyLength", IntegerType()),
    StructField("costTime", LongType()),
    StructField("msgType", IntegerType()),
    StructField("offsetMsgId", StringType()),
    StructField("success", BooleanType()),
    StructField("clientHost", StringType()),
    StructField("requestId", StringType()),
    StructField("retryTimes", IntegerType()),
    StructField("contextCode", IntegerType()),
])


def decode_body(body: bytes | None) -> list[tuple[Any, ...]]:
    """The records of one trace message body as ``RECORD`` tuples (bad records skipped)."""
    if body is None:
        return []
    return [(r.type.value, r.timestamp, r.region_id, r.group, r.topic, r.msg_id, r.tags, r.keys, r.store_host,
             r.body_length, r.cost_time, int(r.msg_type), r.offset_msg_id, r.success, r.client_host, r.request_id,
             r.retry_times, int(r.context_code)) for r in traces.decode(bytes(body), strict=False)]


def records(trace_messages: DataFrame) -> DataFrame:
    decode = F.udf(decode_body, ArrayType(RECORD))
    return trace_messages.select(F.explode(decode(F.col("body"))).alias("r")).select("r.*")


def pubs(recs: DataFrame) -> DataFrame:
    return (recs.where((F.col("type") == traces.TraceType.PUB.value) & F.col("success"))
            .select("msgId", "topic", F.col("group").alias("producerGroup"), "clientHost", "storeHost", "keys",
                    "tags", F.col("timestamp").alias("pubTimestamp"), F.col("costTime").alias("sendCostMs"))
            .dropDuplicates(["msgId"])
            .withColumn("storeTimestamp", F.col("pubTimestamp") + F.col("sendCostMs")))


def attempts(recs: DataFrame) -> DataFrame:
    before = recs.where(F.col("type") == traces.TraceType.SUB_BEFORE.value).select(
        "requestId", "msgId", "group", F.col("timestamp").alias("beginTimestamp"), "retryTimes")
    after = recs.where(F.col("type") == traces.TraceType.SUB_AFTER.value).select(
        "requestId", "msgId", F.col("costTime").alias("costMs"), F.col("success").alias("succeeded"),
        "contextCode")
    return (before.join(after, ["requestId", "msgId"], "left")
            .withColumn("succeeded", F.coalesce(F.col("succeeded"), F.lit(False)))
            .withColumn("finishedTimestamp", F.col("beginTimestamp") + F.col("costMs")))


def deliveries(tries: DataFrame) -> DataFrame:
    return tries.groupBy("msgId", "group").agg(
        F.min("beginTimestamp").alias("firstConsumeTimestamp"),
        F.count(F.lit(1)).alias("attempts"),
        F.sum(F.when(~F.col("succeeded"), 1).otherwise(0)).alias("failedAttempts"),
        F.max("retryTimes").alias("retries"),
        F.max(F.col("succeeded").cast("int")).cast("boolean").alias("success"),
        F.min(F.when(F.col("succeeded"), F.col("finishedTimestamp"))).alias("successTimestamp"),
        F.sum("costMs").alias("consumeCostMs"),
    )


def messages(pub: DataFrame, delivered: DataFrame) -> DataFrame:
    return (pub.join(delivered, "msgId", "left")
            .withColumn("firstConsumeDelayMs", F.col("firstConsumeTimestamp") - F.col("storeTimestamp"))
            .withColumn("endToEndMs", F.col("successTimestamp") - F.col("pubTimestamp")))


def subscriptions(spark: SparkSession, msgs: DataFrame, named: Iterable[tuple[str, str]]) -> DataFrame:
    """(topic, group) pairs: seen consuming the topic in the range, plus the ones named."""
    seen = msgs.where(F.col("group").isNotNull()).select("topic", "group")
    extra = spark.createDataFrame(list(named), "topic STRING, group STRING")
    return seen.unionByName(extra).distinct()


def orphans(pub: DataFrame, delivered: DataFrame, subs: DataFrame, cutoff_ms: int) -> DataFrame:
    old_enough = pub.where(F.col("pubTimestamp") <= cutoff_ms)
    expected = old_enough.join(subs, "topic")
    return (expected.join(delivered.select("msgId", "group"), ["msgId", "group"], "left_anti")
            .select("topic", "group", "msgId", "keys", "pubTimestamp").orderBy("topic", "group", "pubTimestamp"))


def _percentiles(column: str, prefix: str) -> list[F.Column]:
    p = F.percentile_approx(F.col(column), PERCENTILES)
    return [p[i].alias(f"{prefix}P{int(q * 100)}") for i, q in enumerate(PERCENTILES)]


def topic_group_stats(msgs: DataFrame) -> DataFrame:
    return (msgs.where(F.col("group").isNotNull()).groupBy("topic", "group").agg(
        F.count(F.lit(1)).alias("messages"),
        F.sum(F.col("success").cast("int")).alias("succeeded"),
        (F.sum("failedAttempts") / F.sum("attempts")).alias("failureRate"),
        F.sum(F.when(F.col("retries") > 0, 1).otherwise(0)).alias("retriedMessages"),
        F.avg("firstConsumeDelayMs").alias("avgFirstConsumeDelayMs"),
        *_percentiles("endToEndMs", "endToEnd"),
    ).orderBy("topic", "group"))


def slowest_consumers(tries: DataFrame, top: int) -> DataFrame:
    return (tries.where(F.col("costMs").isNotNull()).groupBy("group").agg(
        F.count(F.lit(1)).alias("calls"), F.avg("costMs").alias("avgCostMs"), *_percentiles("costMs", "cost"),
    ).orderBy(F.col("avgCostMs").desc(), "group").limit(top))


def slowest_clients(pub: DataFrame, top: int) -> DataFrame:
    return (pub.groupBy("producerGroup", "clientHost").agg(
        F.count(F.lit(1)).alias("sends"), F.avg("sendCostMs").alias("avgSendCostMs"),
        *_percentiles("sendCostMs", "sendCost"),
    ).orderBy(F.col("avgSendCostMs").desc(), "clientHost").limit(top))

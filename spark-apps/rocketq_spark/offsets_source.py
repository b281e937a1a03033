"""The ``rocketmq_offsets`` data source: consumer offsets and lag per group, topic and queue.

    spark.read.format("rocketmq_offsets").option("namesrv", "127.0.0.1:9876").load()

One row per (group, topic, broker, queue) as ``rocketq admin consumerProgress -g`` lists them:
GET_CONSUME_STATS asked of every master the name servers know, merged. ``lag`` is
brokerOffset - consumerOffset (RocketMQ's diff); ``lastTimestamp`` the store time of the last
consumed message (0 when unknown); ``consumers`` how many clients of the group are online.

Options: ``namesrv`` (required); ``group`` (one group; default every known group: those with a
subscription config, committed offsets or a ``%RETRY%`` topic, as mqadmin finds them); ``topic``
(only this topic); ``timeoutSeconds``. The read is one small partition.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from rocketq.admin import cluster
from rocketq.admin.client import AdminClient
from rocketq_spark import reading
from rocketq_spark.source import int_option, required_option

SCHEMA: Final = StructType([
    StructField("group", StringType(), False),
    StructField("topic", StringType(), False),
    StructField("brokerName", StringType(), False),
    StructField("queueId", IntegerType(), False),
    StructField("brokerOffset", LongType(), False),
    StructField("consumerOffset", LongType(), False),
    StructField("lag", LongType(), False),
    StructField("lastTimestamp", LongType(), False),
    StructField("consumers", IntegerType(), False),
])


async def offset_rows(admin: AdminClient, group: str | None, topic: str | None) -> list[tuple[Any, ...]]:
    """The rows of ``SCHEMA`` for one group or every known group."""
    masters = await cluster.all_masters(admin)
    groups = [group] if group else await cluster.known_groups(admin, masters)
    rows: list[tuple[Any, ...]] = []
    for name in groups:
        progress = await cluster.consumer_progress(admin, name, topic, masters=masters)
        if not progress.offsets:
            continue
        online = await cluster.online_clients(admin, name, masters=masters)
        rows.extend((name, mq.topic, mq.broker_name, mq.queue_id, o.broker_offset, o.consumer_offset, o.diff,
                     o.last_timestamp, online) for mq, o in progress.offsets)
    return rows


class RocketMQOffsetsDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "rocketmq_offsets"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        timeout = int_option(self.options, "timeoutSeconds", int(reading.DEFAULT_TIMEOUT), minimum=1)
        return OffsetsReader(required_option(self.options, "namesrv"), self.options.get("group") or None,
                             self.options.get("topic") or None, float(timeout or reading.DEFAULT_TIMEOUT))


class OffsetsReader(DataSourceReader):
    def __init__(self, namesrv: str, group: str | None, topic: str | None, timeout: float) -> None:
        self.namesrv, self.group, self.topic, self.timeout = namesrv, group, topic, timeout

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        async def work(admin: AdminClient) -> list[tuple[Any, ...]]:
            return await offset_rows(admin, self.group, self.topic)

        yield from reading.run(self.namesrv, "reading consumer offsets", work)

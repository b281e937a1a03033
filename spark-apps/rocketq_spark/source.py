"""The ``rocketmq`` data source: a topic's messages as a DataFrame, batch or streaming.

    spark.dataSource.register(RocketMQDataSource)
    df = (spark.read.format("rocketmq").option("namesrv", "127.0.0.1:9876").option("topic", "T")
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())

Options (all strings, as Spark passes them):

* ``namesrv`` (required): ``host:port[;host:port]``; ``topic`` (required).
* ``startingOffsets`` / ``endingOffsets``: ``earliest``, ``latest`` or JSON
  ``{"brokerName": {"queueId": offset}}`` (-2 earliest, -1 latest). Batch defaults: earliest to
  latest. Streaming: ``startingOffsets`` only, default ``latest``.
* ``startingTimestamp`` / ``endingTimestamp``: epoch ms; only messages stored in that range
  (batch only). They narrow what the offsets allow.
* ``maxMessagesPerPartition``: a queue's range is split into partitions of at most this many
  messages (default 100 000); one partition per queue otherwise.
* ``timeoutSeconds``: per request (default 10).

Streaming offsets are ``{"brokerName/queueId": nextOffset}`` per queue; a queue that appears
later (a topic grown by ``updateTopic``) is read from its start. Rows follow ``SCHEMA``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from rocketq.admin.stats import MessageQueue
from rocketq_spark import reading
from rocketq_spark.reading import QueueSlice, SourceError

SCHEMA: Final = StructType([
    StructField("topic", StringType(), False),
    StructField("brokerName", StringType(), False),
    StructField("queueId", IntegerType(), False),
    StructField("queueOffset", LongType(), False),
    StructField("commitLogOffset", LongType(), False),
    StructField("msgId", StringType(), False),
    StructField("keys", StringType(), False),
    StructField("tags", StringType(), True),
    StructField("properties", MapType(StringType(), StringType()), False),
    StructField("bornTimestamp", LongType(), False),
    StructField("storeTimestamp", LongType(), False),
    StructField("bornHost", StringType(), False),
    StructField("reconsumeTimes", IntegerType(), False),
    StructField("body", BinaryType(), False),
])
"""Timestamps are epoch milliseconds, as RocketMQ stores them; ``keys`` is space-separated."""


class SlicePartition(InputPartition):
    def __init__(self, piece: QueueSlice) -> None:
        super().__init__(piece)
        self.piece = piece


def required_option(options: Any, name: str) -> str:
    value = options.get(name)
    if not value:
        raise SourceError(f"the rocketmq source needs the option {name!r}")
    return str(value)


def int_option(options: Any, name: str, default: int | None, minimum: int = 0) -> int | None:
    value = options.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise SourceError(f"option {name}={value!r} is not an integer") from None
    if number < minimum:
        raise SourceError(f"option {name}={number} is below {minimum}")
    return number


class SourceOptions:
    """The validated options of one ``load()``."""

    def __init__(self, options: Any, *, streaming: bool) -> None:
        self.namesrv = required_option(options, "namesrv")
        self.topic = required_option(options, "topic")
        default_start = reading.LATEST if streaming else reading.EARLIEST
        self.starting = reading.parse_offsets(options.get("startingOffsets"), default_start, "startingOffsets")
        self.ending = reading.parse_offsets(options.get("endingOffsets"), reading.LATEST, "endingOffsets")
        self.begin_ms = int_option(options, "startingTimestamp", None)
        self.end_ms = int_option(options, "endingTimestamp", None)
        if self.begin_ms is not None and self.end_ms is not None and self.end_ms < self.begin_ms:
            raise SourceError(f"endingTimestamp {self.end_ms} is before startingTimestamp {self.begin_ms}")
        per_slice = int_option(options, "maxMessagesPerPartition", reading.DEFAULT_MAX_PER_SLICE, minimum=1)
        self.max_per_slice = per_slice if per_slice is not None else reading.DEFAULT_MAX_PER_SLICE
        timeout = int_option(options, "timeoutSeconds", int(reading.DEFAULT_TIMEOUT), minimum=1)
        self.timeout = float(timeout if timeout is not None else reading.DEFAULT_TIMEOUT)


class RocketMQDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(SourceOptions(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(SourceOptions(self.options, streaming=True))


class BatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        o = self.options

        async def work(admin: Any) -> list[QueueSlice]:
            return await reading.plan(admin, o.namesrv, o.topic, starting=o.starting, ending=o.ending,
                                      begin_ms=o.begin_ms, end_ms=o.end_ms, max_per_slice=o.max_per_slice,
                                      timeout=o.timeout)

        slices = reading.run(o.namesrv, f"planning {o.topic}", work)
        return [SlicePartition(s) for s in slices]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return reading.iter_rows(getattr(partition, "piece", None))


class StreamReader(DataSourceStreamReader):
    """Micro-batches between per-queue offsets; Spark's checkpoint keeps them, nothing is committed."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def _bounds(self) -> dict[str, tuple[int, int]]:
        o = self.options

        async def work(admin: Any) -> dict[str, tuple[int, int]]:
            return {reading.queue_key(q.broker_name, q.queue_id): (low, high)
                    for q, _addr, low, high in await reading.queue_bounds(admin, o.topic)}

        bounds: dict[str, tuple[int, int]] = reading.run(o.namesrv, f"offsets of {o.topic}", work)
        return dict(sorted(bounds.items()))  # stable key order: Spark compares offsets as JSON text

    def initialOffset(self) -> dict[str, int]:
        out = {}
        for key, (low, high) in self._bounds().items():
            broker, queue_id = key.rsplit("/", 1)
            queue = MessageQueue(self.options.topic, broker, int(queue_id))
            out[key] = reading.resolve(reading.spec_for(self.options.starting, queue, reading.LATEST), low, high)
        return out

    def latestOffset(self) -> dict[str, int]:
        return {key: high for key, (_low, high) in self._bounds().items()}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        o = self.options
        out: list[InputPartition] = []
        for key, stop in end.items():
            begin = start.get(key, 0)  # a queue that appeared after the query started: from its start
            broker, queue_id = key.rsplit("/", 1)
            for first in range(begin, stop, o.max_per_slice):
                out.append(SlicePartition(QueueSlice(o.namesrv, o.topic, broker, int(queue_id), first,
                                                     min(stop, first + o.max_per_slice), timeout=o.timeout)))
        return out

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return reading.iter_rows(getattr(partition, "piece", None))

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to do: progress lives in the query's checkpoint, not in a consumer group."""

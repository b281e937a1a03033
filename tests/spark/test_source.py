"""The ``rocketmq`` and ``rocketmq_offsets`` data sources in local mode against a real cluster."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from sparkcluster import DATA_TOPIC, LAG_GROUP, STREAM_TOPIC, Workload

from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient
from rocketq.client.messages import Message
from rocketq.client.producer import Producer

pytestmark = pytest.mark.slow


def read(spark: Any, namesrv: str, topic: str, **options: Any) -> Any:
    reader = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_read_returns_exactly_the_stored_messages(spark: Any, workload: Workload) -> None:
    df = read(spark, workload.namesrv, DATA_TOPIC, maxMessagesPerPartition=5)
    rows = df.collect()
    expected = {(r.message_queue.broker_name, r.message_queue.queue_id, r.queue_offset):
                (body, keys, tags, seq, r.msg_id, r.offset_msg_id) for r, body, keys, tags, seq in workload.data_sends}
    got = {(row.brokerName, row.queueId, row.queueOffset): row for row in rows}
    assert len(rows) == len(expected) == 52
    assert got.keys() == expected.keys()
    for where, (body, keys, tags, seq, msg_id, _offset_id) in expected.items():
        row = got[where]
        assert (bytes(row.body), row.keys, row.tags, row.properties["seq"], row.msgId, row.topic) == (
            body, keys, tags, seq, msg_id, DATA_TOPIC)
        assert row.storeTimestamp >= row.bornTimestamp > 0 and row.reconsumeTimes == 0
    per_queue = Counter((b, q) for b, q, _ in expected)
    assert Counter((row.brokerName, row.queueId) for row in rows) == per_queue
    # 8 queues, none above 5 messages per partition: every queue split where it holds more
    assert df.rdd.getNumPartitions() == sum(-(-n // 5) for n in per_queue.values())


def test_offsets_and_time_ranges_narrow_the_read(spark: Any, workload: Workload) -> None:
    first = workload.data_sends[0][0]
    broker, queue_id = first.message_queue.broker_name, first.message_queue.queue_id
    narrowed = read(spark, workload.namesrv, DATA_TOPIC, startingOffsets=f'{{"{broker}": {{"{queue_id}": 1}}}}',
                    endingOffsets=f'{{"{broker}": {{"{queue_id}": 3}}}}', endingTimestamp=workload.ended_ms)
    empty = read(spark, workload.namesrv, DATA_TOPIC, startingTimestamp=1, endingTimestamp=2)
    rows = narrowed.where(f"brokerName = '{broker}' AND queueId = {queue_id}").collect()
    assert sorted(r.queueOffset for r in rows) == [1, 2]
    assert empty.count() == 0


def test_bad_options_and_unknown_topics_fail_clearly(spark: Any, workload: Workload) -> None:
    with pytest.raises(Exception, match="topic does not exist"):
        read(spark, workload.namesrv, "NoSuchTopic").collect()
    with pytest.raises(Exception, match="startingOffsets"):
        read(spark, workload.namesrv, DATA_TOPIC, startingOffsets="sometime").collect()


def test_offsets_source_equals_consumer_progress(spark: Any, workload: Workload) -> None:
    rows = spark.read.format("rocketmq_offsets").option("namesrv", workload.namesrv).load().collect()

    async def progress() -> Any:
        async with AdminClient(workload.namesrv) as admin:
            return await cluster_ops.consumer_progress(admin, LAG_GROUP)

    expected = asyncio.run(progress())
    mine = {(r.topic, r.brokerName, r.queueId): (r.brokerOffset, r.consumerOffset, r.lag, r.lastTimestamp)
            for r in rows if r.group == LAG_GROUP}
    assert mine == {(mq.topic, mq.broker_name, mq.queue_id): (o.broker_offset, o.consumer_offset, o.diff,
                                                              o.last_timestamp) for mq, o in expected.offsets}
    assert sum(v[2] for v in mine.values()) == expected.total_diff == 12
    assert {r.consumers for r in rows if r.group == LAG_GROUP} == {0}


def test_streaming_reader_delivers_new_messages_in_micro_batches(spark: Any, workload: Workload,
                                                                 tmp_path: Any) -> None:
    async def send(prefix: str, n: int) -> None:
        async with Producer("stream-pg", namesrv_addr=workload.namesrv) as producer:
            for i in range(n):
                await producer.send(Message(STREAM_TOPIC, f"{prefix}-{i}".encode()))

    asyncio.run(send("before", 5))
    stream = (spark.readStream.format("rocketmq").option("namesrv", workload.namesrv).option("topic", STREAM_TOPIC)
              .option("startingOffsets", "earliest").load())
    query = (stream.selectExpr("CAST(body AS STRING) AS text").writeStream.format("memory").queryName("streamed")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        first = {r.text for r in spark.sql("SELECT text FROM streamed").collect()}
        asyncio.run(send("after", 4))
        query.processAllAvailable()
        second = [r.text for r in spark.sql("SELECT text FROM streamed").collect()]
    finally:
        query.stop()
    assert first == {f"before-{i}" for i in range(5)}
    assert sorted(second) == sorted([f"before-{i}" for i in range(5)] + [f"after-{i}" for i in range(4)])

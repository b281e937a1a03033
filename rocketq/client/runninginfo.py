"""GET_CONSUMER_RUNNING_INFO (307): what a push consumer tells an admin tool about itself.

``mqadmin consumerStatus`` asks a broker, which forwards the request to the consumer's own
connection (broker → client, like NOTIFY_CONSUMER_IDS_CHANGED); the consumer answers with
RocketMQ's ``ConsumerRunningInfo`` JSON:

- ``properties``: its settings by RocketMQ key, plus ``PROP_NAMESERVER_ADDR``,
  ``PROP_CONSUME_TYPE`` (CONSUME_PASSIVELY), ``PROP_CONSUMEORDERLY``,
  ``PROP_THREADPOOL_CORE_SIZE`` and ``PROP_CONSUMER_START_TIMESTAMP``;
- ``subscriptionSet``: what it subscribes to (its retry topic included);
- ``mqTable``: per assigned queue a ``ProcessQueueInfo`` (committed offset, cached messages,
  lock state, last pull/consume times), keyed by the MessageQueue object as fastjson writes it;
- ``statusTable``: per-topic TPS and RT, which this SDK does not measure (empty).

Pure: the consumer hands over its parts, this module only shapes them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from rocketq.client.offsetstores import OffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import PushConsumerSettings
from rocketq.protocol.subscription import SubscriptionData


def _wall_ms(monotonic_ts: float, now_wall_ms: int, now_monotonic: float) -> int:
    """A ``time.monotonic`` stamp as epoch ms (the JSON carries wall-clock times)."""
    return now_wall_ms - int((now_monotonic - monotonic_ts) * 1000) if monotonic_ts else 0


def process_queue_info(pq: ProcessQueue, commit_offset: int | None, now_wall_ms: int,
                       now_monotonic: float) -> dict[str, Any]:
    """RocketMQ's ``ProcessQueueInfo`` of one assigned queue."""
    first = pq.first(1)
    return {
        "commitOffset": commit_offset if commit_offset is not None else -1,
        "cachedMsgMinOffset": first[0].queue_offset if first else 0,
        "cachedMsgMaxOffset": pq.queue_offset_max if pq.msg_count else 0,
        "cachedMsgCount": pq.msg_count,
        "cachedMsgSizeInMiB": pq.msg_size_mib,
        "transactionMsgMinOffset": 0, "transactionMsgMaxOffset": 0, "transactionMsgCount": 0,
        "locked": pq.locked,
        "tryUnlockTimes": 0,
        "lastLockTimestamp": _wall_ms(pq.last_lock_timestamp, now_wall_ms, now_monotonic),
        "droped": pq.dropped,  # sic: RocketMQ's field name
        "lastPullTimestamp": _wall_ms(pq.last_pull_timestamp, now_wall_ms, now_monotonic),
        "lastConsumeTimestamp": _wall_ms(pq.last_consume_timestamp, now_wall_ms, now_monotonic),
    }


def properties(settings: PushConsumerSettings, *, orderly: bool, start_ms: int) -> dict[str, str]:
    """The consumer's settings by RocketMQ key, and the ``PROP_*`` entries RocketMQ adds."""
    props = {f.metadata.get("key", f.name): _text(getattr(settings, f.name))
             for f in dataclasses.fields(settings) if f.metadata.get("key")}
    props.update({
        "PROP_NAMESERVER_ADDR": settings.namesrv_addr,
        "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
        "PROP_CONSUMEORDERLY": _text(orderly),
        "PROP_THREADPOOL_CORE_SIZE": str(settings.consume_thread_max),
        "PROP_CONSUMER_START_TIMESTAMP": str(start_ms),
    })
    return props


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(getattr(value, "value", value))


def running_info_body(settings: PushConsumerSettings, *, orderly: bool, start_ms: int,
                      subscriptions: Iterable[SubscriptionData], queues: Mapping[MessageQueue, ProcessQueue],
                      offsets: OffsetStore | None) -> bytes:
    """The answer's body: ConsumerRunningInfo JSON, MessageQueue objects as ``mqTable`` keys."""
    now_wall_ms, now_monotonic = time.time_ns() // 1_000_000, time.monotonic()
    entries = []
    for mq, pq in sorted(queues.items(), key=lambda item: (item[0].topic, item[0].broker_name, item[0].queue_id)):
        commit = offsets.read_memory(mq) if offsets is not None else None
        info = process_queue_info(pq, commit, now_wall_ms, now_monotonic)
        entries.append(f"{orjson.dumps(mq.to_json()).decode()}:{orjson.dumps(info).decode()}")
    head = orjson.dumps({
        "properties": properties(settings, orderly=orderly, start_ms=start_ms),
        "subscriptionSet": [s.to_json() for s in sorted(subscriptions, key=lambda s: s.topic)],
        "statusTable": {},
    }).decode()
    return (head[:-1] + ',"mqTable":{' + ",".join(entries) + "}}").encode()

"""Offsets per queue: topic status, consume stats (lag) and reset-offset answers.

RocketMQ answers these with a map keyed by ``MessageQueue`` (topic, brokerName, queueId), which
fastjson writes with the queue object as the key (see ``rocketq.admin.fastjson``):

* GET_TOPIC_STATS_INFO -> ``TopicStatsTable``: per queue minOffset, maxOffset, lastUpdateTimestamp.
* GET_CONSUME_STATS -> ``ConsumeStats``: per queue brokerOffset (the queue's max offset),
  consumerOffset (the group's committed offset), lastTimestamp; plus the group's consumeTps.
* INVOKE_BROKER_TO_RESET_OFFSET -> ``ResetOffsetBody``: per queue the offset it was reset to.

A group's lag (RocketMQ's ``computeTotalDiff``) is the sum over queues of
brokerOffset - consumerOffset. Tables from several brokers merge by queue: a queue lives on one
broker group, so merging never has to reconcile two answers for the same queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rocketq.admin import adminbodies, fastjson
from rocketq.protocol.queues import MessageQueue
from rocketq.protocol.sharedbodies import BodyError, integer, number, obj, text

__all__ = ["MessageQueue"]  # re-exported: admin callers name queues from here


def queue_from_key(key: Any, what: str) -> MessageQueue:
    """A fastjson map key that is a MessageQueue object (or that object written as a JSON string)."""
    if isinstance(key, fastjson.ObjectKey):
        fields = key.as_dict()
    elif isinstance(key, str):
        # a writer that serialised the key object as a JSON string
        fields = obj(adminbodies.load(key.encode(), what), what)
    else:
        raise BodyError(f"{what}: key {key!r} is not a MessageQueue")
    return MessageQueue(text(fields, "topic", what), text(fields, "brokerName", what), integer(fields, "queueId", what))


def _queue_table(body: bytes, what: str) -> tuple[dict[str, Any], list[tuple[MessageQueue, Any]]]:
    raw = obj(adminbodies.load(body, what), what)
    table = obj(raw.get("offsetTable", {}), f"{what}.offsetTable")
    entries = [(queue_from_key(k, f"{what}.offsetTable key"), v) for k, v in table.items()]
    return raw, sorted(entries, key=lambda e: e[0])


# --- topic status -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicOffset:
    min_offset: int
    max_offset: int
    last_update_timestamp: int


@dataclass(frozen=True, slots=True)
class TopicStats:
    offsets: tuple[tuple[MessageQueue, TopicOffset], ...]

    @property
    def total_messages(self) -> int:
        return sum(o.max_offset - o.min_offset for _, o in self.offsets)


def parse_topic_stats(body: bytes) -> TopicStats:
    _, entries = _queue_table(body, "topic stats")
    out = []
    for mq, value in entries:
        what = f"topic stats of {mq.broker_name}/{mq.queue_id}"
        value = obj(value, what)
        out.append((mq, TopicOffset(integer(value, "minOffset", what), integer(value, "maxOffset", what),
                                    integer(value, "lastUpdateTimestamp", what, 0))))
    return TopicStats(tuple(out))


def merge_topic_stats(parts: Iterable[TopicStats]) -> TopicStats:
    return TopicStats(tuple(sorted((e for part in parts for e in part.offsets), key=lambda e: e[0])))


# --- consume stats ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetWrapper:
    broker_offset: int
    consumer_offset: int
    last_timestamp: int

    @property
    def diff(self) -> int:
        return self.broker_offset - self.consumer_offset


@dataclass(frozen=True, slots=True)
class ConsumeStats:
    offsets: tuple[tuple[MessageQueue, OffsetWrapper], ...]
    consume_tps: float

    @property
    def total_diff(self) -> int:
        """The group's lag: sum of brokerOffset - consumerOffset over its queues."""
        return sum(o.diff for _, o in self.offsets)

    def topics(self) -> list[str]:
        return sorted({mq.topic for mq, _ in self.offsets})


def parse_consume_stats(body: bytes) -> ConsumeStats:
    raw, entries = _queue_table(body, "consume stats")
    out = []
    for mq, value in entries:
        what = f"consume stats of {mq.broker_name}/{mq.queue_id}"
        value = obj(value, what)
        out.append((mq, OffsetWrapper(integer(value, "brokerOffset", what), integer(value, "consumerOffset", what),
                                      integer(value, "lastTimestamp", what, 0))))
    return ConsumeStats(tuple(out), number(raw, "consumeTps", "consume stats", 0.0))


def merge_consume_stats(parts: Iterable[ConsumeStats]) -> ConsumeStats:
    parts = list(parts)
    offsets = sorted((e for part in parts for e in part.offsets), key=lambda e: e[0])
    return ConsumeStats(tuple(offsets), sum(p.consume_tps for p in parts))


# --- reset offset -----------------------------------------------------------------------------


def parse_reset_offsets(body: bytes) -> dict[MessageQueue, int]:
    """INVOKE_BROKER_TO_RESET_OFFSET's answer: the offset each queue now starts from."""
    if not body:
        return {}
    _, entries = _queue_table(body, "reset offset")
    out = {}
    for mq, value in entries:
        if isinstance(value, bool) or not isinstance(value, int):
            raise BodyError(f"reset offset of {mq.broker_name}/{mq.queue_id} is not an integer")
        out[mq] = value
    return out

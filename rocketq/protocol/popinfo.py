"""The texts a POP reply and its acks carry: extraInfo (``POP_CK``) and the offset infos.

RocketMQ's ``ExtraInfoUtil`` builds these, and every client (the Java remoting consumer, the
5.x proxy that turns them into gRPC receipt handles) parses them, so their layout is exact:

* **extraInfo**, one per popped message, space-separated::

      ckQueueOffset popTime invisibleTime reviveQid topicType brokerName queueId queueOffset

  ``ckQueueOffset`` is where the pop started reading that queue (the checkpoint's start);
  ``reviveQid`` is the revive queue holding the checkpoint, or 999 for an orderly pop;
  ``topicType`` says which topic the message really came from: ``0`` the topic itself, ``1``
  the POP retry topic ``%RETRY%<group>_<topic>``, ``2`` its v2 name ``%RETRY%<group>+<topic>``.
  The gRPC proxy appends the CommitLog offset as a ninth field (its receipt handle); parsers
  take the first eight and ignore the rest.
* **startOffsetInfo** ``"<t> <queueId> <startOffset>"``, one per queue read, joined by ``;``.
* **msgOffsetInfo** ``"<t> <queueId> <o1>,<o2>,..."``: the offsets of the messages returned.
* **orderCountInfo** (orderly pops) ``"<t> qo<queueId>%<offset> <count>"`` per message: how many
  times it was popped before, which the client reports as its reconsume times.

Parsers raise ``PopInfoError`` (a ValueError) for anything else; nothing here has side effects.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from rocketq.protocol.codes import RETRY_GROUP_TOPIC_PREFIX
from rocketq.protocol.sharedbodies import JAVA_INTEGER

ORDER_REVIVE_QID: Final = 999
"""``reviveQid`` of an orderly pop: no checkpoint exists; acks go to the order bookkeeping."""
RETRY_SEPARATOR_V1: Final = "_"
RETRY_SEPARATOR_V2: Final = "+"
EXTRA_INFO_FIELDS: Final = 8
ENTRY_SEPARATOR: Final = ";"
OFFSET_SEPARATOR: Final = ","
QUEUE_OFFSET_KEY_PREFIX: Final = "qo"
QUEUE_OFFSET_KEY_SEPARATOR: Final = "%"
MAX_INFO_LENGTH: Final = 1 << 20
"""Characters of an info text a parser looks at; a pop of 32 messages needs a few hundred."""
MAX_NUMBER_LENGTH: Final = 40
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


class PopInfoError(ValueError):
    """An extraInfo or offset info text that is not in RocketMQ's layout."""


class TopicType(enum.Enum):
    NORMAL = "0"
    RETRY_V1 = "1"
    RETRY_V2 = "2"


def topic_type(topic: str) -> TopicType:
    """RocketMQ's ``ExtraInfoUtil.getRetry``: which kind of topic a popped message came from."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return TopicType.RETRY_V2 if RETRY_SEPARATOR_V2 in topic else TopicType.RETRY_V1
    return TopicType.NORMAL


def pop_retry_topic(topic: str, group: str, *, v2: bool = False) -> str:
    """Where POP redelivers ``group``'s un-acked messages of ``topic`` (KeyBuilder.buildPopRetryTopic)."""
    separator = RETRY_SEPARATOR_V2 if v2 else RETRY_SEPARATOR_V1
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}{separator}{topic}"


def real_topic(kind: TopicType, topic: str, group: str) -> str:
    """The topic an extraInfo's message lives in, given the topic the consumer asked for."""
    if kind is TopicType.NORMAL:
        return topic
    return pop_retry_topic(topic, group, v2=kind is TopicType.RETRY_V2)


@dataclass(frozen=True, slots=True)
class ExtraInfo:
    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    topic_type: TopicType
    broker_name: str
    queue_id: int
    queue_offset: int

    @property
    def orderly(self) -> bool:
        return self.revive_qid == ORDER_REVIVE_QID

    @property
    def next_visible_time(self) -> int:
        return self.pop_time + self.invisible_time

    def build(self) -> str:
        return " ".join((str(self.ck_queue_offset), str(self.pop_time), str(self.invisible_time),
                         str(self.revive_qid), self.topic_type.value, self.broker_name, str(self.queue_id),
                         str(self.queue_offset)))

    @classmethod
    def parse(cls, text: str) -> ExtraInfo:
        parts = text[:MAX_INFO_LENGTH].split(" ")
        if len(parts) < EXTRA_INFO_FIELDS:
            raise PopInfoError(f"extraInfo has {len(parts)} fields, expected {EXTRA_INFO_FIELDS}")
        try:
            kind = TopicType(parts[4])
        except ValueError:
            raise PopInfoError(f"extraInfo topic type {parts[4][:10]!r} is not 0, 1 or 2") from None
        return cls(_int(parts[0]), _int(parts[1]), _int(parts[2]), _int(parts[3]), kind, parts[5],
                   _int(parts[6]), _int(parts[7]))


def _int(text: str) -> int:
    """Java's ``Long.parseLong``, which RocketMQ's ``ExtraInfoUtil`` uses (int() alone takes "1_0")."""
    if len(text) > MAX_NUMBER_LENGTH or not JAVA_INTEGER.fullmatch(text):
        raise PopInfoError(f"{text[:30]!r} is not a number")
    value = int(text)
    if not LONG_MIN <= value <= LONG_MAX:
        raise PopInfoError(f"{text[:30]!r} is out of a long's range")
    return value


QueueKey = tuple[TopicType, int]
"""(topic type, queue id): how the offset infos name a queue."""


def build_start_offset_info(entries: Iterable[tuple[str, int, int]]) -> str:
    """``(topic read, queueId, startOffset)`` per queue the pop read."""
    return ENTRY_SEPARATOR.join(f"{topic_type(t).value} {q} {o}" for t, q, o in entries)


def build_msg_offset_info(entries: Iterable[tuple[str, int, Sequence[int]]]) -> str:
    """``(topic read, queueId, offsets of the messages returned)`` per queue."""
    return ENTRY_SEPARATOR.join(
        f"{topic_type(t).value} {q} {OFFSET_SEPARATOR.join(map(str, offsets))}" for t, q, offsets in entries)


def build_order_count_info(entries: Iterable[tuple[str, int, int, int]]) -> str:
    """``(topic read, queueId, queueOffset, times popped before)`` per message of an orderly pop."""
    return ENTRY_SEPARATOR.join(
        f"{topic_type(t).value} {QUEUE_OFFSET_KEY_PREFIX}{q}{QUEUE_OFFSET_KEY_SEPARATOR}{o} {c}"
        for t, q, o, c in entries)


def _entries(text: str | None) -> list[list[str]]:
    if not text:
        return []
    out = []
    for entry in text[:MAX_INFO_LENGTH].split(ENTRY_SEPARATOR):
        parts = entry.split(" ")
        if len(parts) != 3:
            raise PopInfoError(f"offset info entry {entry[:60]!r} does not have 3 fields")
        out.append(parts)
    return out


def _kind(text: str) -> TopicType:
    try:
        return TopicType(text)
    except ValueError:
        raise PopInfoError(f"topic type {text[:10]!r} is not 0, 1 or 2") from None


def parse_start_offset_info(text: str | None) -> dict[QueueKey, int]:
    return {(_kind(t), _int(q)): _int(o) for t, q, o in _entries(text)}


def parse_msg_offset_info(text: str | None) -> dict[QueueKey, list[int]]:
    return {(_kind(t), _int(q)): [_int(o) for o in offsets.split(OFFSET_SEPARATOR)]
            for t, q, offsets in _entries(text)}


def parse_order_count_info(text: str | None) -> dict[tuple[TopicType, int, int | None], int]:
    """``(type, queueId, queueOffset)`` -> count; the offset is None in the older per-queue form."""
    counts: dict[tuple[TopicType, int, int | None], int] = {}
    for t, key, count in _entries(text):
        if key.startswith(QUEUE_OFFSET_KEY_PREFIX):
            queue, sep, offset = key[len(QUEUE_OFFSET_KEY_PREFIX):].partition(QUEUE_OFFSET_KEY_SEPARATOR)
            if not sep:
                raise PopInfoError(f"order count key {key[:40]!r} has no {QUEUE_OFFSET_KEY_SEPARATOR}")
            counts[(_kind(t), _int(queue), _int(offset))] = _int(count)
        else:
            counts[(_kind(t), _int(key), None)] = _int(count)
    return counts

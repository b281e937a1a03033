"""The revive log: POP's checkpoints and acks, stored as messages of ``rmq_sys_REVIVE_LOG_<cluster>``.

A non-orderly pop hands messages out *before* anyone knows whether they will be consumed, so
the broker writes down what it handed out: one **checkpoint** (tag ``ck``) per queue a pop read,
saying "group c popped these offsets of topic t, queue q at pt, invisible for it ms". Each ACK
adds an **ack** record (tag ``ack``) naming one offset of one checkpoint. Both go to the revive
queue chosen at pop time (``reviveQid``), through the ordinary CommitLog, so they are exactly as
durable as messages and survive a kill -9 with everything else the store wrote.
``rocketq.broker.revive`` reads the log back, matches acks to checkpoints and redelivers what was
never acked.

The JSON bodies use RocketMQ's field names (``PopCheckPoint``, ``AckMsg``), so a revive log
written by rocketq reads like RocketMQ's. RocketMQ also makes each record a timer message due at
the checkpoint's expiry; rocketq's revive service reads records as they are written instead and
keeps the pending checkpoints in memory (see its docstring), so no timer is needed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from rocketq.protocol import messageproperties
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import PutRequest, PutResult

REVIVE_TOPIC_PREFIX: Final = "rmq_sys_REVIVE_LOG_"
REVIVE_GROUP: Final = "CID_RMQ_SYS_REVIVE_GROUP"
"""The consumer group whose offsets in the revive topic say how far revive has settled."""
CK_TAG: Final = "ck"
ACK_TAG: Final = "ack"
BATCH_ACK_TAG: Final = "bAck"
MAX_CHECKPOINT_OFFSETS: Final = 1024
"""Offsets one checkpoint may name: a pop returns at most 32, so more means a corrupt record."""


class ReviveRecordError(ValueError):
    """A revive-topic message that is neither a checkpoint nor an ack rocketq can read."""


def revive_topic(cluster: str) -> str:
    return REVIVE_TOPIC_PREFIX + cluster


@dataclass(slots=True)
class CheckPoint:
    """One pop of one queue (RocketMQ's ``PopCheckPoint``)."""

    start_offset: int
    pop_time: int
    invisible_time: int
    queue_id: int
    topic: str
    """The topic the messages were read from (a retry topic for redeliveries)."""
    group: str
    broker_name: str
    offset_diffs: list[int]
    """Each popped message's queue offset minus ``start_offset``."""
    revive_offset: int = 0
    """Where this checkpoint sits in its revive queue (filled in when it is read back)."""
    re_put_times: int = 0
    acked: set[int] = field(default_factory=set)
    """Indexes into ``offset_diffs`` acked so far (RocketMQ's bitmap ``bm``)."""

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def key(self) -> tuple[str, str, int, int, int, str]:
        """What an ack names to find its checkpoint (RocketMQ's merge key)."""
        return (self.topic, self.group, self.queue_id, self.start_offset, self.pop_time, self.broker_name)

    @property
    def queue_offsets(self) -> list[int]:
        return [self.start_offset + d for d in self.offset_diffs]

    def ack(self, queue_offset: int) -> None:
        diff = queue_offset - self.start_offset
        if diff in self.offset_diffs:
            self.acked.add(self.offset_diffs.index(diff))

    @property
    def fully_acked(self) -> bool:
        return len(self.acked) >= len(self.offset_diffs)

    def unacked_offsets(self) -> list[int]:
        return [self.start_offset + d for i, d in enumerate(self.offset_diffs) if i not in self.acked]

    def to_json(self) -> bytes:
        bitmap = sum(1 << i for i in self.acked)
        return orjson.dumps({
            "so": self.start_offset, "pt": self.pop_time, "it": self.invisible_time, "bm": bitmap,
            "n": len(self.offset_diffs), "q": self.queue_id, "t": self.topic, "c": self.group,
            "ro": self.revive_offset, "d": self.offset_diffs, "bn": self.broker_name, "rp": self.re_put_times,
        })

    @classmethod
    def from_json(cls, body: bytes) -> CheckPoint:
        raw = _object(body)
        diffs = raw.get("d")
        if not isinstance(diffs, list) or len(diffs) > MAX_CHECKPOINT_OFFSETS:
            raise ReviveRecordError("checkpoint without a usable offset list")
        bitmap = _num(raw, "bm", 0)
        ck = cls(_num(raw, "so"), _num(raw, "pt"), _num(raw, "it"), _num(raw, "q"), _text(raw, "t"),
                 _text(raw, "c"), _text(raw, "bn", ""), [_as_int(d) for d in diffs], _num(raw, "ro", 0),
                 _num(raw, "rp", 0))
        ck.acked = {i for i in range(len(diffs)) if bitmap >> i & 1}
        return ck

    def put_request(self, revive: str, revive_qid: int, store_host: tuple[str, int]) -> PutRequest:
        uniq = f"{self.topic}@{self.queue_id}@{self.start_offset}@{self.group}@{self.pop_time}@{self.broker_name}@ck"
        return _record(revive, revive_qid, self.to_json(), CK_TAG, uniq, store_host)


@dataclass(frozen=True, slots=True)
class AckRecord:
    """One acked offset (RocketMQ's ``AckMsg``), or several of one checkpoint (``BatchAckMsg``,
    tag ``bAck``, its offsets in ``aol``)."""

    ack_offset: int
    start_offset: int
    group: str
    topic: str
    queue_id: int
    pop_time: int
    broker_name: str
    batch: tuple[int, ...] = ()

    @property
    def offsets(self) -> tuple[int, ...]:
        return self.batch or (self.ack_offset,)

    @property
    def tag(self) -> str:
        return BATCH_ACK_TAG if self.batch else ACK_TAG

    @property
    def key(self) -> tuple[str, str, int, int, int, str]:
        return (self.topic, self.group, self.queue_id, self.start_offset, self.pop_time, self.broker_name)

    def to_json(self) -> bytes:
        raw: dict[str, Any] = {"ao": self.ack_offset, "so": self.start_offset, "c": self.group, "t": self.topic,
                               "q": self.queue_id, "pt": self.pop_time, "bn": self.broker_name}
        if self.batch:
            raw["aol"] = list(self.batch)
        return orjson.dumps(raw)

    @classmethod
    def from_json(cls, body: bytes) -> AckRecord:
        raw = _object(body)
        batch = raw.get("aol") or []
        if not isinstance(batch, list) or len(batch) > MAX_CHECKPOINT_OFFSETS:
            raise ReviveRecordError("batch ack without a usable offset list")
        offsets = tuple(_as_int(o) for o in batch)
        first = offsets[0] if offsets else _REQUIRED
        return cls(_num(raw, "ao", first), _num(raw, "so"), _text(raw, "c"), _text(raw, "t"), _num(raw, "q"),
                   _num(raw, "pt"), _text(raw, "bn", ""), offsets)

    def put_request(self, revive: str, revive_qid: int, store_host: tuple[str, int]) -> PutRequest:
        uniq = (f"{self.topic}@{self.queue_id}@{self.ack_offset}@{self.group}@{self.pop_time}@{self.broker_name}"
                f"@{self.tag}")
        return _record(revive, revive_qid, self.to_json(), self.tag, uniq, store_host)


def _record(topic: str, queue_id: int, body: bytes, tag: str, uniq: str, host: tuple[str, int]) -> PutRequest:
    props = {messageproperties.TAGS: tag, messageproperties.UNIQ_KEY: uniq, messageproperties.WAIT: "false"}
    return PutRequest(topic, queue_id, body, 0, props, born_timestamp=int(time.time() * 1000), born_host=host)


class ReviveWriter:
    """Appends checkpoints and acks to the revive topic's queues (pop, ack and change-invisible use it)."""

    def __init__(self, store: MessageStore, topic: str, queue_nums: int, store_host: tuple[str, int]) -> None:
        self._store = store
        self.topic = topic
        self.queue_nums = queue_nums
        self._host = store_host
        self._next_qid = 0

    def next_queue(self) -> int:
        """Revive queues are used round-robin, as RocketMQ's pops do."""
        self._next_qid = (self._next_qid + 1) % self.queue_nums
        return self._next_qid

    async def checkpoint(self, ck: CheckPoint, revive_qid: int) -> PutResult:
        return await self._store.put(ck.put_request(self.topic, revive_qid, self._host))

    async def ack(self, ack: AckRecord, revive_qid: int) -> PutResult:
        return await self._store.put(ack.put_request(self.topic, revive_qid, self._host))


def _object(body: bytes) -> dict[str, Any]:
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ReviveRecordError(f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ReviveRecordError("not a JSON object")
    return raw


def _as_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReviveRecordError(f"{str(value)[:30]!r} is not an integer")
    return value


_REQUIRED: Final[Any] = object()


def _num(raw: dict[str, Any], name: str, default: Any = _REQUIRED) -> int:
    if name not in raw:
        if default is _REQUIRED:
            raise ReviveRecordError(f"field {name} is missing")
        return int(default)
    return _as_int(raw[name])


def _text(raw: dict[str, Any], name: str, default: Any = _REQUIRED) -> str:
    value = raw.get(name, default)
    if value is _REQUIRED or not isinstance(value, str):
        raise ReviveRecordError(f"field {name} is missing or not text")
    return value

"""The JSON bodies of POP's requests: BATCH_ACK_MESSAGE, QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE.

BATCH_ACK_MESSAGE carries many POP acks in one request (RocketMQ's ``BatchAckMessageRequestBody``).

JSON ``{"brokerName": ..., "acks": [BatchAck, ...]}``; each ``BatchAck`` acks any number of
offsets of one checkpoint, named as an extraInfo names it::

    {"c": group, "t": topic asked for, "r": topic type ("0", "1", "2"), "so": startOffset,
     "q": queueId, "rq": reviveQid, "pt": popTime, "it": invisibleTime, "b": offsets}

``b`` is a ``java.util.BitSet`` of ``offset - so``, written as fastjson writes the bytes of
``BitSet.toByteArray()`` (little-endian bit order, trailing zero bytes dropped): a base64
string. fastjson also reads the long field names (``consumerGroup``, ``topic``, ``retry``,
``startOffset``, ``queueId``, ``reviveQueueId``, ``popTime``, ``invisibleTime``, ``bitSet``), so
the parser does too. Malformed bodies raise ``BodyError``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from rocketq.protocol import popinfo, sharedbodies
from rocketq.protocol.queues import MessageQueue
from rocketq.protocol.sharedbodies import BodyError

MAX_BATCH_ACKS: Final = 1024
"""Checkpoints one batch may ack."""
MAX_BITSET_BYTES: Final = 1024
"""Bytes of one ``b``: offsets up to 8192 past the checkpoint start (a pop returns at most 32)."""
_LONG_NAMES: Final = {"consumerGroup": "c", "topic": "t", "retry": "r", "startOffset": "so", "queueId": "q",
                      "reviveQueueId": "rq", "popTime": "pt", "invisibleTime": "it", "bitSet": "b"}


@dataclass(frozen=True, slots=True)
class BatchAck:
    group: str
    topic: str
    topic_type: popinfo.TopicType
    start_offset: int
    queue_id: int
    revive_qid: int
    pop_time: int
    invisible_time: int
    offsets: tuple[int, ...]
    """Queue offsets acked (decoded from the bitset)."""

    def to_json(self) -> dict[str, Any]:
        return {"c": self.group, "t": self.topic, "r": self.topic_type.value, "so": self.start_offset,
                "q": self.queue_id, "rq": self.revive_qid, "pt": self.pop_time, "it": self.invisible_time,
                "b": base64.b64encode(bitset_bytes(o - self.start_offset for o in self.offsets)).decode()}


def bitset_bytes(bits: Iterable[int]) -> bytes:
    """``BitSet.toByteArray()`` of the given bit indexes."""
    value = 0
    for bit in bits:
        if bit < 0:
            raise ValueError(f"bit index {bit} is negative")
        value |= 1 << bit
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


def bitset_indexes(raw: bytes) -> list[int]:
    value = int.from_bytes(raw, "little")
    return [i for i in range(value.bit_length()) if value >> i & 1]


def encode_batch_ack_body(broker_name: str, acks: Sequence[BatchAck]) -> bytes:
    return orjson.dumps({"brokerName": broker_name, "acks": [a.to_json() for a in acks]})


def decode_batch_ack_body(body: bytes) -> tuple[str, list[BatchAck]]:
    raw = sharedbodies.load_json(body, "BatchAckMessageRequestBody")
    if not isinstance(raw, dict) or not isinstance(raw.get("acks"), list):
        raise BodyError("BatchAckMessageRequestBody has no acks list")
    if len(raw["acks"]) > MAX_BATCH_ACKS:
        raise BodyError(f"BatchAckMessageRequestBody has more than {MAX_BATCH_ACKS} acks")
    broker = raw.get("brokerName") or ""
    if not isinstance(broker, str):
        raise BodyError("brokerName is not text")
    return broker, [_batch_ack(item) for item in raw["acks"]]


def _batch_ack(item: object) -> BatchAck:
    if not isinstance(item, dict):
        raise BodyError("a BatchAck is not an object")
    fields: dict[str, Any] = {_LONG_NAMES.get(str(k), str(k)): v for k, v in item.items()}
    try:
        kind = popinfo.TopicType(str(fields.get("r", "0")))
    except ValueError:
        raise BodyError(f"BatchAck retry flag {str(fields.get('r'))[:10]!r} is not 0, 1 or 2") from None
    bits = fields.get("b")
    try:
        raw = base64.b64decode(bits, validate=True) if isinstance(bits, str) else None
    except (binascii.Error, ValueError):
        raw = None
    if raw is None or len(raw) > MAX_BITSET_BYTES:
        raise BodyError("BatchAck bitSet is not base64 bytes of a usable size")
    start = _integer(fields, "so")
    return BatchAck(_string(fields, "c"), _string(fields, "t"), kind, start, _integer(fields, "q"),
                    _integer(fields, "rq"), _integer(fields, "pt"), _integer(fields, "it"),
                    tuple(start + i for i in bitset_indexes(raw)))


def _integer(fields: dict[str, Any], name: str) -> int:
    value = fields.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BodyError(f"BatchAck field {name} is not an integer")
    return value


def _string(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    if not isinstance(value, str) or not value:
        raise BodyError(f"BatchAck field {name} is not text")
    return value


# --- QUERY_ASSIGNMENT (400) and SET_MESSAGE_REQUEST_MODE (401) -------------------------------

MODE_PULL: Final = "PULL"
MODE_POP: Final = "POP"
MESSAGE_MODELS: Final = ("CLUSTERING", "BROADCASTING")


@dataclass(frozen=True, slots=True)
class QueryAssignmentRequest:
    """``QueryAssignmentRequestBody``: which queues should this client consume, and how."""

    topic: str
    consumer_group: str
    client_id: str
    strategy_name: str = "AVG"
    message_model: str = "CLUSTERING"

    def encode(self) -> bytes:
        return orjson.dumps({"topic": self.topic, "consumerGroup": self.consumer_group, "clientId": self.client_id,
                             "strategyName": self.strategy_name, "messageModel": self.message_model})

    @classmethod
    def decode(cls, body: bytes) -> QueryAssignmentRequest:
        raw = _body_object(body, "QueryAssignmentRequestBody")
        where = "QueryAssignmentRequestBody"
        model = sharedbodies.text(raw, "messageModel", where, "CLUSTERING")
        if model not in MESSAGE_MODELS:
            raise BodyError(f"{where}: messageModel {model[:20]!r} is not CLUSTERING or BROADCASTING")
        return cls(sharedbodies.text(raw, "topic", where), sharedbodies.text(raw, "consumerGroup", where),
                   sharedbodies.text(raw, "clientId", where), sharedbodies.text(raw, "strategyName", where, "AVG"),
                   model)


@dataclass(frozen=True, slots=True)
class MessageRequestMode:
    """``SetMessageRequestModeRequestBody``: a group consumes a topic by PULL or by POP."""

    topic: str
    consumer_group: str
    mode: str = MODE_PULL
    pop_share_queue_num: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "consumerGroup": self.consumer_group, "mode": self.mode,
                "popShareQueueNum": self.pop_share_queue_num}

    def encode(self) -> bytes:
        return orjson.dumps(self.to_json())

    @classmethod
    def from_json(cls, raw: object) -> MessageRequestMode:
        where = "SetMessageRequestModeRequestBody"
        value = sharedbodies.obj(raw, where)
        mode = sharedbodies.text(value, "mode", where, MODE_PULL)
        if mode not in (MODE_PULL, MODE_POP):
            raise BodyError(f"{where}: mode {mode[:20]!r} is not PULL or POP")
        return cls(sharedbodies.text(value, "topic", where), sharedbodies.text(value, "consumerGroup", where), mode,
                   sharedbodies.integer(value, "popShareQueueNum", where, 0))

    @classmethod
    def decode(cls, body: bytes) -> MessageRequestMode:
        return cls.from_json(_body_object(body, "SetMessageRequestModeRequestBody"))


def encode_assignments(assignments: Iterable[tuple[MessageQueue, str]]) -> bytes:
    """``QueryAssignmentResponseBody``."""
    return orjson.dumps({"messageQueueAssignments": [
        {"messageQueue": mq.to_json(), "mode": mode, "attachments": {}} for mq, mode in assignments]})


def decode_assignments(body: bytes) -> list[tuple[MessageQueue, str]]:
    where = "QueryAssignmentResponseBody"
    raw = _body_object(body, where)
    out: list[tuple[MessageQueue, str]] = []
    for item in raw.get("messageQueueAssignments") or []:
        entry = sharedbodies.obj(item, where)
        mq = sharedbodies.obj(entry.get("messageQueue"), where)
        out.append((MessageQueue(sharedbodies.text(mq, "topic", where), sharedbodies.text(mq, "brokerName", where),
                                 sharedbodies.integer(mq, "queueId", where)),
                    sharedbodies.text(entry, "mode", where, MODE_PULL)))
    return out


def _body_object(body: bytes, where: str) -> dict[Any, Any]:
    return sharedbodies.obj(sharedbodies.load_json(body or b"null", where), where)

"""Message traces: RocketMQ's trace record encoding (``TraceDataEncoder``), both directions.

A client with message tracing on writes one *trace record* per traced event and sends batches
of them as ordinary messages to the trace topic (``RMQ_SYS_TRACE_TOPIC`` unless configured).
A trace message's body is the records concatenated; each record is its fields joined by
``\\x01`` (CONTENT_SPLITOR) and ended by ``\\x02`` (FIELD_SPLITOR). The field order depends on
the record's type, the first field:

* ``Pub`` (after a send): type, timestamp, regionId, producer group, topic, msgId, tags, keys,
  storeHost, bodyLength, costTime, msgType, offsetMsgId, success [, clientHost]
* ``SubBefore`` (before a listener call): type, timestamp, regionId, consumer group, requestId,
  msgId, retryTimes, keys
* ``SubAfter`` (after it): type, requestId, msgId, costTime, success, keys, contextCode,
  timestamp [, consumer group]. RocketMQ 4 wrote no group: the requestId ties it to its SubBefore.
* ``EndTransaction``: type, timestamp, regionId, producer group, topic, msgId, tags, keys,
  storeHost, msgType, transactionId, transactionState, fromTransactionCheck

Older Java clients wrote shorter Pub (13 fields, no offsetMsgId) and SubAfter (5 or 6 fields)
records; the decoder accepts those as Java's does. The trace message's KEYS are the traced
msgIds and keys, so ``queryMsgByKey`` on the trace topic finds a message's trace.

This module is pure (no I/O). Bad input raises ``TraceFormatError``; ``decode(..., strict=False)``
skips bad records instead, for readers of a topic anyone may write to.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

CONTENT_SEPARATOR: Final = "\x01"
RECORD_SEPARATOR: Final = "\x02"
DEFAULT_TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
TRACE_PRODUCER_GROUP: Final = "_INNER_TRACE_PRODUCER"
DEFAULT_REGION: Final = "DefaultRegion"
NULL: Final = "null"


class TraceType(enum.Enum):
    PUB = "Pub"
    SUB_BEFORE = "SubBefore"
    SUB_AFTER = "SubAfter"
    END_TRANSACTION = "EndTransaction"


class MessageType(enum.IntEnum):
    """RocketMQ's ``MessageType``; traces carry its ordinal."""

    NORMAL = 0
    TRANS_HALF = 1
    TRANS_COMMIT = 2
    DELAY = 3
    ORDER = 4


class ContextCode(enum.IntEnum):
    """RocketMQ's ``ConsumeReturnType`` ordinal, a SubAfter's contextCode."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


class TraceFormatError(ValueError):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceRecord:
    """One trace record; fields a type does not carry keep their defaults."""

    type: TraceType
    msg_id: str
    timestamp: int = 0
    region_id: str = DEFAULT_REGION
    group: str = ""
    topic: str = ""
    tags: str = ""
    keys: str = ""
    store_host: str = ""
    body_length: int = 0
    cost_time: int = 0
    msg_type: int = MessageType.NORMAL
    offset_msg_id: str = ""
    success: bool = True
    client_host: str = ""
    request_id: str = ""
    retry_times: int = 0
    context_code: int = ContextCode.SUCCESS
    transaction_id: str = ""
    transaction_state: str = ""
    from_transaction_check: bool = False

    def keys_for_index(self) -> list[str]:
        """What the trace message is indexed under: the msgId, and the keys when set."""
        return [self.msg_id, self.keys] if self.keys else [self.msg_id]


def _java(value: object) -> str:
    """A field as Java's StringBuilder appends it: booleans lower-case, enums by ordinal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(int(value)) if isinstance(value, enum.IntEnum) else str(value)


def _optional(text: str) -> str:
    """Tags and keys: Java appends a missing one as ``null``. Written so (a trailing empty field
    would be dropped by Java's ``split`` and break its decoder) and read back as empty."""
    return text or NULL


def _read_optional(text: str) -> str:
    return "" if text == NULL else text


def encode(record: TraceRecord) -> str:
    """One record in Java's field order, ending in the record separator."""
    r = record
    if r.type is TraceType.PUB:
        fields: list[object] = [r.type.value, r.timestamp, r.region_id, r.group, r.topic, r.msg_id, _optional(r.tags),
                                _optional(r.keys), r.store_host, r.body_length, r.cost_time, r.msg_type,
                                r.offset_msg_id, r.success]
        if r.client_host:
            fields.append(r.client_host)  # the 15th field newer Java decoders read
    elif r.type is TraceType.SUB_BEFORE:
        fields = [r.type.value, r.timestamp, r.region_id, r.group, r.request_id, r.msg_id, r.retry_times,
                  _optional(r.keys)]
    elif r.type is TraceType.SUB_AFTER:
        fields = [r.type.value, r.request_id, r.msg_id, r.cost_time, r.success, _optional(r.keys), r.context_code,
                  r.timestamp]
        if r.group:
            fields.append(r.group)  # the 9th field of RocketMQ 5's encoder
    else:
        fields = [r.type.value, r.timestamp, r.region_id, r.group, r.topic, r.msg_id, _optional(r.tags),
                  _optional(r.keys), r.store_host, r.msg_type, r.transaction_id, r.transaction_state,
                  r.from_transaction_check]
    for value in fields:
        if isinstance(value, str) and (CONTENT_SEPARATOR in value or RECORD_SEPARATOR in value):
            raise TraceFormatError(f"trace field {value!r} holds a separator character")
    return CONTENT_SEPARATOR.join(_java(v) for v in fields) + RECORD_SEPARATOR


def encode_batch(records: Iterable[TraceRecord]) -> bytes:
    return "".join(encode(r) for r in records).encode()


def index_keys(records: Iterable[TraceRecord]) -> list[str]:
    """The KEYS of a trace message holding ``records``: each msgId and key once, in order."""
    seen: dict[str, None] = {}
    for r in records:
        for key in r.keys_for_index():
            seen.setdefault(key, None)
    return list(seen)


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise TraceFormatError(f"{what} {text!r} is not an integer") from None


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Java's Boolean.parseBoolean: anything else is false


def _decode_pub(f: list[str]) -> TraceRecord:
    if len(f) < 13:
        raise TraceFormatError(f"Pub record has {len(f)} fields, expected 13 to 15")
    offset_msg_id, success, client_host = "", _bool(f[12]), ""
    if len(f) >= 14:
        offset_msg_id, success = f[12], _bool(f[13])
    if len(f) >= 15:
        client_host = f[14]
    return TraceRecord(type=TraceType.PUB, timestamp=_int(f[1], "timestamp"), region_id=f[2], group=f[3], topic=f[4],
                       msg_id=f[5], tags=_read_optional(f[6]), keys=_read_optional(f[7]), store_host=f[8],
                       body_length=_int(f[9], "bodyLength"),
                       cost_time=_int(f[10], "costTime"), msg_type=_int(f[11], "msgType"),
                       offset_msg_id=offset_msg_id, success=success, client_host=client_host)


def _decode_sub_before(f: list[str]) -> TraceRecord:
    if len(f) < 8:
        raise TraceFormatError(f"SubBefore record has {len(f)} fields, expected 8")
    return TraceRecord(type=TraceType.SUB_BEFORE, timestamp=_int(f[1], "timestamp"), region_id=f[2], group=f[3],
                       request_id=f[4], msg_id=f[5], retry_times=_int(f[6], "retryTimes"),
                       keys=_read_optional(f[7]))


def _decode_sub_after(f: list[str]) -> TraceRecord:
    if len(f) < 5:
        raise TraceFormatError(f"SubAfter record has {len(f)} fields, expected 5 to 8")
    return TraceRecord(type=TraceType.SUB_AFTER, request_id=f[1], msg_id=f[2], cost_time=_int(f[3], "costTime"),
                       success=_bool(f[4]), keys=_read_optional(f[5]) if len(f) >= 6 else "",
                       context_code=_int(f[6], "contextCode") if len(f) >= 7 else ContextCode.SUCCESS,
                       timestamp=_int(f[7], "timestamp") if len(f) >= 8 else 0,
                       group=f[8] if len(f) >= 9 else "")


def _decode_end_transaction(f: list[str]) -> TraceRecord:
    if len(f) < 13:
        raise TraceFormatError(f"EndTransaction record has {len(f)} fields, expected 13")
    return TraceRecord(type=TraceType.END_TRANSACTION, timestamp=_int(f[1], "timestamp"), region_id=f[2],
                       group=f[3], topic=f[4], msg_id=f[5], tags=_read_optional(f[6]), keys=_read_optional(f[7]),
                       store_host=f[8], msg_type=_int(f[9], "msgType"), transaction_id=f[10], transaction_state=f[11],
                       from_transaction_check=_bool(f[12]))


_DECODERS: Final = {
    TraceType.PUB.value: _decode_pub,
    TraceType.SUB_BEFORE.value: _decode_sub_before,
    TraceType.SUB_AFTER.value: _decode_sub_after,
    TraceType.END_TRANSACTION.value: _decode_end_transaction,
}


def decode_record(text: str) -> TraceRecord:
    """One record without its separator."""
    fields = text.split(CONTENT_SEPARATOR)
    decoder = _DECODERS.get(fields[0])
    if decoder is None:
        raise TraceFormatError(f"unknown trace type {fields[0][:40]!r}")
    return decoder(fields)


def decode(body: bytes | str, *, strict: bool = True) -> list[TraceRecord]:
    """Every record of a trace message body, in order.

    ``strict`` raises on the first bad record (or a body that is not UTF-8); otherwise bad records
    are skipped and undecodable bytes replaced.
    """
    if isinstance(body, bytes | bytearray | memoryview):
        try:
            text = bytes(body).decode()
        except UnicodeDecodeError as exc:
            if strict:
                raise TraceFormatError(f"trace body is not UTF-8: {exc}") from None
            text = bytes(body).decode(errors="replace")
    else:
        text = body
    out = []
    for part in text.split(RECORD_SEPARATOR):
        if not part:
            continue
        try:
            out.append(decode_record(part))
        except TraceFormatError:
            if strict:
                raise
    return out

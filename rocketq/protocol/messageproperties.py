"""Message properties: RocketMQ's names for them and the ``name\x01value\x02`` text they travel as.

A message's properties are a string-to-string map (tags, keys, the client's unique id, the
delay level, retry and transaction bookkeeping); their names are RocketMQ's ``MessageConst``.
On the wire and on disk the map is one string, each entry ``name \x01 value \x02``, at most
``MAX_PROPERTIES_LENGTH`` bytes (PROPLEN is a Java short). ``property_value`` reads one entry
without building a dict, which the broker's per-message path relies on; ``is_canonical`` tells
whether received text can be stored as it is instead of being encoded again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketq.protocol import nativecodecs
from rocketq.protocol.messageerrors import MessageFormatError, MessageIllegalError

MAX_PROPERTIES_LENGTH: Final = 32767
"""PROPLEN is a Java short: encoded properties longer than this cannot be stored."""

KEYS: Final = "KEYS"
TAGS: Final = "TAGS"
WAIT: Final = "WAIT"
DELAY: Final = "DELAY"
RETRY_TOPIC: Final = "RETRY_TOPIC"
REAL_TOPIC: Final = "REAL_TOPIC"
REAL_QID: Final = "REAL_QID"
TRAN_MSG: Final = "TRAN_MSG"
PGROUP: Final = "PGROUP"
MIN_OFFSET: Final = "MIN_OFFSET"
MAX_OFFSET: Final = "MAX_OFFSET"
BUYER_ID: Final = "BUYER_ID"
ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
TRANSFER_FLAG: Final = "TRANSFER_FLAG"
CORRECTION_FLAG: Final = "CORRECTION_FLAG"
MQ2_FLAG: Final = "MQ2_FLAG"
RECONSUME_TIME: Final = "RECONSUME_TIME"
MSG_REGION: Final = "MSG_REGION"
TRACE_ON: Final = "TRACE_ON"
UNIQ_KEY: Final = "UNIQ_KEY"
MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
CONSUME_START_TIME: Final = "CONSUME_START_TIME"
TRAN_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
INSTANCE_ID: Final = "INSTANCE_ID"
CORRELATION_ID: Final = "CORRELATION_ID"
REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
TTL: Final = "TTL"
ARRIVE_TIME: Final = "ARRIVE_TIME"
PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
CLUSTER: Final = "CLUSTER"
MSG_TYPE: Final = "MSG_TYPE"
SHARDING_KEY: Final = "__SHARDINGKEY"
TRANSACTION_ID: Final = "__transactionId__"

KEY_SEPARATOR: Final = " "
"""KEYS holds several keys separated by one space."""
NAME_VALUE_SEPARATOR: Final = "\x01"
PROPERTY_SEPARATOR: Final = "\x02"


@nativecodecs.accelerated
def encode_properties(properties: Mapping[str, str]) -> str:
    """``k\\x01v\\x02k\\x01v\\x02``; refuses names or values that would break the framing."""
    parts = []
    for name, value in properties.items():
        if not name or "\x01" in name or "\x02" in name:
            raise MessageIllegalError(f"illegal property name {name!r}")
        if "\x01" in value or "\x02" in value:
            raise MessageIllegalError(f"property {name!r} has a value containing \\x01 or \\x02")
        parts.append(f"{name}\x01{value}\x02")
    return "".join(parts)


@nativecodecs.accelerated
def decode_properties(text: str) -> dict[str, str]:
    """Parse ``k\\x01v\\x02...``; the final ``\\x02`` may be missing.

    An entry without a name/value separator, or with an empty name, is a MessageFormatError:
    silently dropping it (as Java's lenient parser does) would hide a client bug. A repeated
    name keeps its last value, like Java's HashMap.
    """
    out: dict[str, str] = {}
    if not text:
        return out
    for entry in text.split("\x02"):
        if not entry:
            continue
        name, sep, value = entry.partition("\x01")
        if not sep or not name:
            raise MessageFormatError(f"malformed property entry {entry[:40]!r}")
        out[name] = value
    return out


@nativecodecs.accelerated
def is_canonical(encoded: str, properties: Mapping[str, str]) -> bool:
    """True when ``properties`` (``decode_properties(encoded)``) encodes back to ``encoded``.

    That is: every entry ends with ``\\x02``, no name repeats and no value holds ``\\x01``, so
    each separator count equals the number of entries. A broker can then store the text it
    received instead of encoding the same properties again.
    """
    count = len(properties)
    return encoded.count("\x02") == count and encoded.count("\x01") == count and (
        not encoded or encoded[-1] == "\x02")


def property_value(encoded: str, name: str) -> str | None:
    """One property's value from an encoded string without building a dict (first occurrence)."""
    head = name + "\x01"
    if encoded.startswith(head):
        start = len(head)
    else:
        found = encoded.find("\x02" + head)
        if found < 0:
            return None
        start = found + len(head) + 1
    end = encoded.find("\x02", start)
    return encoded[start:] if end < 0 else encoded[start:end]


def split_keys(keys: str | None) -> list[str]:
    """The KEYS property as a list (space separated, empties dropped)."""
    if not keys:
        return []
    return [k for k in keys.split(KEY_SEPARATOR) if k]

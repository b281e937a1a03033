"""Messages: what a producer sends, and RocketMQ's stored-message record that brokers keep.

Two shapes of one message live here:

* ``Message`` is what a producer hands to a broker: a topic, a body, an int ``flag`` and a
  string-to-string properties map (tags, keys, the client's unique id, delay level, ...).
* A *stored record* is the same message after a broker accepted it, laid out exactly as
  RocketMQ's ``MessageDecoder``/``MessageExtEncoder`` write it (big-endian)::

      TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 | QUEUEOFFSET i64 |
      PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST ip+port |
      STORETIMESTAMP i64 | STOREHOST ip+port | RECONSUMETIMES i32 | PREPARED_TX_OFFSET i64 |
      BODYLEN i32 + body | TOPICLEN (i8 in V1, i16 in V2) + topic | PROPLEN i16 + properties

  The CommitLog is a concatenation of these records and a pull response body is a slice of it,
  so encoding happens once (when the broker accepts a message) and never again.
  ``MessageExt`` is a decoded record.

The record's QUEUEOFFSET and PHYSICALOFFSET sit at fixed positions (20 and 28) and
STORETIMESTAMP right after the born host (see ``store_timestamp_pos``), so the store encodes a
record before taking its write lock and stamps those three values in place once it knows them.

This module also holds the SEND_BATCH_MESSAGE body codec, the properties codec and Java's
``String.hashCode`` (tag codes and index keys are defined by it). It is pure: no I/O, no
clocks. It does not decide anything about topics, permissions or queues; that is the broker's.
"""

from __future__ import annotations

import enum
import functools
import operator
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketq.protocol import msgid

# --- limits ------------------------------------------------------------------------------------

DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
"""RocketMQ's ``maxMessageSize`` default: the largest stored record accepted."""
MAX_PROPERTIES_LENGTH: Final = 32767
"""PROPLEN is a Java short: encoded properties longer than this cannot be stored."""
MAX_TOPIC_LENGTH_V1: Final = 127
"""TOPICLEN is one (signed) byte in the V1 layout."""
MAX_TOPIC_LENGTH_V2: Final = 32767
MAX_INFLATED_BODY_SIZE: Final = 64 * 1024 * 1024
"""A compressed body that inflates beyond this is refused instead of eating memory."""

# --- magic codes ------------------------------------------------------------------------------

MAGIC_V1: Final = -626843481
"""0xDAA320A7 as Java's signed int: the record layout with a one-byte topic length."""
MAGIC_V2: Final = -626843477
"""0xDAA320AB: the same layout with a two-byte topic length (RocketMQ 5 long topics)."""
BLANK_MAGIC: Final = -875286124
"""0xCBD43194: the END_OF_FILE filler that closes a CommitLog segment."""
BATCH_ITEM_MAGIC: Final = 0
"""Producers write MAGIC 0 (and BODYCRC 0) inside a SEND_BATCH_MESSAGE body."""

# --- property names (MessageConst.java) --------------------------------------------------------

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


class MessageSysFlag:
    """Bits of a message's ``sysFlag`` (``MessageSysFlag.java``).

    The transaction type is the two-bit field ``TRANSACTION_MASK`` (ROLLBACK = PREPARED|COMMIT,
    so these are values of a field, not independent flags); the compression type is the
    three-bit field ``COMPRESSION_TYPE_MASK``.
    """

    COMPRESSED: Final = 0x1
    MULTI_TAGS: Final = 0x2
    TRANSACTION_NOT_TYPE: Final = 0
    TRANSACTION_PREPARED_TYPE: Final = 0x4
    TRANSACTION_COMMIT_TYPE: Final = 0x8
    TRANSACTION_ROLLBACK_TYPE: Final = 0xC
    TRANSACTION_MASK: Final = 0xC
    BORNHOST_V6: Final = 0x10
    STOREHOST_V6: Final = 0x20
    NEED_UNWRAP: Final = 0x40
    INNER_BATCH: Final = 0x80
    COMPRESSION_TYPE_MASK: Final = 0x700


class CompressionType(enum.IntEnum):
    """Value of sysFlag bits 8-10; 0 means "not stated", which RocketMQ 4 treats as zlib."""

    UNSTATED = 0
    LZ4 = 1
    ZSTD = 2
    ZLIB = 3


def transaction_type(sys_flag: int) -> int:
    return sys_flag & MessageSysFlag.TRANSACTION_MASK


def with_transaction_type(sys_flag: int, tx_type: int) -> int:
    return (sys_flag & ~MessageSysFlag.TRANSACTION_MASK) | tx_type


def compression_type(sys_flag: int) -> CompressionType | None:
    """The compression type bits, or None when they hold a value RocketMQ does not define."""
    value = (sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK) >> 8
    return CompressionType(value) if value in _COMPRESSION_VALUES else None


_COMPRESSION_VALUES: Final = frozenset(int(c) for c in CompressionType)


# --- errors ------------------------------------------------------------------------------------


class MessageFormatError(ValueError):
    """Bytes that claim to be a stored record, batch body or properties string are corrupt."""


class MessageIllegalError(ValueError):
    """A message cannot be encoded within RocketMQ's limits (size, topic length, separators)."""


class PropertiesSizeExceededError(MessageIllegalError):
    """Encoded properties are longer than MAX_PROPERTIES_LENGTH."""


# --- Java String.hashCode ---------------------------------------------------------------------

_INT32_MASK: Final = 0xFFFFFFFF


@functools.cache
def _powers_of_31(length: int) -> tuple[int, ...]:
    """31**(n-1) .. 31**0, each reduced mod 2**32: the weights of Java's polynomial hash."""
    powers = [1] * length
    for i in range(length - 2, -1, -1):
        powers[i] = (powers[i + 1] * 31) & _INT32_MASK
    return tuple(powers)


_BASE31_DIGITS: Final = "0123456789abcdefghijklmnopqrstu"
_LOW_DIGIT: Final = str.maketrans({c: _BASE31_DIGITS[c % 31] for c in range(128)})
_HIGH_DIGIT: Final = str.maketrans({c: _BASE31_DIGITS[c // 31] for c in range(128)})


def java_string_hash_unsigned(text: str) -> int:
    """Java's ``String.hashCode()`` over the UTF-16 code units of ``text``, as 0 .. 2**32-1.

    The hash is the polynomial sum(c[i] * 31**(n-1-i)) mod 2**32: for ASCII text each code
    c = lo + 31*hi with lo, hi < 31, so it is int(lo digits, 31) + 31 * int(hi digits, 31), two
    C-level parses instead of a Python loop over characters (this runs for every index key).
    Other text uses a dot product with pre-reduced weights.
    """
    if not text:
        return 0
    if text.isascii():
        return (int(text.translate(_LOW_DIGIT), 31) + 31 * int(text.translate(_HIGH_DIGIT), 31)) & _INT32_MASK
    raw = text.encode("utf-16-be")
    length = len(raw) // 2
    units = struct.unpack(f">{length}H", raw)
    return sum(map(operator.mul, units, _powers_of_31(length))) & _INT32_MASK


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (signed 32-bit) over the UTF-16 code units of ``text``."""
    value = java_string_hash_unsigned(text)
    return value - 0x100000000 if value & 0x80000000 else value


def java_string_hash_after(prefix_hash: int, text: str) -> int:
    """``java_string_hash_unsigned(prefix + text)`` from the prefix's unsigned hash.

    The polynomial composes: hash(p + t) = hash(p) * 31**len16(t) + hash(t) (mod 2**32), where
    len16 counts UTF-16 code units. A caller hashing many keys behind one prefix (the index's
    ``topic#``) hashes the prefix once.
    """
    units = len(text) if text.isascii() else len(text.encode("utf-16-be")) // 2
    return (prefix_hash * _power_of_31(units) + java_string_hash_unsigned(text)) & _INT32_MASK


@functools.lru_cache(maxsize=1024)
def _power_of_31(n: int) -> int:
    return pow(31, n, 1 << 32)


@functools.lru_cache(maxsize=4096)
def tag_hash(tag: str | None) -> int:
    """The ConsumeQueue tag code of a TAGS value: Java's hashCode, 0 when there is no tag.

    Cached: a topic's messages carry few distinct tags, and every message needs its code.
    """
    if not tag:
        return 0
    return java_string_hash(tag)


# --- properties --------------------------------------------------------------------------------


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


# --- Message -----------------------------------------------------------------------------------


@dataclass(slots=True)
class Message:
    """What a producer sends. Mutable on purpose: producers stamp ids and flags before sending."""

    topic: str
    body: bytes
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> str | None:
        return self.properties.get(TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(TAGS, value)

    @property
    def keys(self) -> list[str]:
        return split_keys(self.properties.get(KEYS))

    @keys.setter
    def keys(self, value: Iterable[str]) -> None:
        joined = KEY_SEPARATOR.join(k for k in value if k)
        self._set(KEYS, joined or None)

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(UNIQ_KEY)

    @uniq_key.setter
    def uniq_key(self, value: str | None) -> None:
        self._set(UNIQ_KEY, value)

    @property
    def delay_level(self) -> int:
        raw = self.properties.get(DELAY)
        return int(raw) if raw and raw.lstrip("-").isdigit() else 0

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        self._set(DELAY, str(level) if level > 0 else None)

    @property
    def transaction_id(self) -> str | None:
        return self.properties.get(TRANSACTION_ID)

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value


# --- hosts -------------------------------------------------------------------------------------

Host = msgid.Host


def pack_host(host: Host) -> bytes:
    """IP bytes (4 or 16) + port i32, as stored; MessageIllegalError for a bad address."""
    try:
        return msgid.pack_host(host)
    except ValueError as exc:
        raise MessageIllegalError(str(exc)) from None


# --- stored record -----------------------------------------------------------------------------

_HEAD = struct.Struct(">iiiiiqqiq")
"""TOTALSIZE .. BORNTIMESTAMP: 48 bytes, identical in V1 and V2."""
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_TAIL = struct.Struct(">iqi")
"""RECONSUMETIMES, PREPARED_TX_OFFSET, BODYLEN."""
_PREFIX = struct.Struct(">ii")
_FIXED_FIELDS: Final = {
    (born, store): struct.Struct(f">iiiiiqqiq{born}sq{store}siqi") for born in (8, 20) for store in (8, 20)
}
"""TOTALSIZE .. BODYLEN in one pack, by the widths of the born and store hosts."""
_HOSTS_TO_BODYLEN: Final = {
    (born, store): struct.Struct(f">{born}sq{store}siqi") for born in (8, 20) for store in (8, 20)
}
"""BORNHOST .. BODYLEN (after the 48 bytes every layout starts with) in one unpack."""

TOTAL_SIZE_POS: Final = 0
MAGIC_POS: Final = 4
BODY_CRC_POS: Final = 8
QUEUE_ID_POS: Final = 12
QUEUE_OFFSET_POS: Final = 20
PHYSICAL_OFFSET_POS: Final = 28
SYS_FLAG_POS: Final = 36
BORN_HOST_POS: Final = 48
POSITIONS = struct.Struct(">qq")
"""QUEUEOFFSET and PHYSICALOFFSET are adjacent: one pack_into at QUEUE_OFFSET_POS stamps both."""
STORE_TIMESTAMP = _I64
MIN_RECORD_SIZE: Final = _HEAD.size + 8 + 8 + 8 + _TAIL.size + 1 + 2
"""The smallest possible V1 record (IPv4 hosts, empty body, topic and properties)."""


def host_size(sys_flag: int, v6_bit: int) -> int:
    return 20 if sys_flag & v6_bit else 8


def store_timestamp_pos(sys_flag: int) -> int:
    """Where STORETIMESTAMP sits: after the born host, whose width the sysFlag tells."""
    return BORN_HOST_POS + host_size(sys_flag, MessageSysFlag.BORNHOST_V6)


def body_crc(body: bytes | memoryview) -> int:
    """RocketMQ's ``UtilAll.crc32``: CRC-32 with the sign bit cleared."""
    return zlib.crc32(body) & 0x7FFFFFFF


def encode_stored_record(
    *,
    topic: str,
    queue_id: int,
    body: bytes,
    flag: int = 0,
    properties: Mapping[str, str] | str = "",
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: Host = ("127.0.0.1", 0),
    store_timestamp: int = 0,
    store_host: Host = ("127.0.0.1", 0),
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    magic: int = MAGIC_V1,
) -> bytes:
    """Build one stored record. The host-family bits of ``sys_flag`` follow the hosts given.

    Raises MessageIllegalError (or its PropertiesSizeExceededError) when a RocketMQ limit is
    exceeded; nothing is truncated silently.
    """
    props = properties if isinstance(properties, str) else encode_properties(properties)
    encoder = RecordEncoder(store_host, max_message_size, magic)
    record, _ts_pos = encoder.encode(topic, queue_id, body, flag, props, sys_flag, born_timestamp, born_host,
                                     reconsume_times, prepared_transaction_offset, queue_offset,
                                     physical_offset, store_timestamp)
    return record


class RecordEncoder:
    """Encodes stored records for one store host: the broker's per-message hot path.

    The store host's bytes, the fixed part of the size and each topic's length-prefixed bytes
    are computed once; ``encode`` then validates limits and joins the parts.
    """

    _TOPIC_CACHE_LIMIT: Final = 10000

    def __init__(self, store_host: Host, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 magic: int = MAGIC_V1) -> None:
        if magic not in (MAGIC_V1, MAGIC_V2):
            raise MessageIllegalError(f"unknown record magic {magic:#x}")
        self._magic = magic
        self._store = pack_host(store_host)
        self._store_flag = MessageSysFlag.STOREHOST_V6 if len(self._store) == 20 else 0
        self._fixed = _HEAD.size + 8 + len(self._store) + _TAIL.size + 2
        self._max = max_message_size
        self._topics: dict[str, bytes] = {}
        self._layouts = {8: _FIXED_FIELDS[8, len(self._store)], 20: _FIXED_FIELDS[20, len(self._store)]}

    def _topic_part(self, topic: str) -> bytes:
        raw = topic.encode()
        limit = MAX_TOPIC_LENGTH_V1 if self._magic == MAGIC_V1 else MAX_TOPIC_LENGTH_V2
        if not 0 < len(raw) <= limit:
            raise MessageIllegalError(f"topic length {len(raw)} not in 1..{limit}")
        part = (_I8 if self._magic == MAGIC_V1 else _I16).pack(len(raw)) + raw
        if len(self._topics) >= self._TOPIC_CACHE_LIMIT:
            self._topics.clear()
        self._topics[topic] = part
        return part

    def for_sender(
        self, topic: str, queue_id: int, sys_flag: int, born_timestamp: int, born_host: Host, reconsume_times: int,
    ) -> tuple[Callable[[bytes, int, str], bytes], int]:
        """An encoder for several messages from one sender to one queue (a batch), and the
        position of their STORETIMESTAMP. What the messages share is encoded once; each call
        ``encode(body, flag, properties)`` validates and returns a record exactly as ``encode``."""
        topic_part = self._topics.get(topic) or self._topic_part(topic)
        born = pack_host(born_host)
        sys_flag = (sys_flag & ~(MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOST_V6)) | self._store_flag
        if len(born) == 20:
            sys_flag |= MessageSysFlag.BORNHOST_V6
        pack, magic, store, limit = self._layouts[len(born)].pack, self._magic, self._store, self._max
        fixed = self._fixed + len(born) + len(topic_part)

        def encode(body: bytes, flag: int, properties: str) -> bytes:
            props_raw = properties.encode()
            if len(props_raw) > MAX_PROPERTIES_LENGTH:
                raise PropertiesSizeExceededError(
                    f"properties are {len(props_raw)} bytes, the limit is {MAX_PROPERTIES_LENGTH}")
            total = fixed + len(body) + len(props_raw)
            if total > limit:
                raise MessageIllegalError(f"message of {total} bytes exceeds the limit of {limit}")
            try:
                return b"".join((
                    pack(total, magic, zlib.crc32(body) & 0x7FFFFFFF, queue_id, flag, 0, 0, sys_flag, born_timestamp,
                         born, 0, store, reconsume_times, 0, len(body)),
                    body, topic_part, _I16.pack(len(props_raw)), props_raw,
                ))
            except struct.error as exc:
                raise MessageIllegalError(f"a numeric field is out of range: {exc}") from None

        return encode, BORN_HOST_POS + len(born)

    def encode(
        self, topic: str, queue_id: int, body: bytes, flag: int, properties: str, sys_flag: int,
        born_timestamp: int, born_host: Host, reconsume_times: int = 0, prepared_transaction_offset: int = 0,
        queue_offset: int = 0, physical_offset: int = 0, store_timestamp: int = 0,
    ) -> tuple[bytes, int]:
        """The record, and the position of its STORETIMESTAMP (for stamping it later)."""
        props_raw = properties.encode()
        if len(props_raw) > MAX_PROPERTIES_LENGTH:
            raise PropertiesSizeExceededError(
                f"properties are {len(props_raw)} bytes, the limit is {MAX_PROPERTIES_LENGTH}")
        topic_part = self._topics.get(topic) or self._topic_part(topic)
        born = pack_host(born_host)
        sys_flag = (sys_flag & ~(MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOST_V6)) | self._store_flag
        if len(born) == 20:
            sys_flag |= MessageSysFlag.BORNHOST_V6
        total = self._fixed + len(born) + len(body) + len(topic_part) + len(props_raw)
        if total > self._max:
            raise MessageIllegalError(f"message of {total} bytes exceeds the limit of {self._max}")
        try:
            record = b"".join((
                self._layouts[len(born)].pack(
                    total, self._magic, zlib.crc32(body) & 0x7FFFFFFF, queue_id, flag, queue_offset, physical_offset,
                    sys_flag, born_timestamp, born, store_timestamp, self._store, reconsume_times,
                    prepared_transaction_offset, len(body)),
                body, topic_part, _I16.pack(len(props_raw)), props_raw,
            ))
        except struct.error as exc:
            raise MessageIllegalError(f"a numeric field is out of range: {exc}") from None
        return record, BORN_HOST_POS + len(born)


@dataclass(slots=True)
class MessageExt:
    """A decoded stored record: every field of the layout plus the two message ids.

    Read-only by convention, not ``frozen``: a consumer decodes one per message, and a frozen
    dataclass's ``__init__`` (``object.__setattr__`` per field, 18 fields) costs about nine
    times what plain slot assignment does. Use ``dataclasses.replace`` for a changed copy.
    """

    store_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: Host
    store_timestamp: int
    store_host: Host
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict[str, str]
    offset_msg_id: str

    @property
    def msg_id(self) -> str:
        """The client's UNIQ_KEY when it set one, else the offset message id."""
        return self.properties.get(UNIQ_KEY) or self.offset_msg_id

    @property
    def tags(self) -> str | None:
        return self.properties.get(TAGS)

    @property
    def keys(self) -> list[str]:
        return split_keys(self.properties.get(KEYS))

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(UNIQ_KEY)


def inflate_body(body: bytes, sys_flag: int) -> bytes:
    """Undo a producer's compression; only zlib is available without extra libraries."""
    kind = compression_type(sys_flag)
    if kind is None:
        raise MessageFormatError(f"unknown compression type in sysFlag {sys_flag:#x}")
    if kind not in (CompressionType.UNSTATED, CompressionType.ZLIB):
        raise MessageFormatError(f"{kind.name} compressed bodies are not supported")
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(body, MAX_INFLATED_BODY_SIZE)
    except zlib.error as exc:
        raise MessageFormatError(f"compressed body does not inflate: {exc}") from None
    if inflater.unconsumed_tail:
        raise MessageFormatError(f"compressed body inflates beyond {MAX_INFLATED_BODY_SIZE} bytes")
    return out


def record_size_at(buf: bytes | bytearray | memoryview | object, pos: int) -> int:
    """TOTALSIZE of the record at ``pos`` if the bytes there start a V1/V2 record, else 0.

    Cheap pre-check (magic and size bounds only) used by scanners before a full decode.
    """
    view = memoryview(buf)  # type: ignore[arg-type]
    if pos < 0 or len(view) - pos < 8:
        return 0
    total, magic = _PREFIX.unpack_from(view, pos)
    if magic not in (MAGIC_V1, MAGIC_V2) or total < MIN_RECORD_SIZE or total > len(view) - pos:
        return 0
    return total


def decode_stored_record(
    buf: bytes | bytearray | memoryview | object,
    pos: int = 0,
    *,
    decompress: bool = True,
    check_crc: bool = False,
) -> MessageExt:
    """Decode the record at ``pos``. Every length is checked against TOTALSIZE and the buffer.

    ``check_crc`` verifies BODYCRC over the stored body (what recovery does). Raises
    MessageFormatError for anything that is not a well-formed record.
    """
    return _decode(memoryview(buf), pos, decompress, check_crc)[0]  # type: ignore[arg-type]


def _decode(view: memoryview, pos: int, decompress: bool, check_crc: bool) -> tuple[MessageExt, int]:
    """Decode one record; also return where it really ends (see ``_legacy_compressed``)."""
    limit = len(view)
    if pos < 0 or limit - pos < _HEAD.size:
        raise MessageFormatError(f"no room for a record header at {pos}")
    (total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag,
     born_ts) = _HEAD.unpack_from(view, pos)
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise MessageFormatError(f"bad magic {magic & 0xFFFFFFFF:#010x} at {pos}")
    if total < MIN_RECORD_SIZE or total > limit - pos:
        raise MessageFormatError(f"TOTALSIZE {total} at {pos} does not fit the buffer")
    born_len = 20 if sys_flag & MessageSysFlag.BORNHOST_V6 else 8
    store_len = 20 if sys_flag & MessageSysFlag.STOREHOST_V6 else 8
    at = pos + _HEAD.size
    middle = _HOSTS_TO_BODYLEN[born_len, store_len]
    if at + middle.size > limit:
        raise MessageFormatError(f"record at {pos} is cut inside its fixed fields")
    born_raw, store_ts, store_raw, reconsume, prepared, body_len = middle.unpack_from(view, at)
    at += middle.size
    if body_len < 0 or at + body_len > limit:
        raise MessageFormatError(f"BODYLEN {body_len} overruns the record at {pos}")
    body = bytes(view[at:at + body_len])
    at += body_len
    topic_width = 1 if magic == MAGIC_V1 else 2
    if at + topic_width > limit:
        raise MessageFormatError(f"record at {pos} is cut before TOPICLEN")
    (topic_len,) = (_I8 if topic_width == 1 else _I16).unpack_from(view, at)
    at += topic_width
    topic_raw = _take(view, at, topic_len, limit, "TOPICLEN", pos)
    at += topic_len
    if at + 2 > limit:
        raise MessageFormatError(f"record at {pos} is cut before PROPLEN")
    (props_len,) = _I16.unpack_from(view, at)
    at += 2
    props_raw = _take(view, at, props_len, limit, "PROPLEN", pos)
    at += props_len
    inflated = None
    if at != pos + total:
        inflated = _legacy_compressed(body, sys_flag, total, at - pos)
        if inflated is None:
            raise MessageFormatError(f"record at {pos}: fields span {at - pos} bytes, TOTALSIZE says {total}")
    try:
        topic = topic_raw.decode()
        properties = decode_properties(props_raw.decode())
    except UnicodeDecodeError as exc:
        raise MessageFormatError(f"record at {pos}: text is not UTF-8: {exc}") from None
    if check_crc and body_crc(body) != crc:
        raise MessageFormatError(f"BODYCRC mismatch at {pos}")
    if decompress and sys_flag & MessageSysFlag.COMPRESSED:
        body = inflated if inflated is not None else inflate_body(body, sys_flag)
    # positional, in field order: keyword arguments cost more than the rest of the decoding
    record = MessageExt(
        total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, _unpack_host(born_raw), store_ts,
        _unpack_host(store_raw), reconsume, prepared, body, topic, properties,
        msgid.offset_msg_id_from_raw(store_raw, phys),
    )
    return record, at


_unpack_host = functools.lru_cache(maxsize=4096)(msgid.unpack_host)
"""Hosts repeat (a consumer sees a few producers and brokers): decode each packed form once."""


def _take(view: memoryview, at: int, length: int, limit: int, what: str, pos: int) -> bytes:
    if length < 0 or at + length > limit:
        raise MessageFormatError(f"{what} {length} overruns the record at {pos}")
    return bytes(view[at:at + length])


def _legacy_compressed(body: bytes, sys_flag: int, total: int, spanned: int) -> bytes | None:
    """MetaQ-era brokers stored a compressed body but TOTALSIZE (and BODYCRC) of the original.

    Such a record is accepted when TOTALSIZE matches the layout with the inflated body; its
    true extent is then the fields' span, as Java's field-by-field decoder reads it. Returns
    the inflated body, or None when the record is simply inconsistent.
    """
    if not sys_flag & MessageSysFlag.COMPRESSED:
        return None
    try:
        inflated = inflate_body(body, sys_flag)
    except MessageFormatError:
        return None
    return inflated if spanned - len(body) + len(inflated) == total else None


def iter_stored_records(
    buf: bytes | bytearray | memoryview | object,
    *,
    decompress: bool = True,
    strict: bool = False,
) -> Iterator[MessageExt]:
    """Decode consecutive records (a pull body, a CommitLog segment).

    Stops at TOTALSIZE 0, the END_OF_FILE blank record, or bytes without a record magic. A
    record whose magic is right but whose content is corrupt ends the iteration, or raises
    MessageFormatError when ``strict``.
    """
    view = memoryview(buf)  # type: ignore[arg-type]
    pos = 0
    while len(view) - pos >= 8:
        total, magic = _PREFIX.unpack_from(view, pos)
        if total <= 0 or magic not in (MAGIC_V1, MAGIC_V2):
            return
        try:
            record, pos = _decode(view, pos, decompress, False)
        except MessageFormatError:
            if strict:
                raise
            return
        yield record


def stored_properties(buf: bytes | bytearray | memoryview, pos: int = 0) -> dict[str, str]:
    """The properties of the stored record at ``pos``, skipping over (never copying) its body.

    A broker-side SQL92 filter needs only these for each candidate of a pull; decoding the
    whole record would copy every body it then throws away. MessageFormatError if the record's
    lengths do not fit.
    """
    view = memoryview(buf)
    limit = len(view)
    if pos < 0 or limit - pos < _HEAD.size:
        raise MessageFormatError(f"no room for a record header at {pos}")
    head = _HEAD.unpack_from(view, pos)
    magic, sys_flag = head[1], head[7]
    born_len = 20 if sys_flag & MessageSysFlag.BORNHOST_V6 else 8
    store_len = 20 if sys_flag & MessageSysFlag.STOREHOST_V6 else 8
    middle = _HOSTS_TO_BODYLEN[born_len, store_len]
    at = pos + _HEAD.size
    if at + middle.size > limit:
        raise MessageFormatError(f"record at {pos} is cut inside its fixed fields")
    at += middle.size + middle.unpack_from(view, at)[-1]
    topic_width = _I8 if magic == MAGIC_V1 else _I16
    if at < 0 or at + topic_width.size > limit:
        raise MessageFormatError(f"record at {pos} is cut before TOPICLEN")
    at += topic_width.size + topic_width.unpack_from(view, at)[0]
    if at < 0 or at + 2 > limit:
        raise MessageFormatError(f"record at {pos} is cut before PROPLEN")
    (props_len,) = _I16.unpack_from(view, at)
    raw = _take(view, at + 2, props_len, limit, "PROPLEN", pos)
    try:
        return decode_properties(raw.decode())
    except UnicodeDecodeError as exc:
        raise MessageFormatError(f"record at {pos}: properties are not UTF-8: {exc}") from None


# --- batch send body ---------------------------------------------------------------------------

_BATCH_HEAD = struct.Struct(">iiiii")
"""TOTALSIZE, MAGIC, BODYCRC, FLAG, BODYLEN."""


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One message of a SEND_BATCH_MESSAGE body (the topic comes from the request header)."""

    flag: int
    body: bytes
    properties: dict[str, str]
    encoded_properties: str


def decode_batch_body(body: bytes | bytearray | memoryview) -> list[BatchItem]:
    """Split a batch body into its messages; any inconsistency is a MessageFormatError."""
    return [BatchItem(flag, item_body, props, encoded) for item_body, flag, props, encoded in batch_entries(body)]


def batch_entries(body: bytes | bytearray | memoryview) -> list[tuple[bytes, int, dict[str, str], str]]:
    """``decode_batch_body`` as plain tuples (body, flag, properties, encoded properties): the
    broker's per-message path, which has no use for an object per message."""
    view = memoryview(body)
    items: list[tuple[bytes, int, dict[str, str], str]] = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < _BATCH_HEAD.size + 2:
            raise MessageFormatError(f"truncated batch item at {pos}")
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(view, pos)
        at = pos + _BATCH_HEAD.size
        if body_len < 0 or total < _BATCH_HEAD.size + 2 + body_len or pos + total > len(view):
            raise MessageFormatError(f"batch item at {pos}: TOTALSIZE {total} / BODYLEN {body_len} inconsistent")
        item_body = bytes(view[at:at + body_len])
        at += body_len
        (props_len,) = _I16.unpack_from(view, at)
        at += 2
        if props_len < 0 or at + props_len != pos + total:
            raise MessageFormatError(f"batch item at {pos}: PROPLEN {props_len} does not end the item")
        try:
            encoded = bytes(view[at:at + props_len]).decode()
        except UnicodeDecodeError:
            raise MessageFormatError(f"batch item at {pos}: properties are not UTF-8") from None
        items.append((item_body, flag, decode_properties(encoded), encoded))
        pos += total
    return items


def encode_batch_body(messages: Iterable[Message]) -> bytes:
    """The body a producer sends with SEND_BATCH_MESSAGE (``MessageDecoder.encodeMessages``)."""
    return encode_batch_entries((m.body, m.flag, encode_properties(m.properties)) for m in messages)


def encode_batch_entries(entries: Iterable[tuple[bytes, int, str]]) -> bytes:
    """``encode_batch_body`` from (body, flag, encoded properties): for a caller that already
    encoded the properties (to validate them) and should not do it twice."""
    parts = []
    for body, flag, properties in entries:
        props = properties.encode()
        if len(props) > MAX_PROPERTIES_LENGTH:
            raise PropertiesSizeExceededError(f"properties are {len(props)} bytes")
        parts.append(_BATCH_HEAD.pack(_BATCH_HEAD.size + len(body) + 2 + len(props), BATCH_ITEM_MAGIC, 0, flag,
                                      len(body)))
        parts.append(body)
        parts.append(_I16.pack(len(props)))
        parts.append(props)
    return b"".join(parts)

"""RocketMQ's stored-message record: the bytes a broker keeps and a pull answer carries.

A *stored record* is a message after a broker accepted it, laid out exactly as RocketMQ's
``MessageDecoder``/``MessageExtEncoder`` write it (big-endian)::

    TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 | QUEUEOFFSET i64 |
    PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST ip+port |
    STORETIMESTAMP i64 | STOREHOST ip+port | RECONSUMETIMES i32 | PREPARED_TX_OFFSET i64 |
    BODYLEN i32 + body | TOPICLEN (i8 in V1, i16 in V2) + topic | PROPLEN i16 + properties

The CommitLog is a concatenation of these records and a pull response body is a slice of it,
so encoding happens once (when the broker accepts a message) and never again. A decoded
record is a ``MessageExt`` (``rocketq.protocol.messagetypes``).

The record's QUEUEOFFSET and PHYSICALOFFSET sit at fixed positions (20 and 28) and
STORETIMESTAMP right after the born host (see ``store_timestamp_pos``), so the store encodes a
record before taking its write lock and stamps those three values in place once it knows them.
Pure: no I/O, no clocks.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from rocketq.protocol import msgid, nativecodecs
from rocketq.protocol.messageerrors import MessageFormatError, MessageIllegalError, PropertiesSizeExceededError
from rocketq.protocol.messageproperties import MAX_PROPERTIES_LENGTH, decode_properties, encode_properties
from rocketq.protocol.messagetypes import CompressionType, Host, MessageExt, MessageSysFlag, compression_type

DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
"""RocketMQ's ``maxMessageSize`` default: the largest stored record accepted."""

MAX_TOPIC_LENGTH_V1: Final = 127
"""TOPICLEN is one (signed) byte in the V1 layout."""
MAX_TOPIC_LENGTH_V2: Final = 32767
MAX_INFLATED_BODY_SIZE: Final = 64 * 1024 * 1024
"""A compressed body that inflates beyond this is refused instead of eating memory."""

MAGIC_V1: Final = -626843481
"""0xDAA320A7 as Java's signed int: the record layout with a one-byte topic length."""
MAGIC_V2: Final = -626843477
"""0xDAA320AB: the same layout with a two-byte topic length (RocketMQ 5 long topics)."""
BLANK_MAGIC: Final = -875286124
"""0xCBD43194: the END_OF_FILE filler that closes a CommitLog segment."""


def pack_host(host: Host) -> bytes:
    """IP bytes (4 or 16) + port i32, as stored; MessageIllegalError for a bad address."""
    try:
        return msgid.pack_host(host)
    except ValueError as exc:
        raise MessageIllegalError(str(exc)) from None



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
        if nativecodecs.native is not None:
            # the same method in C; it calls the method below for anything it does not handle itself
            self.encode = nativecodecs.native.RecordEncoder(  # type: ignore[method-assign]
                self.encode, self._magic, self._store, self._fixed, self._max, self._topics, self._topic_part,
                pack_host)

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

        if nativecodecs.native is not None:
            encode = nativecodecs.native.sender_encoder(encode, magic, queue_id, sys_flag, born_timestamp, born, store,
                                                        reconsume_times, topic_part, fixed, limit)
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
    if _native is not None:
        record = _native.decode_record(buf, pos, decompress, check_crc, MessageExt)
        if record is not None:
            return record
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


_native = nativecodecs.native
"""The C record decoders when in use: each decodes what it can and leaves the rest to ``_decode``."""

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
        if _native is not None:
            # decodes a run of records, up to the end or to one the code below must judge
            records, pos = _native.decode_records(view, pos, decompress, MessageExt)
            yield from records
            if len(view) - pos < 8:
                return
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

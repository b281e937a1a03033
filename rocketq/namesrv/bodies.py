"""The JSON bodies a name server reads and writes, with RocketMQ's own field names.

A broker's REGISTER_BROKER carries a ``RegisterBrokerBody``::

    {"topicConfigSerializeWrapper": {"topicConfigTable": {topic: TopicConfig, ...},
                                     "dataVersion": {"timestamp": ms, "counter": n}},
     "filterServerList": [...]}

Java brokers with ``compressedRegister=true`` send it zlib-deflated instead, and then not as
JSON but as RocketMQ's length-prefixed layout (int32 length + DataVersion JSON, int32 topic
count, per topic int32 length + ``TopicConfig.encode()`` text ``"name read write perm
filterType [attributes]"``, int32 length + filter-server JSON list). A deflated JSON body is
accepted as well. ``bodyCrc32`` in the header, when non-zero, is Java's ``UtilAll.crc32`` of
the body as sent: ``crc32 & 0x7FFFFFFF``.

Everything here is a pure function from bytes to frozen values (or back); a body that does not
have the expected shape raises ``BodyError`` naming what is wrong. The answers' shapes
(TopicRouteData, ClusterInfo, TopicList, KVTable) are built by ``routes`` and ``kvconfig`` as
plain dicts and serialised with ``encode``. Deliberately unsupported: fastjson's non-standard
JSON (unquoted integer map keys), which a RocketMQ 5 broker only emits for static topics.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from rocketq.protocol.codes import PERM_READ_WRITE

MAX_INFLATED_BODY: Final = 64 * 1024 * 1024
"""A deflated register body may not expand beyond this (a zip bomb is refused, not inflated)."""
MAX_TOPIC_NAME_LENGTH: Final = 1024
"""Generous sanity cap: retry topics of long group names exceed RocketMQ's 127-char topic limit."""
TOPIC_FILTER_TYPES: Final = frozenset({"SINGLE_TAG", "MULTI_TAG"})
DEFAULT_QUEUE_NUMS: Final = 16
"""TopicConfig's defaults when a field is absent (``TopicConfig.defaultReadQueueNums``)."""

_INT32_MAX: Final = (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_LENGTH = struct.Struct(">i")


class BodyError(ValueError):
    """A request body is not what its request code promises."""


@dataclass(frozen=True, slots=True)
class DataVersion:
    """A broker's topic-config version; a change means the namesrv must rebuild its queues."""

    timestamp: int = 0
    counter: int = 0
    state_version: int = 0

    def to_json(self) -> dict[str, int]:
        return {"stateVersion": self.state_version, "timestamp": self.timestamp, "counter": self.counter}


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """One topic as a broker reports it: how many queues, which permissions."""

    topic_name: str
    read_queue_nums: int = DEFAULT_QUEUE_NUMS
    write_queue_nums: int = DEFAULT_QUEUE_NUMS
    perm: int = PERM_READ_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "topicName": self.topic_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": self.topic_sys_flag,
            "order": self.order,
        }


@dataclass(frozen=True, slots=True)
class RegisterBrokerBody:
    topic_configs: tuple[TopicConfig, ...] = ()
    data_version: DataVersion = DataVersion()
    filter_servers: tuple[str, ...] = ()


def encode(obj: Any) -> bytes:
    """A response body: compact JSON, as fastjson writes it."""
    return orjson.dumps(obj)


def java_crc32(body: bytes) -> int:
    """RocketMQ's ``UtilAll.crc32``: CRC-32 with the sign bit cleared so it fits a Java int."""
    return zlib.crc32(body) & _INT32_MAX


def check_crc32(body: bytes, expected: int) -> None:
    """Raise BodyError unless ``expected`` is 0 (not sent) or matches the body's CRC-32."""
    if expected == 0:
        return
    crc = zlib.crc32(body)
    # Java sends the masked value; a non-Java client may send the plain unsigned CRC.
    if expected not in (crc & _INT32_MAX, crc):
        raise BodyError(f"crc32 not match: header says {expected}, body has {crc & _INT32_MAX}")


# --- decoding -----------------------------------------------------------------------------------


def decode_register_body(body: bytes, *, compressed: bool) -> RegisterBrokerBody:
    """Parse REGISTER_BROKER's body; an empty body is an empty table at DataVersion(0, 0)."""
    if not body:
        return RegisterBrokerBody()
    if compressed:
        body = _inflate(body)
        if not body.lstrip().startswith(b"{"):
            return _decode_java_compressed(body)
    return _register_body_from_json(_load_json(body, "RegisterBrokerBody"))


def decode_data_version(body: bytes) -> DataVersion:
    """QUERY_DATA_VERSION's body: one DataVersion object."""
    if not body:
        raise BodyError("QUERY_DATA_VERSION needs a DataVersion body")
    return _data_version(_load_json(body, "DataVersion"), "DataVersion")


def _inflate(body: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(body, MAX_INFLATED_BODY)
    except zlib.error as exc:
        raise BodyError(f"compressed register body does not inflate: {exc}") from None
    if inflater.unconsumed_tail:
        raise BodyError(f"compressed register body inflates beyond {MAX_INFLATED_BODY} bytes")
    if not inflater.eof:
        raise BodyError("compressed register body is truncated")
    return out


def _load_json(body: bytes, what: str) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BodyError(f"{what} is not valid JSON: {exc}") from None


def _register_body_from_json(obj: Any) -> RegisterBrokerBody:
    _require_object(obj, "RegisterBrokerBody")
    wrapper = obj.get("topicConfigSerializeWrapper")
    if wrapper is None:
        wrapper = {}
    _require_object(wrapper, "topicConfigSerializeWrapper")
    table = wrapper.get("topicConfigTable")
    if table is None:
        table = {}
    _require_object(table, "topicConfigTable")
    configs = tuple(_topic_config(key, value) for key, value in table.items())
    version = wrapper.get("dataVersion")
    data_version = DataVersion() if version is None else _data_version(version, "dataVersion")
    return RegisterBrokerBody(configs, data_version, _filter_servers(obj.get("filterServerList")))


def _topic_config(key: str, obj: Any) -> TopicConfig:
    where = f"topicConfigTable[{key!r}]"
    _require_object(obj, where)
    name = obj.get("topicName", key)
    _check_topic_name(name, where)
    filter_type = obj.get("topicFilterType", "SINGLE_TAG")
    if filter_type not in TOPIC_FILTER_TYPES:
        raise BodyError(f"{where}.topicFilterType={filter_type!r}: expected SINGLE_TAG or MULTI_TAG")
    order = obj.get("order", False)
    if not isinstance(order, bool):
        raise BodyError(f"{where}.order={order!r}: expected true or false")
    return TopicConfig(
        topic_name=name,
        read_queue_nums=_int32(obj, "readQueueNums", DEFAULT_QUEUE_NUMS, where),
        write_queue_nums=_int32(obj, "writeQueueNums", DEFAULT_QUEUE_NUMS, where),
        perm=_perm(_int32(obj, "perm", PERM_READ_WRITE, where), where),
        topic_filter_type=filter_type,
        topic_sys_flag=_int32(obj, "topicSysFlag", 0, where),
        order=order,
    )


def _data_version(obj: Any, where: str) -> DataVersion:
    _require_object(obj, where)
    return DataVersion(
        timestamp=_int64(obj, "timestamp", where),
        counter=_int64(obj, "counter", where),
        state_version=_int64(obj, "stateVersion", where),
    )


def _filter_servers(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise BodyError("filterServerList must be a list of strings")
    return tuple(raw)


def _decode_java_compressed(data: bytes) -> RegisterBrokerBody:
    reader = _Reader(data)
    version = _data_version(_load_json(reader.chunk("dataVersion"), "dataVersion"), "dataVersion")
    count = reader.length("topic count")
    configs = tuple(_topic_config_from_text(reader.chunk("topic config")) for _ in range(count))
    servers = _filter_servers(_load_json(reader.chunk("filterServerList"), "filterServerList"))
    # RocketMQ 5 may append static-topic mappings after this point; they are not used here.
    return RegisterBrokerBody(configs, version, servers)


def _topic_config_from_text(raw: bytes) -> TopicConfig:
    """``TopicConfig.encode()``: space-separated name, read, write, perm, filter type[, attrs]."""
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise BodyError("compressed topic config is not UTF-8") from None
    parts = text.split(" ", 5)
    if len(parts) < 5:
        raise BodyError(f"compressed topic config {text[:80]!r} has fewer than 5 fields")
    name, read, write, perm, filter_type = parts[:5]
    where = f"topic config {name[:80]!r}"
    _check_topic_name(name, where)
    if filter_type not in TOPIC_FILTER_TYPES:
        raise BodyError(f"{where}: topicFilterType {filter_type!r} is not SINGLE_TAG or MULTI_TAG")
    return TopicConfig(
        topic_name=name,
        read_queue_nums=_text_int32(read, "readQueueNums", where),
        write_queue_nums=_text_int32(write, "writeQueueNums", where),
        perm=_perm(_text_int32(perm, "perm", where), where),
        topic_filter_type=filter_type,
    )


class _Reader:
    """Walks the length-prefixed chunks of a Java compressed register body."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def length(self, what: str) -> int:
        if self._pos + 4 > len(self._data):
            raise BodyError(f"compressed register body ends before the {what}")
        (value,) = _LENGTH.unpack_from(self._data, self._pos)
        self._pos += 4
        if value < 0 or value > len(self._data):
            raise BodyError(f"compressed register body has an impossible {what} of {value}")
        return value

    def chunk(self, what: str) -> bytes:
        size = self.length(f"length of the {what}")
        if self._pos + size > len(self._data):
            raise BodyError(f"compressed register body ends inside the {what}")
        out = self._data[self._pos : self._pos + size]
        self._pos += size
        return out


# --- field checks ---------------------------------------------------------------------------------


def _require_object(obj: Any, where: str) -> None:
    if not isinstance(obj, dict):
        raise BodyError(f"{where} must be a JSON object, not {type(obj).__name__}")


def _check_topic_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not name or len(name) > MAX_TOPIC_NAME_LENGTH:
        raise BodyError(f"{where}: topic name must be a non-empty string of at most "
                        f"{MAX_TOPIC_NAME_LENGTH} characters")


def _int32(obj: Mapping[str, Any], key: str, default: int, where: str) -> int:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _INT32_MAX:
        raise BodyError(f"{where}.{key}={value!r}: expected a non-negative 32-bit integer")
    return value


def _int64(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = obj.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not _INT64_MIN <= value <= _INT64_MAX:
        raise BodyError(f"{where}.{key}={value!r}: expected a 64-bit integer")
    return value


def _text_int32(text: str, key: str, where: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BodyError(f"{where}: {key} {text!r} is not an integer") from None
    if not 0 <= value <= _INT32_MAX:
        raise BodyError(f"{where}: {key} {value} is not a non-negative 32-bit integer")
    return value


def _perm(value: int, where: str) -> int:
    if value > 7:
        raise BodyError(f"{where}: perm {value} has bits beyond READ|WRITE|INHERIT")
    return value


# --- encoding (what a broker sends; the tests and the broker use these) ---------------------------


def encode_register_body(body: RegisterBrokerBody, *, compress: bool = False) -> bytes:
    """REGISTER_BROKER's body as a Java broker writes it (JSON, or its compressed layout)."""
    if not compress:
        return orjson.dumps({
            "topicConfigSerializeWrapper": {
                "topicConfigTable": {tc.topic_name: tc.to_json() for tc in body.topic_configs},
                "dataVersion": body.data_version.to_json(),
            },
            "filterServerList": list(body.filter_servers),
        })
    parts = [_sized(orjson.dumps(body.data_version.to_json())), _LENGTH.pack(len(body.topic_configs))]
    for tc in body.topic_configs:
        text = f"{tc.topic_name} {tc.read_queue_nums} {tc.write_queue_nums} {tc.perm} {tc.topic_filter_type} "
        parts.append(_sized(text.encode()))
    parts.append(_sized(orjson.dumps(list(body.filter_servers))))
    return zlib.compress(b"".join(parts), 9)


def _sized(chunk: bytes) -> bytes:
    return _LENGTH.pack(len(chunk)) + chunk

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
have the expected shape raises ``BodyError`` naming what is wrong. ``DataVersion``,
``TopicConfig``, ``BodyError`` and the field readers are ``rocketq.protocol.sharedbodies``, shared with
brokers and admin tools; what is the name server's own is the register body's layout and one
rule: a registered topic name may be up to ``MAX_TOPIC_NAME_LENGTH`` long. The answers are
JSON-ready dicts serialised with ``encode``: ``routes`` writes TopicRouteData and ClusterInfo
through ``rocketq.protocol.routedata``, ``kvconfig`` the KVTable, the handlers TopicList.
Deliberately unsupported: fastjson's non-standard JSON (unquoted integer map keys), which a
RocketMQ 5 broker only emits for static topics.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from rocketq.protocol.sharedbodies import JAVA_INTEGER, BodyError, DataVersion, TopicConfig, load_json, obj, strings

MAX_INFLATED_BODY: Final = 64 * 1024 * 1024
"""A deflated register body may not expand beyond this (a zip bomb is refused, not inflated)."""
MAX_TOPIC_NAME_LENGTH: Final = 1024
"""Generous sanity cap: retry topics of long group names exceed RocketMQ's 127-char topic limit."""

_INT32_MAX: Final = (1 << 31) - 1
_MAX_INT_TEXT: Final = 12
"""Longest integer text read from a compressed topic config (an int's digits and a sign, with
room to spare; the range itself is ``TopicConfig``'s check)."""
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class RegisterBrokerBody:
    topic_configs: tuple[TopicConfig, ...] = ()
    data_version: DataVersion = field(default_factory=DataVersion)
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


TopicsWanted = Callable[[DataVersion], bool]
"""Asked with a body's DataVersion: does the caller need its topics? A name server that already
holds this broker's table at that version (the periodic registration of an unchanged table)
does not, and then the topics are not parsed: 50 000 of them cost a fifth of a second."""


def decode_register_body(body: bytes, *, compressed: bool, wants_topics: TopicsWanted | None = None
                         ) -> RegisterBrokerBody:
    """Parse REGISTER_BROKER's body; an empty body is an empty table at DataVersion(0, 0).

    With ``wants_topics`` answering False, the result has no topic configs (and they are not
    checked); the DataVersion and filter servers are read as always."""
    if not body:
        return RegisterBrokerBody()
    if compressed:
        body = _inflate(body)
        if not body.lstrip().startswith(b"{"):
            return _decode_java_compressed(body, wants_topics)
    return _register_body_from_json(load_json(body, "RegisterBrokerBody"), wants_topics)


def decode_data_version(body: bytes) -> DataVersion:
    """QUERY_DATA_VERSION's body: one DataVersion object."""
    if not body:
        raise BodyError("QUERY_DATA_VERSION needs a DataVersion body")
    return DataVersion.from_json(load_json(body, "DataVersion"), "DataVersion")


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


def _register_body_from_json(raw: Any, wants_topics: TopicsWanted | None) -> RegisterBrokerBody:
    raw = obj(raw, "RegisterBrokerBody")
    wrapper = obj(_absent_is_empty(raw.get("topicConfigSerializeWrapper")), "topicConfigSerializeWrapper")
    table = obj(_absent_is_empty(wrapper.get("topicConfigTable")), "topicConfigTable")
    version = wrapper.get("dataVersion")
    data_version = DataVersion() if version is None else DataVersion.from_json(version)
    configs: tuple[TopicConfig, ...] = ()
    if wants_topics is None or wants_topics(data_version):
        configs = tuple(_topic_config(value, f"topicConfigTable[{key!r}]", key) for key, value in table.items())
    return RegisterBrokerBody(configs, data_version, _filter_servers(raw.get("filterServerList")))


def _absent_is_empty(value: Any) -> Any:
    return {} if value is None else value


def _topic_config(raw: Any, where: str, key: str | None = None) -> TopicConfig:
    """A TopicConfig as registered: the shared rules, and a name this registry can hold."""
    config = TopicConfig.from_json(raw, where, name=key)
    if not config.topic_name or len(config.topic_name) > MAX_TOPIC_NAME_LENGTH:
        raise BodyError(f"{where}: topic name must be a non-empty string of at most "
                        f"{MAX_TOPIC_NAME_LENGTH} characters")
    return config


def _filter_servers(raw: Any) -> tuple[str, ...]:
    return () if raw is None else strings(raw, "filterServerList")


def _decode_java_compressed(data: bytes, wants_topics: TopicsWanted | None) -> RegisterBrokerBody:
    reader = _Reader(data)
    version = DataVersion.from_json(load_json(reader.chunk("dataVersion"), "dataVersion"))
    count = reader.length("topic count")
    if wants_topics is None or wants_topics(version):
        configs = tuple(_topic_config_from_text(reader.chunk("topic config")) for _ in range(count))
    else:
        for _ in range(count):  # only to reach the filter servers behind them
            reader.chunk("topic config")
        configs = ()
    servers = _filter_servers(load_json(reader.chunk("filterServerList"), "filterServerList"))
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
    fields = {"topicName": name, "readQueueNums": _text_int(read, "readQueueNums", where),
              "writeQueueNums": _text_int(write, "writeQueueNums", where), "perm": _text_int(perm, "perm", where),
              "topicFilterType": filter_type}
    return _topic_config(fields, where)


def _text_int(text: str, key: str, where: str) -> int:
    """``Integer.parseInt``, as Java's ``TopicConfig.decode`` reads the field (no spaces, no ``_``)."""
    if not JAVA_INTEGER.fullmatch(text) or len(text) > _MAX_INT_TEXT:
        raise BodyError(f"{where}: {key} {text[:20]!r} is not an integer")
    return int(text)


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

"""Admin request and answer bodies: RocketMQ's JSON shapes as frozen values.

Each ``parse_*`` function takes the raw body of a SUCCESS answer and returns typed values, or
raises ``BodyError`` naming the field that is missing or of the wrong type; each ``*_body``
function builds a request body. The shapes are RocketMQ's (``TopicConfig``,
``SubscriptionGroupConfig``, ``ConsumerConnection``, ``KVTable``, ``GroupList``, the broker
runtime ``table``, the properties text of GET/UPDATE_BROKER_CONFIG), read through
``rocketq.admin.fastjson`` so a Java server's bodies parse as well as ours.

Routes and cluster info are in ``routes``; offset tables keyed by queue in ``stats``. Nothing here
does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from rocketq.admin import fastjson
from rocketq.admin.errors import ArgumentError, BodyError
from rocketq.protocol import codes

NAME_PATTERN: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")
"""Topic and group names RocketMQ accepts (``TopicValidator``)."""
MAX_TOPIC_LENGTH: Final = 127
MAX_GROUP_LENGTH: Final = 255
MAX_QUEUE_NUMS: Final = 1024
"""Queues per topic per broker that ``rocketq admin`` lets through (the broker enforces the same)."""
PERM_NAMES: Final = {0: "---", 1: "--X", 2: "-W-", 4: "R--", 6: "RW-", 7: "RWX", 3: "-WX", 5: "R-X"}


# --- names -----------------------------------------------------------------------------------


def check_topic(topic: str) -> str:
    if not topic or len(topic) > MAX_TOPIC_LENGTH or not NAME_PATTERN.match(topic):
        raise ArgumentError(f"topic {topic[:40]!r} must be 1-{MAX_TOPIC_LENGTH} characters of [%|a-zA-Z0-9_-]")
    return topic


def check_group(group: str) -> str:
    if not group or len(group) > MAX_GROUP_LENGTH or not NAME_PATTERN.match(group):
        raise ArgumentError(f"group {group[:40]!r} must be 1-{MAX_GROUP_LENGTH} characters of [%|a-zA-Z0-9_-]")
    return group


def check_perm(perm: int) -> int:
    if perm & ~7 or perm < 0:
        raise ArgumentError(f"perm {perm} is not a combination of 4 (read), 2 (write), 1 (inherit)")
    return perm


def perm_name(perm: int) -> str:
    return PERM_NAMES.get(perm, str(perm))


# --- reading JSON fields -----------------------------------------------------------------------


def load(body: bytes, what: str) -> Any:
    try:
        return fastjson.loads(body)
    except fastjson.FastJsonError as exc:
        raise BodyError(f"{what}: {exc}") from None


def obj(value: Any, what: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise BodyError(f"{what} is not an object")
    return value


def text(raw: Mapping[Any, Any], key: str, what: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise BodyError(f"{what}.{key} is not a string")
    return value


def integer(raw: Mapping[Any, Any], key: str, what: str, default: int | None = None) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BodyError(f"{what}.{key} is not an integer")
    return value


def number(raw: Mapping[Any, Any], key: str, what: str, default: float | None = None) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BodyError(f"{what}.{key} is not a number")
    return float(value)


def flag(raw: Mapping[Any, Any], key: str, what: str, default: bool | None = None) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise BodyError(f"{what}.{key} is not a boolean")
    return value


def strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BodyError(f"{what} is not a list of strings")
    return tuple(value)


# --- topics -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """A topic's queues and permission on one broker (``TopicConfig.java``)."""

    topic_name: str
    read_queue_nums: int = 8
    write_queue_nums: int = 8
    perm: int = codes.PERM_READ_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def validate(self) -> TopicConfig:
        check_topic(self.topic_name)
        for name, n in (("readQueueNums", self.read_queue_nums), ("writeQueueNums", self.write_queue_nums)):
            if not 1 <= n <= MAX_QUEUE_NUMS:
                raise ArgumentError(f"{name} {n} outside [1, {MAX_QUEUE_NUMS}]")
        check_perm(self.perm)
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "topicName": self.topic_name, "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums, "perm": self.perm,
            "topicFilterType": self.topic_filter_type, "topicSysFlag": self.topic_sys_flag, "order": self.order,
        }

    @classmethod
    def from_json(cls, raw: Any, what: str = "topicConfig") -> TopicConfig:
        raw = obj(raw, what)
        return cls(
            topic_name=text(raw, "topicName", what),
            read_queue_nums=integer(raw, "readQueueNums", what, 16),
            write_queue_nums=integer(raw, "writeQueueNums", what, 16),
            perm=integer(raw, "perm", what, codes.PERM_READ_WRITE),
            topic_filter_type=text(raw, "topicFilterType", what, "SINGLE_TAG"),
            topic_sys_flag=integer(raw, "topicSysFlag", what, 0),
            order=flag(raw, "order", what, False),
        )


def parse_topic_list(body: bytes) -> tuple[str, ...]:
    """``TopicList``: ``{"topicList": [...], "brokerAddr"?: ...}``; sorted for stable output."""
    raw = obj(load(body, "topic list"), "topic list")
    return tuple(sorted(strings(raw.get("topicList", []), "topicList")))


def parse_topic_config_table(body: bytes) -> dict[str, TopicConfig]:
    """GET_ALL_TOPIC_CONFIG: ``TopicConfigSerializeWrapper`` -> topic name -> config."""
    raw = obj(load(body, "topic config table"), "topic config table")
    table = obj(raw.get("topicConfigTable", {}), "topicConfigTable")
    return {str(name): TopicConfig.from_json(entry, f"topicConfigTable[{name}]") for name, entry in table.items()}


# --- subscription groups ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """A consumer group's settings on one broker (``SubscriptionGroupConfig.java``)."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = codes.MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    _WIRE = (
        ("group_name", "groupName"), ("consume_enable", "consumeEnable"),
        ("consume_from_min_enable", "consumeFromMinEnable"), ("consume_broadcast_enable", "consumeBroadcastEnable"),
        ("retry_queue_nums", "retryQueueNums"), ("retry_max_times", "retryMaxTimes"), ("broker_id", "brokerId"),
        ("which_broker_when_consume_slowly", "whichBrokerWhenConsumeSlowly"),
        ("notify_consumer_ids_changed_enable", "notifyConsumerIdsChangedEnable"),
    )

    def validate(self) -> GroupConfig:
        check_group(self.group_name)
        if not 0 <= self.retry_queue_nums <= 64:
            raise ArgumentError(f"retryQueueNums {self.retry_queue_nums} outside [0, 64]")
        if not -1 <= self.retry_max_times <= 64:
            raise ArgumentError(f"retryMaxTimes {self.retry_max_times} outside [-1, 64]")
        if self.broker_id < 0 or self.which_broker_when_consume_slowly < 0:
            raise ArgumentError("brokerId and whichBrokerWhenConsumeSlowly must not be negative")
        return self

    def to_json(self) -> dict[str, Any]:
        return {wire: getattr(self, name) for name, wire in self._WIRE}

    def body(self) -> bytes:
        return orjson.dumps(self.to_json())

    @classmethod
    def from_json(cls, raw: Any, what: str = "subscriptionGroupConfig") -> GroupConfig:
        raw = obj(raw, what)
        defaults = cls(group_name="")
        values: dict[str, Any] = {}
        for name, wire in cls._WIRE:
            default = getattr(defaults, name)
            if name == "group_name":
                values[name] = text(raw, wire, what)
            elif isinstance(default, bool):
                values[name] = flag(raw, wire, what, default)
            else:
                values[name] = integer(raw, wire, what, default)
        return cls(**values)


def parse_group_table(body: bytes) -> dict[str, GroupConfig]:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG: ``SubscriptionGroupWrapper`` -> group name -> config."""
    raw = obj(load(body, "subscription group table"), "subscription group table")
    table = obj(raw.get("subscriptionGroupTable", {}), "subscriptionGroupTable")
    return {str(name): GroupConfig.from_json(entry, f"subscriptionGroupTable[{name}]") for name, entry in table.items()}


def parse_group_list(body: bytes) -> tuple[str, ...]:
    """QUERY_TOPIC_CONSUME_BY_WHO: ``GroupList`` ``{"groupList": [...]}``."""
    raw = obj(load(body, "group list"), "group list")
    return tuple(sorted(strings(raw.get("groupList", []), "groupList")))


def parse_consumer_offsets(body: bytes) -> dict[tuple[str, str], dict[int, int]]:
    """GET_ALL_CONSUMER_OFFSET: consumerOffset.json's ``{"offsetTable": {"topic@group": {qid: offset}}}``."""
    raw = obj(load(body, "consumer offsets"), "consumer offsets")
    out: dict[tuple[str, str], dict[int, int]] = {}
    for key, queues in obj(raw.get("offsetTable", {}), "offsetTable").items():
        topic, sep, group = str(key).partition("@")
        if not sep or not topic or not group:
            raise BodyError(f"offsetTable key {key!r} is not topic@group")
        offsets = {}
        for qid, offset in obj(queues, f"offsetTable[{key}]").items():
            try:
                queue_id = int(qid)
            except (TypeError, ValueError):
                raise BodyError(f"offsetTable[{key}] key {qid!r} is not a queue id") from None
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise BodyError(f"offsetTable[{key}][{qid}] is not an integer")
            offsets[queue_id] = offset
        out[(topic, group)] = offsets
    return out


# --- consumers --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connection:
    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(frozen=True, slots=True)
class Subscription:
    topic: str
    sub_string: str
    expression_type: str


@dataclass(frozen=True, slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST: who is online in a group and what it subscribes to."""

    connections: tuple[Connection, ...]
    subscriptions: tuple[Subscription, ...]
    consume_type: str
    message_model: str
    consume_from_where: str


def parse_consumer_connection(body: bytes) -> ConsumerConnection:
    raw = obj(load(body, "consumer connection"), "consumer connection")
    conns = raw.get("connectionSet", [])
    if not isinstance(conns, list):
        raise BodyError("connectionSet is not a list")
    connections = []
    for i, entry in enumerate(conns):
        what = f"connectionSet[{i}]"
        entry = obj(entry, what)
        language = entry.get("language", "OTHER")
        connections.append(Connection(
            text(entry, "clientId", what), text(entry, "clientAddr", what, ""),
            language if isinstance(language, str) else str(language), integer(entry, "version", what, 0)))
    subs = []
    for topic, entry in obj(raw.get("subscriptionTable", {}), "subscriptionTable").items():
        what = f"subscriptionTable[{topic}]"
        entry = obj(entry, what)
        subs.append(Subscription(str(topic), text(entry, "subString", what, "*"),
                                 text(entry, "expressionType", what, "TAG")))
    return ConsumerConnection(
        connections=tuple(sorted(connections, key=lambda c: c.client_id)),
        subscriptions=tuple(sorted(subs, key=lambda s: s.topic)),
        consume_type=_enum_text(raw.get("consumeType"), "consumeType"),
        message_model=_enum_text(raw.get("messageModel"), "messageModel"),
        consume_from_where=_enum_text(raw.get("consumeFromWhere"), "consumeFromWhere"),
    )


def _enum_text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BodyError(f"{what} is not a string")
    return value


# --- KV config, runtime info, broker config ---------------------------------------------------


def parse_kv_table(body: bytes, what: str) -> dict[str, str]:
    """``KVTable`` ``{"table": {k: v}}``: broker runtime info and namesrv KV namespaces."""
    raw = obj(load(body, what), what)
    table = obj(raw.get("table", {}), f"{what}.table")
    out = {}
    for key, value in table.items():
        if not isinstance(key, str) or not isinstance(value, str | int | float | bool):
            raise BodyError(f"{what}.table[{key}] is not a string entry")
        out[key] = value if isinstance(value, str) else orjson.dumps(value).decode()
    return dict(sorted(out.items()))


MAX_CONFIG_VALUE_LENGTH: Final = 4096


def properties_text(updates: Mapping[str, str]) -> bytes:
    """UPDATE_BROKER_CONFIG's body: ``key=value`` lines, RocketMQ's ``MixAll.properties2String``."""
    lines = []
    for key, value in updates.items():
        if not key or any(c in key for c in "=:\n\r# \t"):
            raise ArgumentError(f"config key {key!r} is empty or holds '=', ':', '#', blanks or line breaks")
        if "\n" in value or "\r" in value or len(value) > MAX_CONFIG_VALUE_LENGTH:
            raise ArgumentError(f"config value for {key} holds a line break or exceeds {MAX_CONFIG_VALUE_LENGTH}")
        lines.append(f"{key}={value}")
    if not lines:
        raise ArgumentError("no config key to update")
    return ("\n".join(lines) + "\n").encode()


def parse_properties_text(body: bytes) -> dict[str, str]:
    """GET_BROKER_CONFIG's body: Java properties text (``key=value`` or ``key:value``, ``#`` comments).

    Only the subset ``Properties.store`` writes for plain values is read: one entry per line,
    no continuation lines; ``\\`` escapes in keys and values are undone.
    """
    try:
        content = body.decode("utf-8")
    except UnicodeDecodeError:
        content = body.decode("latin-1")  # Properties.store writes ISO-8859-1
    out: dict[str, str] = {}
    for lineno, raw in enumerate(content.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = _PROPERTY_LINE.match(line)
        if match is None:
            raise BodyError(f"broker config line {lineno} is not key=value: {raw[:60]!r}")
        out[_unescape(match.group(1))] = _unescape(match.group(2).strip())
    return dict(sorted(out.items()))


_PROPERTY_LINE: Final = re.compile(r"((?:[^=:\s\\]|\\.)+)\s*[=:]?\s*(.*)$")
_ESCAPE: Final = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(value: str) -> str:
    def one(match: re.Match[str]) -> str:
        seq = match.group(1)
        if seq.startswith("u") and len(seq) == 5:
            return chr(int(seq[1:], 16))
        return _ESCAPES.get(seq, seq)

    return _ESCAPE.sub(one, value)

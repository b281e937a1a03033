"""Admin request and answer bodies: RocketMQ's JSON shapes as frozen values.

Each ``parse_*`` function takes the raw body of a SUCCESS answer and returns typed values, or
raises ``BodyError`` naming the field that is missing or of the wrong type; each ``*_body``
function builds a request body. The shapes are RocketMQ's (``TopicConfig``,
``SubscriptionGroupConfig``, ``ConsumerConnection``, ``KVTable``, ``GroupList``, the broker
runtime ``table``, the properties text of GET/UPDATE_BROKER_CONFIG), read through
``rocketq.admin.fastjson`` so a Java server's bodies parse as well as ours.

``TopicConfig``, ``SubscriptionGroupConfig`` (here ``GroupConfig``), the field readers and the
name and permission rules are ``rocketq.protocol``'s, shared with brokers and name servers. What
is admin's own is the boundary: ``check_*`` and ``validate`` raise ``ArgumentError``, which
``rocketq admin`` reports as a usage error, and a topic is created with at least one queue.

Routes and cluster info are in ``routes``; offset tables keyed by queue in ``stats``. Nothing here
does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Self

import orjson

from rocketq.admin import fastjson
from rocketq.admin.errors import ArgumentError, BodyError
from rocketq.protocol import namerules
from rocketq.protocol import sharedbodies as shared
from rocketq.protocol.sharedbodies import MAX_QUEUE_NUMS as MAX_QUEUE_NUMS
from rocketq.protocol.sharedbodies import integer, obj, strings, text

# --- names -----------------------------------------------------------------------------------


def check_topic(topic: str) -> str:
    return namerules.check_topic(topic, ArgumentError)


def check_group(group: str) -> str:
    return namerules.check_group(group, ArgumentError)


def check_perm(perm: int) -> int:
    return namerules.check_perm(perm, ArgumentError)


def perm_name(perm: int) -> str:
    return namerules.perm_name(perm)


# --- reading bodies ----------------------------------------------------------------------------


def load(body: bytes, what: str) -> Any:
    """A Java server's body: JSON, or fastjson's object and number keys."""
    try:
        return fastjson.loads(body)
    except fastjson.FastJsonError as exc:
        raise BodyError(f"{what}: {exc}") from None


# --- topics -----------------------------------------------------------------------------------


class TopicConfig(shared.TopicConfig):
    """A topic's queues and permission on one broker, as ``rocketq admin`` sends it.

    The shared value; only ``validate`` differs: it raises ArgumentError (nothing was sent)
    and refuses a topic without queues, which a broker would accept but no one means to create.
    """

    __slots__ = ()

    def validate(self, error: type[Exception] = ArgumentError, *, min_queue_nums: int = 1) -> Self:
        return super().validate(error, min_queue_nums=min_queue_nums)


def parse_topic_list(body: bytes) -> tuple[str, ...]:
    """``TopicList``: ``{"topicList": [...], "brokerAddr"?: ...}``; sorted for stable output."""
    raw = obj(load(body, "topic list"), "topic list")
    return tuple(sorted(strings(raw.get("topicList", []), "topicList")))


def parse_data_version(body: bytes) -> shared.DataVersion | None:
    """A table wrapper's ``dataVersion`` (None when it has none), to read the next page under."""
    raw = obj(load(body, "table wrapper"), "table wrapper")
    version = raw.get("dataVersion")
    return shared.DataVersion.from_json(version) if version is not None else None


def parse_topic_config_table(body: bytes) -> dict[str, TopicConfig]:
    """GET_ALL_TOPIC_CONFIG: ``TopicConfigSerializeWrapper`` -> topic name -> config."""
    raw = obj(load(body, "topic config table"), "topic config table")
    table = obj(raw.get("topicConfigTable", {}), "topicConfigTable")
    return {str(name): TopicConfig.from_json(entry, f"topicConfigTable[{name}]") for name, entry in table.items()}


# --- subscription groups ----------------------------------------------------------------------


class GroupConfig(shared.SubscriptionGroupConfig):
    """A consumer group's settings on one broker, as ``rocketq admin`` sends it.

    The shared value; ``validate`` raises ArgumentError (nothing was sent).
    """

    __slots__ = ()

    def validate(self, error: type[Exception] = ArgumentError) -> Self:
        return super().validate(error)

    def body(self) -> bytes:
        return orjson.dumps(self.to_json())


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

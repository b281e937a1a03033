"""RocketMQ's shared JSON bodies as frozen values, and the strict field readers behind them.

Three values travel between every part of a cluster with the same JSON shape:

* ``DataVersion`` ``{"stateVersion", "timestamp", "counter"}``: the stamp on a broker's topic
  and group tables; a name server rebuilds a broker's routes only when it changes.
* ``TopicConfig`` ``{"topicName", "readQueueNums", "writeQueueNums", "perm", "topicFilterType",
  "topicSysFlag", "order"}``: a topic's queues and permission on one broker. Brokers register
  them, store them in topics.json and answer GET_ALL_TOPIC_CONFIG with them.
* ``SubscriptionGroupConfig`` ``{"groupName", "consumeEnable", ...}``: a consumer group's
  settings on one broker, in subscriptionGroup.json and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.

The readers (``obj``, ``text``, ``integer``, ``non_negative_int32``, ``permission``, ``int64``,
``number``, ``flag``, ``enum``, ``strings``) take an already decoded JSON value, a key and a
``where`` naming the place in the body (``topicConfigTable['T']``), and return the typed value
or raise ``BodyError`` naming that place. They read what fastjson (behind every Java broker and
name server) reads, because clients in other languages rely on it:

* a number may come as a JSON string (``"subVersion": "1700000000000"`` from the C++ client,
  ``"perm": "6"``), in Java's integer grammar; an integral float (``4.0``) is that integer;
* a boolean may come as ``true``/``false``, as the strings ``"true"``/``"false"``, ``"1"``/``"0"``,
  ``"Y"``/``"N"``, ``"T"``/``"F"`` (any case), or as a number (1 is true, any other false);
* an enum may come by name (any case) or by ordinal, a number or a string of digits (the C++
  client writes ``"consumeType": 1``);
* a string field may come as a JSON number or boolean (its Java text);
* ``null``, and ``""`` for a number, boolean or enum, is the field's default.

Anything else (``"abc"`` for a number, an object for a string, an ordinal beyond the enum) is a
``BodyError``, never another exception.

What this module does not do: decode bytes beyond plain JSON (``rocketq.admin.fastjson`` reads
fastjson's extensions), read a clock (``DataVersion.new``/``next`` take the time), or decide
policy beyond what a field can hold. Who may create a topic with how many queues is the
caller's rule, passed to ``validate``; name and permission rules are ``rocketq.protocol.namerules``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Self

import orjson

from rocketq.protocol import namerules, topicattributes
from rocketq.protocol.codes import MASTER_ID, PERM_READ_WRITE

INT32_MAX: Final = (1 << 31) - 1
INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
DEFAULT_QUEUE_NUMS: Final = 16
"""A topic's queue counts when a body leaves them out (Java's ``TopicConfig.defaultReadQueueNums``)."""
MAX_QUEUE_NUMS: Final = 1024
"""Most queues per topic per broker that a broker or ``rocketq admin`` accepts."""
TOPIC_FILTER_TYPES: Final = frozenset({"SINGLE_TAG", "MULTI_TAG"})
MAX_RETRY_QUEUE_NUMS: Final = 64
MAX_RETRY_TIMES: Final = 64
_SHOWN: Final = 60
"""Characters of a refused value quoted in an error; a hostile body must not make a huge message."""


_MAX_DIGITS: Final = 80
"""Longer digit strings are refused before conversion (they are beyond any Java number)."""
_ANY_INTEGER: Final = 10**_MAX_DIGITS
"""``integer``'s bound: it cares for no Java range, only that a number stays printable."""
_ABSENT_TEXT: Final = frozenset({"", "null", "NULL"})
"""Strings fastjson reads as null for a number, boolean or enum field: the default."""
_BOOLEAN_WORDS: Final = {"true": True, "false": False, "1": True, "0": False,
                         "y": True, "t": True, "n": False, "f": False}
"""fastjson's ``castToBoolean`` words, compared in lower case."""
JAVA_INTEGER: Final = re.compile(r"[+-]?\d+")
"""Java's ``Integer.parseInt``/``Long.parseLong`` grammar (match it whole): a sign, then decimal
digits of Unicode's Nd class, as ``Character.digit(c, 10)`` reads; ``int()`` alone would also take
spaces and ``_``."""
_TRAILING_ZEROS: Final = re.compile(r"\.0*$")
"""fastjson reads ``"4.0"`` into an int field as 4 (and ``"4.5"`` not at all)."""
_DECIMAL: Final = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_CONSTANT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""What an enum constant's name looks like (one the table does not know is kept)."""


class BodyError(ValueError):
    """A body that is not the shape RocketMQ defines for it."""


# --- readers ----------------------------------------------------------------------------------


def load_json(body: bytes, what: str) -> Any:
    """Standard JSON (orjson); ``what`` names the body in the error."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BodyError(f"{what} is not valid JSON: {exc}") from None


def obj(value: Any, where: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise BodyError(f"{where} must be a JSON object, not {type(value).__name__}")
    return value


def text(raw: Mapping[Any, Any], key: str, where: str, default: str | None = None) -> str:
    value = _field(raw, key, where, default)
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    raise _wrong(where, key, value, "a string")


def integer(raw: Mapping[Any, Any], key: str, where: str, default: int | None = None) -> int:
    """Any integer (a Java int or long whose range the caller does not care about)."""
    return _integer(raw, key, where, default, "an integer", -_ANY_INTEGER, _ANY_INTEGER)


def non_negative_int32(raw: Mapping[Any, Any], key: str, where: str, default: int | None = None) -> int:
    """A Java int that cannot be negative: queue counts, permissions, flags."""
    return _integer(raw, key, where, default, "a non-negative 32-bit integer", 0, INT32_MAX)


def permission(raw: Mapping[Any, Any], key: str, where: str, default: int | None = None) -> int:
    """A topic or broker permission: READ (4), WRITE (2), INHERIT (1), nothing else."""
    value = non_negative_int32(raw, key, where, default)
    if value & ~namerules.PERM_MASK:
        raise BodyError(f"{where}: {key} {value} has bits beyond READ|WRITE|INHERIT")
    return value


def int64(raw: Mapping[Any, Any], key: str, where: str, default: int | None = None) -> int:
    return _integer(raw, key, where, default, "a 64-bit integer", INT64_MIN, INT64_MAX)


def number(raw: Mapping[Any, Any], key: str, where: str, default: float | None = None) -> float:
    value = _field(raw, key, where, default)
    if isinstance(value, str):
        value = _float_text(value, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(where, key, value, "a number")
    return float(value)


def flag(raw: Mapping[Any, Any], key: str, where: str, default: bool | None = None) -> bool:
    value = _field(raw, key, where, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value == 1  # fastjson's BooleanCodec: 1 is true, any other number false
    if isinstance(value, str):
        word = _BOOLEAN_WORDS.get(value.lower())
        if word is not None:
            return word
        if value in _ABSENT_TEXT and default is not None:
            return default
    raise _wrong(where, key, value, "true or false")


def enum(raw: Mapping[Any, Any], key: str, where: str, constants: tuple[str, ...], default: str) -> str:
    """A Java enum field: the constant's name, by name (any case) or by ordinal.

    A name the table does not know is kept when it looks like a Java constant (a newer client's
    value: fastjson would read it as null, which Java only prints); other text is an error.
    """
    value = _field(raw, key, where, default)
    if isinstance(value, str):
        if value.upper() in constants:
            return value.upper()
        if value in _ABSENT_TEXT:
            return default
        if not JAVA_INTEGER.fullmatch(value):
            if _CONSTANT.fullmatch(value):
                return value
            raise _wrong(where, key, value, f"one of {', '.join(constants)} or its ordinal")
        value = int(value) if len(value) < _MAX_DIGITS else -1
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(constants):
        raise _wrong(where, key, value, f"one of {', '.join(constants)} or its ordinal")
    return constants[value]


def strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BodyError(f"{where} must be a list of strings")
    return tuple(value)


def _field(raw: Mapping[Any, Any], key: str, where: str, default: Any) -> Any:
    value = raw.get(key)
    if value is None:  # absent, or JSON null: fastjson leaves the field at its default
        if default is None:
            raise BodyError(f"{where}.{key} is missing")
        return default
    return value


def _integer(raw: Mapping[Any, Any], key: str, where: str, default: int | None, expected: str,
             low: int, high: int) -> int:
    value = _field(raw, key, where, default)
    if isinstance(value, str):
        value = _integer_text(value, default)
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _wrong(where, key, value, expected)
    return value


def _integer_text(value: str, default: int | None) -> int | str:
    """An integer written as a JSON string, as fastjson's ``castToLong`` reads it; anything
    it cannot read is returned as is for the caller to refuse."""
    if value in _ABSENT_TEXT and default is not None:
        return default
    digits = value[:-len(m.group())] if (m := _TRAILING_ZEROS.search(value)) else value
    if JAVA_INTEGER.fullmatch(digits) and len(digits) < _MAX_DIGITS:
        return int(digits)
    return value


def _float_text(value: str, default: float | None) -> float | str:
    if value in _ABSENT_TEXT and default is not None:
        return default
    if _DECIMAL.fullmatch(value):
        return float(value)
    return value


def _wrong(where: str, key: str, value: Any, expected: str) -> BodyError:
    shown = repr(value)
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN] + "..."
    return BodyError(f"{where}.{key}={shown}: expected {expected}")


# --- values -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DataVersion:
    """A table's version: when it last changed and how many times it has changed."""

    timestamp: int = 0
    counter: int = 0
    state_version: int = 0

    @classmethod
    def new(cls, now_ms: int) -> Self:
        return cls(now_ms, 0)

    def next(self, now_ms: int) -> Self:
        return type(self)(now_ms, self.counter + 1, self.state_version)

    def to_json(self) -> dict[str, int]:
        return {"stateVersion": self.state_version, "timestamp": self.timestamp, "counter": self.counter}

    @classmethod
    def from_json(cls, raw: Any, where: str = "dataVersion") -> Self:
        raw = obj(raw, where)
        atomic = raw.get("counter")
        if isinstance(atomic, dict):  # an AtomicLong serialised field by field, as some Java writers do
            counter = int64(atomic, "value", f"{where}.counter", 0)
        else:
            counter = int64(raw, "counter", where, 0)
        return cls(int64(raw, "timestamp", where, 0), counter, int64(raw, "stateVersion", where, 0))


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """One topic on one broker: how many queues it has and who may read and write them."""

    topic_name: str
    read_queue_nums: int = DEFAULT_QUEUE_NUMS
    write_queue_nums: int = DEFAULT_QUEUE_NUMS
    perm: int = PERM_READ_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: tuple[tuple[str, str], ...] = ()
    """RocketMQ 5's topic attributes (``rocketq.protocol.topicattributes``), sorted by key; a
    tuple so that the config stays hashable. Written to JSON only when there are some."""

    @property
    def queue_count(self) -> int:
        return max(self.read_queue_nums, self.write_queue_nums)

    @property
    def attribute_map(self) -> dict[str, str]:
        return dict(self.attributes)

    @property
    def message_type(self) -> topicattributes.MessageType:
        return topicattributes.message_type(self.attribute_map)

    def validate(self, error: type[Exception] = namerules.RuleError, *, min_queue_nums: int = 0) -> Self:
        """Self, or ``error`` when a field is not acceptable.

        ``min_queue_nums`` is the caller's rule: a broker keeps a topic with no queues left,
        an admin tool refuses to create one. Whatever passes here also passes ``from_json``, so
        a broker never stores a topic it could not read back.
        """
        namerules.check_topic(self.topic_name, error)
        for key, n in (("readQueueNums", self.read_queue_nums), ("writeQueueNums", self.write_queue_nums)):
            if not min_queue_nums <= n <= MAX_QUEUE_NUMS:
                raise error(f"{key} {n} outside [{min_queue_nums}, {MAX_QUEUE_NUMS}]")
        namerules.check_perm(self.perm, error)
        if self.topic_filter_type not in TOPIC_FILTER_TYPES:
            raise error(f"topicFilterType {self.topic_filter_type[:_SHOWN]!r} is not SINGLE_TAG or MULTI_TAG")
        if not 0 <= self.topic_sys_flag <= INT32_MAX:
            raise error(f"topicSysFlag {self.topic_sys_flag} is not a non-negative 32-bit integer")
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "topicName": self.topic_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": self.topic_sys_flag,
            "order": self.order,
            **({"attributes": self.attribute_map} if self.attributes else {}),
        }

    @classmethod
    def from_json(cls, raw: Any, where: str = "topicConfig", *, name: str | None = None) -> Self:
        """Parse one TopicConfig; ``name`` stands in for a missing topicName (a table's key)."""
        raw = obj(raw, where)
        filter_type = text(raw, "topicFilterType", where, "SINGLE_TAG")
        if filter_type not in TOPIC_FILTER_TYPES:
            raise BodyError(f"{where}.topicFilterType={filter_type[:_SHOWN]!r}: expected SINGLE_TAG or MULTI_TAG")
        return cls(
            topic_name=text(raw, "topicName", where, name),
            read_queue_nums=non_negative_int32(raw, "readQueueNums", where, DEFAULT_QUEUE_NUMS),
            write_queue_nums=non_negative_int32(raw, "writeQueueNums", where, DEFAULT_QUEUE_NUMS),
            perm=permission(raw, "perm", where, PERM_READ_WRITE),
            topic_filter_type=filter_type,
            topic_sys_flag=non_negative_int32(raw, "topicSysFlag", where, 0),
            order=flag(raw, "order", where, False),
            attributes=attribute_pairs(raw.get("attributes"), f"{where}.attributes"),
        )


def attribute_pairs(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    """A JSON ``attributes`` object (absent or null: none) as sorted (key, value) pairs."""
    if raw is None:
        return ()
    table = obj(raw, where)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        raise BodyError(f"{where}: expected an object of strings")
    return tuple(sorted(table.items()))


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    """A consumer group's settings on one broker (Java's ``SubscriptionGroupConfig``)."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    consume_message_orderly: bool = False
    """RocketMQ 5: the group consumes FIFO; v2 clients are told ``fifo`` and pop in order."""

    _WIRE = (
        ("group_name", "groupName"),
        ("consume_enable", "consumeEnable"),
        ("consume_from_min_enable", "consumeFromMinEnable"),
        ("consume_broadcast_enable", "consumeBroadcastEnable"),
        ("retry_queue_nums", "retryQueueNums"),
        ("retry_max_times", "retryMaxTimes"),
        ("broker_id", "brokerId"),
        ("which_broker_when_consume_slowly", "whichBrokerWhenConsumeSlowly"),
        ("notify_consumer_ids_changed_enable", "notifyConsumerIdsChangedEnable"),
        ("consume_message_orderly", "consumeMessageOrderly"),
    )

    def validate(self, error: type[Exception] = namerules.RuleError) -> Self:
        """Self, or ``error`` when the name or a count is not acceptable (-1 retries: none at all)."""
        namerules.check_group(self.group_name, error)
        if not 0 <= self.retry_queue_nums <= MAX_RETRY_QUEUE_NUMS:
            raise error(f"retryQueueNums {self.retry_queue_nums} outside [0, {MAX_RETRY_QUEUE_NUMS}]")
        if not -1 <= self.retry_max_times <= MAX_RETRY_TIMES:
            raise error(f"retryMaxTimes {self.retry_max_times} outside [-1, {MAX_RETRY_TIMES}]")
        if self.broker_id < 0 or self.which_broker_when_consume_slowly < 0:
            raise error("brokerId and whichBrokerWhenConsumeSlowly must not be negative")
        return self

    def to_json(self) -> dict[str, Any]:
        return {wire: getattr(self, name) for name, wire in self._WIRE}

    @classmethod
    def from_json(cls, raw: Any, where: str = "subscriptionGroupConfig") -> Self:
        raw = obj(raw, where)
        values: dict[str, Any] = {"group_name": text(raw, "groupName", where)}
        for name, wire in cls._WIRE[1:]:
            default = getattr(_GROUP_DEFAULTS, name)
            read = flag if isinstance(default, bool) else integer
            values[name] = read(raw, wire, where, default)
        return cls(**values)


_GROUP_DEFAULTS: Final = SubscriptionGroupConfig("")

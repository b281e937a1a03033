"""Typed request and response headers carried in a frame's ``extFields``.

Each header is a frozen dataclass. A field's wire name (RocketMQ's camelCase) lives in its
metadata and nowhere else: handlers see ``header.consumer_group``, the wire sees
``consumerGroup``. ``from_ext`` reads values as Apache RocketMQ 4.9 does (``RemotingCommand.
decodeCommandCustomHeader`` and the hand-written ``FastCodesHeader`` decoders), because the
official clients in other languages depend on it:

* a boolean is Java's ``Boolean.parseBoolean``: true iff the text is ``true`` in any case;
  anything else (``false``, ``0``, ``1``, ``yes``, the empty string) is false, never an error.
  The C++ and Go clients send ``unitMode``/``batch`` as ``"0"``/``"1"`` or ``""``.
* an integer is Java's ``Integer.parseInt``/``Long.parseLong``: an optional ``+``/``-`` and
  decimal digits, nothing else (no spaces, no ``_``), within the range of the Java field's type
  (``int`` for the names in ``JAVA_INT_FIELDS``, ``long`` for the rest). An empty value counts
  as absent.

A missing required field or a number that is not one raises ``HeaderError`` naming the field;
the dispatcher answers SYSTEM_ERROR, which is also what a Java broker's request processor ends
in for such a request (4.9 logs the field and the handler then fails on the unset value).

Every request parses a header and every response writes one, so each class gets its
``from_ext``/``to_ext`` compiled once from its field table (as ``dataclasses`` compiles
``__init__``): straight-line code with one ``dict.get`` per field and no per-field dispatch.
``_generic_from_ext`` is the same contract written as a loop; it serves the rare inputs the
compiled SEND_MESSAGE_V2 parser does not take (short and long names mixed) and is what the
compiled code is tested against.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Self, TypeVar

from rocketq.protocol import nativecodecs
from rocketq.protocol.frames import java_string
from rocketq.protocol.sharedbodies import JAVA_INTEGER

_MISSING = dataclasses.MISSING
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1

JAVA_INT_FIELDS: Final = frozenset({
    "queueId", "sysFlag", "flag", "reconsumeTimes", "maxReconsumeTimes", "defaultTopicQueueNums",
    "commitOrRollback", "delayLevel", "maxNum", "maxMsgNums", "maxMsgBytes", "readQueueNums",
    "writeQueueNums", "perm", "topicSysFlag", "wipeTopicCount", "initMode", "reviveQid",
    "topicSeq", "maxTopicNum", "totalTopicNum", "groupSeq", "maxGroupNum", "totalGroupNum",
})
"""Wire names whose Java field is an ``int``/``Integer`` (parsed with ``Integer.parseInt``); every
other integer field is a ``long``. In RocketMQ's headers a name has the same type everywhere.
``bodyCrc32`` is an ``Integer`` too but is read as a long: a non-Java broker may send the plain
unsigned CRC, which a Java name server's decoder drops (and so skips the check) and
``rocketq.namesrv.registerbodies.check_crc32`` accepts."""
_SAFE_DIGITS: Final = {True: 9, False: 18}
"""Digits an unsigned value may have and still be within an int (True) or a long (False)
whatever they are: the compiled parsers convert such text without a range check."""


class HeaderError(ValueError):
    """A header field is missing or malformed."""


def wire(name: str, default: Any = _MISSING) -> Any:
    """Declare a header field with its wire (camelCase) name."""
    if default is _MISSING:
        return dataclasses.field(metadata={"wire": name})
    return dataclasses.field(default=default, metadata={"wire": name})


_SPECS: dict[type, tuple[tuple[str, str, type, bool], ...]] = {}
HeaderT = TypeVar("HeaderT")


def _field_specs(cls: type) -> tuple[tuple[str, str, type, bool], ...]:
    cached = _SPECS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        optional = False
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            optional, hint = True, args[0]
        required = f.default is _MISSING and not optional
        specs.append((f.name, f.metadata["wire"], hint, required))
    _SPECS[cls] = tuple(specs)
    return _SPECS[cls]


def _parse_bool(raw: str) -> bool:
    """Java's ``Boolean.parseBoolean``: never an error."""
    return len(raw) == 4 and raw.lower() == "true"


def _int_bounds(wire_name: str) -> tuple[int, int]:
    return (_INT32_MIN, _INT32_MAX) if wire_name in JAVA_INT_FIELDS else (_INT64_MIN, _INT64_MAX)


def _parse_int(wire_name: str, raw: str) -> int:
    """Java's ``Integer.parseInt`` or ``Long.parseLong``, by the field's Java type."""
    if not JAVA_INTEGER.fullmatch(raw):
        raise HeaderError(f"header field {wire_name}={raw[:40]!r} is not an integer")
    low, high = _int_bounds(wire_name)
    try:
        value = int(raw)
    except ValueError:  # more digits than Python converts: far beyond any Java range
        value = high + 1
    if not low <= value <= high:
        raise HeaderError(f"header field {wire_name}={raw[:40]!r} is out of range")
    return value


def _parse(kind: type, wire_name: str, raw: str) -> Any:
    if kind is str:
        return raw
    if kind is bool:
        return _parse_bool(raw)
    if kind is int:
        return _parse_int(wire_name, raw)
    raise TypeError(f"unsupported header field type {kind}")


def _generic_from_ext(cls: type[HeaderT], ext: Mapping[str, str]) -> HeaderT:
    """``from_ext`` as a plain loop over the field table (see the module docstring)."""
    values: dict[str, Any] = {}
    for name, wire_name, kind, required in _field_specs(cls):
        raw = ext.get(wire_name)
        if raw is None or (raw == "" and kind is int):
            if required:
                raise HeaderError(f"the custom field <{wire_name}> is null")
            continue
        values[name] = _parse(kind, wire_name, raw)
    return cls(**values)


def _value_lines(kind: type, wire_name: str) -> list[str]:
    """Source that turns ``raw`` into ``v``: the common, well-formed text inline, anything
    else through ``_parse_int``/``_parse_bool``, which accept or reject it as ``_parse`` does."""
    if kind is str:
        return ["        v = raw"]
    if kind is bool:
        return ["        v = True if raw == 'true' else False if raw == 'false' else _parse_bool(raw)"]
    if kind is int:
        # short plain digits cannot leave the field's range; anything else takes the full check
        safe = _SAFE_DIGITS[wire_name in JAVA_INT_FIELDS]
        return [f"        v = int(raw) if raw.isdecimal() and len(raw) <= {safe} else _parse_int({wire_name!r}, raw)"]
    raise TypeError(f"unsupported header field type {kind}")


def _compile_from_ext(cls: type[HeaderT], keys: Mapping[str, str]) -> Callable[[Mapping[str, str]], HeaderT]:
    """Straight-line ``from_ext`` for ``cls``, reading each field under ``keys[field]``.

    Errors name the field's wire name, whatever key it was read under (SEND_MESSAGE_V2's
    ``a`` is reported as ``producerGroup``).

    The instance is filled slot by slot (what a frozen dataclass's ``__init__`` does, minus
    the keyword-argument handling, which costs more than the parsing).
    """
    if "__post_init__" in vars(cls):
        raise TypeError(f"{cls.__name__}: compiled header parsing does not run __post_init__")
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    env: dict[str, Any] = {"_new": object.__new__, "_set": object.__setattr__, "cls": cls,
                           "HeaderError": HeaderError, "_parse_int": _parse_int, "_parse_bool": _parse_bool}
    lines = ["def from_ext(ext):", "    get = ext.get", "    self = _new(cls)"]
    for name, wire_name, kind, required in _field_specs(cls):
        missing = "raw is None or raw == ''" if kind is int else "raw is None"
        lines += [f"    raw = get({keys[name]!r})", f"    if {missing}:"]
        if required:
            lines.append(f"        raise HeaderError({f'the custom field <{wire_name}> is null'!r})")
        elif defaults[name] is _MISSING:
            raise TypeError(f"{cls.__name__}.{name}: an optional header field needs a default")
        else:
            env[f"_d_{name}"] = defaults[name]
            lines.append(f"        _set(self, {name!r}, _d_{name})")
        lines += ["    else:", *_value_lines(kind, wire_name), f"        _set(self, {name!r}, v)"]
    lines.append("    return self")
    exec("\n".join(lines), env)  # the source is built above from the dataclass's own fields
    # the C twin (native/headers.c) reads the same table; what it does not take goes to the above
    parse: Callable[[Mapping[str, str]], HeaderT] = nativecodecs.accelerated_with(
        cls, _native_table(cls, keys))(env["from_ext"])
    return parse


def _native_table(cls: type, keys: Mapping[str, str]) -> tuple[tuple[Any, ...], ...]:
    """``cls``'s fields as native/headers.c reads them: (slot, key, kind, required, default,
    safe digits) each."""
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    return tuple((name, keys[name], _NATIVE_KINDS[kind], required, defaults[name],
                  _SAFE_DIGITS[wire_name in JAVA_INT_FIELDS] if kind is int else 0)
                 for name, wire_name, kind, required in _field_specs(cls))


_NATIVE_KINDS: Final = {str: 0, int: 1, bool: 2}
"""Field kinds as native/headers.c numbers them."""


def _compile_to_ext(cls: type, wire_names: Mapping[str, str]) -> Callable[[Any], dict[str, str]]:
    """Straight-line ``to_ext``: absent (None) fields are left out; values as Java prints them."""
    lines = ["def to_ext(self):", "    out = {}"]
    for name, _wire, kind, _required in _field_specs(cls):
        text = ("v if v.__class__ is str else _js(v)" if kind is str
                else "str(v) if v.__class__ is int else _js(v)" if kind is int else "_js(v)")
        lines += [f"    v = self.{name}", "    if v is not None:", f"        out[{wire_names[name]!r}] = {text}"]
    lines.append("    return out")
    env: dict[str, Any] = {"_js": java_string}
    exec("\n".join(lines), env)  # the source is built above from the dataclass's own fields
    return env["to_ext"]


_FROM_EXT: dict[type, Callable[[Mapping[str, str]], Any]] = {}
_TO_EXT: dict[type, Callable[[Any], dict[str, str]]] = {}


def _wire_names(cls: type) -> dict[str, str]:
    return {name: wire_name for name, wire_name, _kind, _required in _field_specs(cls)}


class Header:
    """Base of all headers: conversion between extFields and typed values."""

    __slots__ = ()
    aliases: ClassVar[Mapping[str, str]] = {}
    """Short wire names (SEND_MESSAGE_V2's a..n) mapped to the full ones."""

    @classmethod
    def from_ext(cls, ext: Mapping[str, str]) -> Self:
        if cls.aliases:
            ext = {cls.aliases.get(k, k): v for k, v in ext.items()}
        parse = _FROM_EXT.get(cls)
        if parse is None:
            parse = _FROM_EXT[cls] = _compile_from_ext(cls, _wire_names(cls))
        return parse(ext)

    def to_ext(self) -> dict[str, str]:
        cls = type(self)
        write = _TO_EXT.get(cls)
        if write is None:
            write = _TO_EXT[cls] = _compile_to_ext(cls, _wire_names(cls))
        return write(self)


# --- send -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeader(Header):
    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic", "TBW102")
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", 4)
    queue_id: int = wire("queueId", -1)
    sys_flag: int = wire("sysFlag", 0)
    born_timestamp: int = wire("bornTimestamp", 0)
    flag: int = wire("flag", 0)
    properties: str | None = wire("properties", None)
    reconsume_times: int | None = wire("reconsumeTimes", None)
    unit_mode: bool = wire("unitMode", False)
    batch: bool = wire("batch", False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", None)
    broker_name: str | None = wire("brokerName", None)


SEND_V2_ALIASES: Mapping[str, str] = {
    "a": "producerGroup",
    "b": "topic",
    "c": "defaultTopic",
    "d": "defaultTopicQueueNums",
    "e": "queueId",
    "f": "sysFlag",
    "g": "bornTimestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsumeTimes",
    "k": "unitMode",
    "l": "maxReconsumeTimes",
    "m": "batch",
    "n": "brokerName",
}
_SEND_V2_SHORT = {full: short for short, full in SEND_V2_ALIASES.items()}
_SEND_V2_SHORT_KEYS = frozenset(SEND_V2_ALIASES) | {"AccessKey", "Signature", "SecurityToken"}
"""Keys that keep a V2 header on the compiled path: the short names, and the fields an ACL
client adds (rocketq/acl/signing.py), which no header field reads."""
_SEND_V2_FIELDS = {name: _SEND_V2_SHORT[wire_name] for name, wire_name in _wire_names(SendMessageRequestHeader).items()}
_send_v2_from_ext = _compile_from_ext(SendMessageRequestHeader, _SEND_V2_FIELDS)
_send_v2_to_ext = _compile_to_ext(SendMessageRequestHeader, _SEND_V2_FIELDS)


@nativecodecs.accelerated_with(SendMessageRequestHeader, _native_table(SendMessageRequestHeader, _SEND_V2_FIELDS))
def send_header_from_v2(ext: Mapping[str, str]) -> SendMessageRequestHeader:
    """SEND_MESSAGE_V2's header: the short names ``a``..``n``; a long name given as well wins
    when it comes later, so such (non-Java) input takes the general path.

    Its C twin (native/headers.c) parses an ext of short names alone (every Java client's)
    itself, sparing the key test and a call; anything else comes here."""
    if _SEND_V2_SHORT_KEYS.issuperset(ext):
        return _send_v2_from_ext(ext)
    return _generic_from_ext(SendMessageRequestHeader, {SEND_V2_ALIASES.get(k, k): v for k, v in ext.items()})


def send_header_to_v2(header: SendMessageRequestHeader) -> dict[str, str]:
    return _send_v2_to_ext(header)


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageResponseHeader(Header):
    msg_id: str = wire("msgId")
    queue_id: int = wire("queueId")
    queue_offset: int = wire("queueOffset")
    transaction_id: str | None = wire("transactionId", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader(Header):
    offset: int = wire("offset")
    group: str = wire("group")
    delay_level: int = wire("delayLevel", 0)
    origin_msg_id: str | None = wire("originMsgId", None)
    origin_topic: str | None = wire("originTopic", None)
    unit_mode: bool = wire("unitMode", False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRequestHeader(Header):
    producer_group: str = wire("producerGroup")
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    commit_or_rollback: int = wire("commitOrRollback")
    from_transaction_check: bool = wire("fromTransactionCheck", False)
    msg_id: str = wire("msgId")
    transaction_id: str | None = wire("transactionId", None)
    topic: str | None = wire("topic", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTransactionStateRequestHeader(Header):
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    msg_id: str | None = wire("msgId", None)
    transaction_id: str | None = wire("transactionId", None)
    offset_msg_id: str | None = wire("offsetMsgId", None)
    topic: str | None = wire("topic", None)


# --- pull and offsets -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    queue_offset: int = wire("queueOffset")
    max_msg_nums: int = wire("maxMsgNums")
    sys_flag: int = wire("sysFlag")
    commit_offset: int = wire("commitOffset")
    suspend_timeout_millis: int = wire("suspendTimeoutMillis")
    subscription: str | None = wire("subscription", None)
    sub_version: int = wire("subVersion", 0)
    expression_type: str | None = wire("expressionType", None)
    max_msg_bytes: int | None = wire("maxMsgBytes", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageResponseHeader(Header):
    suggest_which_broker_id: int = wire("suggestWhichBrokerId")
    next_begin_offset: int = wire("nextBeginOffset")
    min_offset: int = wire("minOffset")
    max_offset: int = wire("maxOffset")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    set_zero_if_not_found: bool | None = wire("setZeroIfNotFound", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    commit_offset: int = wire("commitOffset")


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetResponseHeader(Header):
    """QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP answers."""

    offset: int = wire("offset")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicQueueRequestHeader(Header):
    """GET_MAX_OFFSET, GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME all name one queue."""

    topic: str = wire("topic")
    queue_id: int = wire("queueId")


@dataclass(frozen=True, slots=True, kw_only=True)
class EarliestMsgStoretimeResponseHeader(Header):
    timestamp: int = wire("timestamp")


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    timestamp: int = wire("timestamp")
    boundary_type: str | None = wire("boundaryType", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetRequestHeader(Header):
    topic: str = wire("topic")
    group: str = wire("group")
    timestamp: int = wire("timestamp")
    is_force: bool = wire("isForce", True)


@dataclass(frozen=True, slots=True, kw_only=True)
class CloneGroupOffsetRequestHeader(Header):
    src_group: str = wire("srcGroup")
    dest_group: str = wire("destGroup")
    topic: str | None = wire("topic", None)
    offline: bool = wire("offline", False)


# --- queries ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageRequestHeader(Header):
    topic: str = wire("topic")
    key: str = wire("key")
    max_num: int = wire("maxNum")
    begin_timestamp: int = wire("beginTimestamp")
    end_timestamp: int = wire("endTimestamp")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageResponseHeader(Header):
    index_last_update_timestamp: int = wire("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int = wire("indexLastUpdatePhyoffset")


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMessageRequestHeader(Header):
    offset: int = wire("offset")
    topic: str | None = wire("topic", None)


# --- clients ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterClientRequestHeader(Header):
    client_id: str = wire("clientID")
    producer_group: str | None = wire("producerGroup", None)
    consumer_group: str | None = wire("consumerGroup", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeader(Header):
    """GET_CONSUMER_LIST_BY_GROUP, NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_CONNECTION_LIST."""

    consumer_group: str = wire("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumeStatsRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str | None = wire("topic", None)


# --- topics, groups, broker admin -------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicRequestHeader(Header):
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic", "TBW102")
    read_queue_nums: int = wire("readQueueNums")
    write_queue_nums: int = wire("writeQueueNums")
    perm: int = wire("perm")
    topic_filter_type: str = wire("topicFilterType", "SINGLE_TAG")
    topic_sys_flag: int | None = wire("topicSysFlag", None)
    order: bool = wire("order", False)
    attributes: str | None = wire("attributes", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicHeader(Header):
    """GET_ROUTEINFO_BY_TOPIC, DELETE_TOPIC_IN_BROKER/NAMESRV, GET_TOPIC_STATS_INFO, ..."""

    topic: str = wire("topic")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicConfigRequestHeader(Header):
    """GET_TOPIC_CONFIG (RocketMQ 5); ``lo`` asks for a static topic's logic queues (not used)."""

    topic: str = wire("topic")
    lo: bool | None = wire("lo", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetSubscriptionGroupConfigRequestHeader(Header):
    group: str = wire("group")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteSubscriptionGroupRequestHeader(Header):
    group_name: str = wire("groupName")
    clean_offset: bool = wire("cleanOffset", False)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetAllTopicConfigRequestHeader(Header):
    """GET_ALL_TOPIC_CONFIG; RocketMQ 5's split metadata pages by these, 4.x sends none."""

    topic_seq: int | None = wire("topicSeq", None)
    data_version: str | None = wire("dataVersion", None)
    max_topic_num: int | None = wire("maxTopicNum", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetAllTopicConfigResponseHeader(Header):
    total_topic_num: int = wire("totalTopicNum")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetAllSubscriptionGroupRequestHeader(Header):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG, paged like GET_ALL_TOPIC_CONFIG."""

    group_seq: int | None = wire("groupSeq", None)
    data_version: str | None = wire("dataVersion", None)
    max_group_num: int | None = wire("maxGroupNum", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetAllSubscriptionGroupResponseHeader(Header):
    total_group_num: int = wire("totalGroupNum")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicsByClusterRequestHeader(Header):
    cluster: str = wire("cluster")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerNameHeader(Header):
    """WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER."""

    broker_name: str = wire("brokerName")


@dataclass(frozen=True, slots=True, kw_only=True)
class WipeWritePermResponseHeader(Header):
    wipe_topic_count: int = wire("wipeTopicCount")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerGroupHeader(Header):
    """GET_PRODUCER_CONNECTION_LIST."""

    producer_group: str = wire("producerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader(Header):
    """GET_CONSUMER_RUNNING_INFO: admin → broker, forwarded unchanged broker → consumer."""

    consumer_group: str = wire("consumerGroup")
    client_id: str = wire("clientId")
    jstack_enable: bool = wire("jstackEnable", False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader(Header):
    """CONSUME_MESSAGE_DIRECTLY: admin → broker (``msgId`` = the offset message id), forwarded
    broker → consumer with the stored message as the body."""

    consumer_group: str = wire("consumerGroup")
    client_id: str = wire("clientId")
    msg_id: str = wire("msgId")
    broker_name: str | None = wire("brokerName", None)
    topic: str | None = wire("topic", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewBrokerStatsDataRequestHeader(Header):
    """VIEW_BROKER_STATS_DATA: e.g. TOPIC_PUT_NUMS / topic, GROUP_GET_NUMS / topic@group."""

    stats_name: str = wire("statsName")
    stats_key: str = wire("statsKey")


@dataclass(frozen=True, slots=True, kw_only=True)
class AddWritePermResponseHeader(Header):
    add_topic_count: int = wire("addTopicCount")


# --- name server ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRequestHeader(Header):
    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")
    ha_server_addr: str = wire("haServerAddr", "")
    broker_id: int = wire("brokerId")
    compressed: bool = wire("compressed", False)
    body_crc32: int = wire("bodyCrc32", 0)
    heartbeat_timeout_millis: int | None = wire("heartbeatTimeoutMillis", None)
    topic_increment: bool | None = wire("rocketqTopicIncrement", None)
    """rocketq: true when the body holds only changed topics (Java name servers ignore it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerResponseHeader(Header):
    ha_server_addr: str | None = wire("haServerAddr", None)
    master_addr: str | None = wire("masterAddr", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRequestHeader(Header):
    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")
    broker_id: int = wire("brokerId")


@dataclass(frozen=True, slots=True, kw_only=True)
class KVConfigHeader(Header):
    """PUT_KV_CONFIG (with value), GET_KV_CONFIG and DELETE_KV_CONFIG (without)."""

    namespace: str = wire("namespace")
    key: str = wire("key")
    value: str | None = wire("value", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class KVConfigResponseHeader(Header):
    value: str | None = wire("value", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceHeader(Header):
    namespace: str = wire("namespace")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicFromNamesrvRequestHeader(Header):
    """DELETE_TOPIC_IN_NAMESRV; ``clusterName`` (RocketMQ 5) limits it to that cluster's brokers."""

    topic: str = wire("topic")
    cluster_name: str | None = wire("clusterName", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionRequestHeader(Header):
    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")
    broker_id: int = wire("brokerId")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionResponseHeader(Header):
    changed: bool = wire("changed")


# --- request-reply ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyMessageRequestHeader(Header):
    """PUSH_REPLY_MESSAGE_TO_CLIENT: a reply as the broker hands it to the requesting client."""

    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic")
    default_topic_queue_nums: int = wire("defaultTopicQueueNums")
    queue_id: int = wire("queueId")
    sys_flag: int = wire("sysFlag")
    born_timestamp: int = wire("bornTimestamp")
    flag: int = wire("flag")
    properties: str | None = wire("properties", None)
    reconsume_times: int | None = wire("reconsumeTimes", None)
    unit_mode: bool = wire("unitMode", False)
    born_host: str = wire("bornHost")
    store_host: str = wire("storeHost")
    store_timestamp: int = wire("storeTimestamp")

"""v2 messages ⇄ remoting messages, with the checks RocketMQ's proxy makes on the way in.

In: a v2 ``Message`` becomes a remoting ``Message`` whose properties say what the v2 system
properties said: ``UNIQ_KEY`` = the client's message id (the v2 clients make the id), ``TAGS``,
``KEYS`` (space-joined), ``__SHARDINGKEY`` = the message group, ``TRAN_MSG`` for transactions
(with ``CHECK_IMMUNITY_TIME_IN_SECONDS`` from the recovery duration), ``TIMER_DELIVER_MS`` and a
delay level for DELAY (``rocketq.proxy.delays``), ``__BORNHOST``, ``BORN_TIMESTAMP``,
``TRACE_CONTEXT``. The checks and their codes are the proxy's (``SendMessageActivity``):
MESSAGE_BODY_EMPTY, MESSAGE_BODY_TOO_LARGE, ILLEGAL_MESSAGE_TAG, ILLEGAL_MESSAGE_PROPERTY_KEY,
ILLEGAL_MESSAGE_ID, ILLEGAL_MESSAGE_GROUP, ILLEGAL_DELIVERY_TIME, ILLEGAL_TOPIC.

Out: a stored ``MessageExt`` becomes a v2 ``Message`` as ``GrpcConverter.buildMessage`` builds it:
user properties are the non-system ones, the body digest is MD5 in uppercase hex, the encoding
IDENTITY (rocketq's remoting decoder has already inflated compressed bodies), the type read
back from the properties, ``delivery_attempt`` = reconsume times + 1.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Final

from google.protobuf import duration_pb2, timestamp_pb2

from rocketq.filter import sql92
from rocketq.protocol import messageproperties as mp
from rocketq.protocol import namerules, subscription
from rocketq.protocol.messagetypes import Message, MessageExt
from rocketq.proxy import delays
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb

SQL_FILTER: Final = "SQL92"
TAG_FILTER: Final = "TAG"
TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
BORN_HOST: Final = "__BORNHOST"
BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
TRACE_CONTEXT: Final = "TRACE_CONTEXT"
DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
MAX_MESSAGE_GROUP_LENGTH: Final = 64
"""``maxMessageGroupSize`` of RocketMQ's proxy."""
MAX_USER_PROPERTIES: Final = 128
"""``userPropertyMaxNum``."""
MAX_USER_PROPERTY_BYTES: Final = 16 * 1024
"""``maxUserPropertySize``: keys and values together."""

SYSTEM_PROPERTY_NAMES: Final = frozenset(
    {value for name, value in vars(mp).items() if name.isupper() and isinstance(value, str) and value.strip()
     and name not in ("KEY_SEPARATOR",)}
    | {TIMER_DELIVER_MS, BORN_HOST, BORN_TIMESTAMP, TRACE_CONTEXT, DLQ_ORIGIN_TOPIC, DLQ_ORIGIN_MESSAGE_ID,
       "POP_CK", "1ST_POP_TIME", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_OUT_MS", "INNER_NUM", "INNER_BASE"}
)
"""Property names a user may not set (RocketMQ's ``MessageConst.STRING_HASH_SET``, as far as rocketq uses them)."""


def _check_tag(tag: str) -> None:
    if not tag.strip() or "|" in tag or any(ord(c) < 32 or ord(c) == 127 for c in tag):
        raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, f"tag {tag!r} is blank, holds '|' or a control character")


def _check_user_properties(props: Mapping[str, str]) -> None:
    if len(props) > MAX_USER_PROPERTIES:
        raise ProxyError(Code.MESSAGE_PROPERTIES_TOO_LARGE, f"more than {MAX_USER_PROPERTIES} user properties")
    size = 0
    for key, value in props.items():
        if not key.strip() or key in SYSTEM_PROPERTY_NAMES or any(c in key for c in "\x01\x02"):
            raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property key {key!r} is blank or reserved")
        if any(c in value for c in "\x01\x02"):
            raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property {key!r} holds a separator character")
        size += len(key.encode()) + len(value.encode())
    if size > MAX_USER_PROPERTY_BYTES:
        raise ProxyError(Code.MESSAGE_PROPERTIES_TOO_LARGE, f"user properties exceed {MAX_USER_PROPERTY_BYTES} bytes")


def check_topic(resource: pb.Resource) -> str:
    """The topic name of a request, or ILLEGAL_TOPIC (bad name, or a system topic)."""
    name = resource.name
    try:
        namerules.check_topic(name)
    except namerules.RuleError as exc:
        raise ProxyError(Code.ILLEGAL_TOPIC, str(exc)) from None
    if namerules.is_system_topic(name):
        raise ProxyError(Code.ILLEGAL_TOPIC, f"topic {name} is a system topic")
    return name


def check_group(resource: pb.Resource) -> str:
    name = resource.name
    try:
        return namerules.check_group(name)
    except namerules.RuleError as exc:
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, str(exc)) from None


def check_filter(topic: str, expression: pb.FilterExpression) -> tuple[str, str]:
    """(expression, remoting expression type) of a receive; ILLEGAL_FILTER_EXPRESSION when it does
    not parse (RocketMQ's proxy checks with ``FilterAPI.build`` before asking a broker)."""
    kind = SQL_FILTER if expression.type == pb.SQL else TAG_FILTER
    text = expression.expression or subscription.SUB_ALL
    try:
        subscription.build(topic, text, kind, 0)
        if kind == SQL_FILTER:
            sql92.compile_selector(text)
    except (subscription.SubscriptionError, sql92.FilterSyntaxError) as exc:
        raise ProxyError(Code.ILLEGAL_FILTER_EXPRESSION, f"filter expression {text[:200]!r}: {exc}") from None
    return text, kind


def message_type(msg: pb.Message) -> pb.MessageType:
    """The type a v2 message declares (the client sets it; an unset one is read from its fields)."""
    declared = msg.system_properties.message_type
    if declared != pb.MESSAGE_TYPE_UNSPECIFIED:
        return declared
    sp = msg.system_properties
    if sp.HasField("message_group"):
        return pb.FIFO
    if sp.HasField("delivery_timestamp"):
        return pb.DELAY
    return pb.NORMAL


def to_remoting(msg: pb.Message, *, max_body_size: int, max_delay_ms: int, delay_levels_ms: tuple[int, ...],
                now_ms: int) -> Message:
    """The remoting message for one v2 message, or ProxyError naming the first bad field."""
    topic = check_topic(msg.topic)
    sp = msg.system_properties
    if not msg.body:
        raise ProxyError(Code.MESSAGE_BODY_EMPTY, "message body is empty")
    if len(msg.body) > max_body_size:
        raise ProxyError(Code.MESSAGE_BODY_TOO_LARGE, f"message body exceeds {max_body_size} bytes")
    if not sp.message_id.strip():
        raise ProxyError(Code.ILLEGAL_MESSAGE_ID, "message id is blank")
    user = dict(msg.user_properties)
    _check_user_properties(user)
    props: dict[str, str] = dict(user)
    props[mp.UNIQ_KEY] = sp.message_id
    if sp.HasField("tag"):
        _check_tag(sp.tag)
        props[mp.TAGS] = sp.tag
    keys = [k for k in sp.keys if k.strip()]
    if keys:
        props[mp.KEYS] = mp.KEY_SEPARATOR.join(keys)
    kind = message_type(msg)
    if sp.HasField("message_group"):
        group = sp.message_group
        if not group.strip() or len(group) > MAX_MESSAGE_GROUP_LENGTH or any(ord(c) < 32 for c in group):
            raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP, f"message group {group[:80]!r} is blank, too long or bad")
        props[mp.SHARDING_KEY] = group
    if kind == pb.TRANSACTION:
        props[mp.TRAN_MSG] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            props[mp.CHECK_IMMUNITY_TIME_IN_SECONDS] = str(sp.orphaned_transaction_recovery_duration.seconds)
    if sp.HasField("delivery_timestamp"):
        deliver_ms = timestamp_ms(sp.delivery_timestamp)
        if deliver_ms - now_ms > max_delay_ms:
            raise ProxyError(Code.ILLEGAL_DELIVERY_TIME, f"delivery time is more than {max_delay_ms} ms ahead")
        props[TIMER_DELIVER_MS] = str(deliver_ms)
        level = delays.level_for(deliver_ms - now_ms, delay_levels_ms)
        if level:
            props[mp.DELAY] = str(level)
    if sp.born_host:
        props[BORN_HOST] = sp.born_host
    if sp.HasField("born_timestamp"):
        props[BORN_TIMESTAMP] = str(timestamp_ms(sp.born_timestamp))
    if sp.HasField("trace_context"):
        props[TRACE_CONTEXT] = sp.trace_context
    return Message(topic, bytes(msg.body), properties=props)


def timestamp_ms(ts: timestamp_pb2.Timestamp) -> int:
    """Milliseconds of a Timestamp, even outside the range protobuf's ``ToMilliseconds`` accepts
    (a client that puts milliseconds into ``seconds`` must get ILLEGAL_DELIVERY_TIME, not an error)."""
    return int(ts.seconds) * 1000 + int(ts.nanos) // 1_000_000


def _timestamp(ms: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromMilliseconds(ms)
    return ts


def stored_type(props: Mapping[str, str]) -> pb.MessageType:
    """The v2 type of a stored message, read from its properties as RocketMQ's converter does."""
    if props.get(mp.TRAN_MSG) == "true":
        return pb.TRANSACTION
    if mp.DELAY in props or TIMER_DELIVER_MS in props:
        return pb.DELAY
    if mp.SHARDING_KEY in props:
        return pb.FIFO
    return pb.NORMAL


def to_v2(ext: MessageExt, *, topic: str, receipt_handle: str | None = None) -> pb.Message:
    """The v2 message a consumer receives for a stored message (``topic``: the one it asked for)."""
    props = ext.properties
    sp = pb.SystemProperties(
        message_id=ext.msg_id,
        body_digest=pb.Digest(type=pb.MD5, checksum=hashlib.md5(ext.body).hexdigest().upper()),
        body_encoding=pb.IDENTITY,
        message_type=stored_type(props),
        born_timestamp=_timestamp(ext.born_timestamp),
        born_host=props.get(BORN_HOST) or ext.born_host[0],
        store_timestamp=_timestamp(ext.store_timestamp),
        store_host=f"{ext.store_host[0]}:{ext.store_host[1]}",
        queue_id=ext.queue_id,
        queue_offset=ext.queue_offset,
        delivery_attempt=ext.reconsume_times + 1,
    )
    if ext.tags is not None:
        sp.tag = ext.tags
    sp.keys.extend(ext.keys)
    if TIMER_DELIVER_MS in props and props[TIMER_DELIVER_MS].isdigit():
        sp.delivery_timestamp.CopyFrom(_timestamp(int(props[TIMER_DELIVER_MS])))
    if mp.SHARDING_KEY in props:
        sp.message_group = props[mp.SHARDING_KEY]
    if TRACE_CONTEXT in props:
        sp.trace_context = props[TRACE_CONTEXT]
    if receipt_handle is not None:
        sp.receipt_handle = receipt_handle
    if DLQ_ORIGIN_TOPIC in props:
        sp.dead_letter_queue.CopyFrom(pb.DeadLetterQueue(topic=props[DLQ_ORIGIN_TOPIC],
                                                         message_id=props.get(DLQ_ORIGIN_MESSAGE_ID, "")))
    user = {k: v for k, v in props.items() if k not in SYSTEM_PROPERTY_NAMES}
    return pb.Message(topic=pb.Resource(name=topic), user_properties=user, system_properties=sp, body=ext.body)


def duration_ms(d: duration_pb2.Duration) -> int:
    return int(d.ToMilliseconds())

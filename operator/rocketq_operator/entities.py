"""RocketMQTopic and RocketMQConsumerGroup specs, parsed and validated into BrokerAdmin values.

Both kinds name a cluster (``clusterRef``, same namespace) and describe one RocketMQ entity
that the operator keeps on every master of that cluster. The RocketMQ name defaults to the
object's ``metadata.name`` and must follow RocketMQ's rule (``^[%|a-zA-Z0-9_-]+$``, 127
characters for topics, 255 for groups); retry/DLQ and system names are refused, as the CRDs'
CEL rules do. Problems come back as lines in ``errors`` for a status condition.

A topic's ``messageType`` (RocketMQ 5's ``message.type``) has no CRD default, because the older
``order`` field speaks for it: unset, it is FIFO for an ordered topic and NORMAL otherwise, and an
ordered topic of another type is refused (the CRD says the same in CEL). A group's
``consumeMessageOrderly`` is optional on purpose: unset, the operator leaves whatever the brokers
have (``rocketq admin updateSubGroup -o``) alone instead of resetting it to false.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rocketq_operator import brokeradmin, validation
from rocketq_operator.spec import MAX_CLUSTER_NAME
from rocketq_operator.validation import Reader

TOPIC_KIND: Final = "RocketMQTopic"
GROUP_KIND: Final = "RocketMQConsumerGroup"
MAX_TOPIC_NAME: Final = 127
MAX_GROUP_NAME: Final = 255
MAX_QUEUES: Final = 1024
MAX_RETRY_TIMES: Final = 64
MAX_RETRY_QUEUES: Final = 64
PERMS: Final = (2, 4, 6)
RESERVED_PREFIXES: Final = ("%RETRY%", "%DLQ%")
SYSTEM_TOPICS: Final = frozenset({"TBW102", "SCHEDULE_TOPIC_XXXX", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"})

_ENTITY_NAME: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")


class MessageType(enum.Enum):
    """The types a RocketMQTopic may declare (``message.type``; UNSPECIFIED is not one)."""

    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    MIXED = "MIXED"


@dataclass(frozen=True)
class TopicSpec:
    cluster_ref: str
    config: brokeradmin.TopicConfig


@dataclass(frozen=True)
class GroupSpec:
    cluster_ref: str
    config: brokeradmin.GroupConfig
    """``consume_message_orderly`` in it is the spec's, or false when the spec leaves it unset."""
    orderly_declared: bool = True
    """False: ``consumeMessageOrderly`` is unset, and each broker's own value is kept."""


@dataclass(frozen=True)
class ParsedEntity:
    spec: TopicSpec | GroupSpec | None
    errors: tuple[str, ...] = ()


def _cluster_ref(r: Reader, raw: Mapping[str, Any]) -> str:
    ref = r.string(raw.get("clusterRef"), "spec.clusterRef", None, validation.DNS_1035, MAX_CLUSTER_NAME)
    if ref is None and raw.get("clusterRef") is None:
        r.fail("spec.clusterRef", "is required: the name of a RocketMQCluster in this namespace")
    return ref or ""


def _entity_name(r: Reader, raw: Any, path: str, default: str, limit: int) -> str:
    name = raw if raw is not None else default
    where = path if raw is not None else "metadata.name"
    if not isinstance(name, str) or not name:
        r.fail(where, "must be a non-empty string")
        return ""
    if len(name) > limit:
        r.fail(where, f"must be at most {limit} characters for RocketMQ, got {len(name)}")
    elif not _ENTITY_NAME.match(name):
        r.fail(where, f"{name!r} has characters RocketMQ does not allow (only letters, digits, '%', '|', '_', '-')")
    elif name.startswith(RESERVED_PREFIXES):
        r.fail(where, "retry (%RETRY%) and dead-letter (%DLQ%) names are made by the brokers, not declared")
    return name


def parse_topic(raw: Any, object_name: str) -> ParsedEntity:
    r = Reader()
    top = r.mapping(raw, "spec")
    ref = _cluster_ref(r, top)
    name = _entity_name(r, top.get("topicName"), "spec.topicName", object_name, MAX_TOPIC_NAME)
    if name.startswith("RMQ_SYS_") or name in SYSTEM_TOPICS:
        r.fail("spec.topicName" if top.get("topicName") is not None else "metadata.name",
               f"{name!r} is a RocketMQ system topic name")
    perm = r.integer(top.get("perm"), "spec.perm", brokeradmin.PERM_READ_WRITE, 2, 6)
    if perm not in PERMS:
        r.fail("spec.perm", f"must be one of 2 (write), 4 (read) or 6 (read+write), got {perm}")
    order = r.boolean(top.get("order"), "spec.order", False)
    config = brokeradmin.TopicConfig(
        name=name,
        read_queue_nums=r.integer(top.get("readQueueNums"), "spec.readQueueNums", 8, 1, MAX_QUEUES),
        write_queue_nums=r.integer(top.get("writeQueueNums"), "spec.writeQueueNums", 8, 1, MAX_QUEUES),
        perm=perm,
        order=order,
        message_type=_message_type(r, top.get("messageType"), order).value,
    )
    errors = tuple(r.errors)
    return ParsedEntity(None if errors else TopicSpec(ref, config), errors)


def _message_type(r: Reader, raw: Any, order: bool) -> MessageType:
    implied = MessageType.FIFO if order else MessageType.NORMAL
    declared = r.choice(raw, "spec.messageType", MessageType, implied)
    if order and declared is not MessageType.FIFO:
        r.fail("spec.messageType", f"an ordered topic (spec.order: true) is FIFO, not {declared.value}: "
                                   "set messageType FIFO or leave it unset")
    return declared


def parse_group(raw: Any, object_name: str) -> ParsedEntity:
    r = Reader()
    top = r.mapping(raw, "spec")
    ref = _cluster_ref(r, top)
    orderly = top.get("consumeMessageOrderly")
    config = brokeradmin.GroupConfig(
        name=_entity_name(r, top.get("groupName"), "spec.groupName", object_name, MAX_GROUP_NAME),
        consume_enable=r.boolean(top.get("consumeEnable"), "spec.consumeEnable", True),
        consume_broadcast_enable=r.boolean(top.get("consumeBroadcastEnable"), "spec.consumeBroadcastEnable", False),
        retry_max_times=r.integer(top.get("retryMaxTimes"), "spec.retryMaxTimes", 16, 0, MAX_RETRY_TIMES),
        retry_queue_nums=r.integer(top.get("retryQueueNums"), "spec.retryQueueNums", 1, 1, MAX_RETRY_QUEUES),
        consume_message_orderly=r.boolean(orderly, "spec.consumeMessageOrderly", False),
    )
    errors = tuple(r.errors)
    return ParsedEntity(None if errors else GroupSpec(ref, config, orderly is not None), errors)


def parse(kind: str, raw: Any, object_name: str) -> ParsedEntity:
    if kind == TOPIC_KIND:
        return parse_topic(raw, object_name)
    if kind == GROUP_KIND:
        return parse_group(raw, object_name)
    raise ValueError(f"not an entity kind: {kind!r}")

"""HEART_BEAT's body, RocketMQ's ``HeartbeatData``, read as a Java broker reads it.

Every client sends it every 30 s::

    {"clientID": "10.0.0.5@12345",
     "producerDataSet": [{"groupName": "pg"}],
     "consumerDataSet": [{"groupName": "cg", "consumeType": "CONSUME_PASSIVELY",
                          "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                          "unitMode": false, "subscriptionDataSet": [SubscriptionData, ...]}]}

The official clients do not all write it alike, and a Java broker (fastjson) reads every form:
the C++ client writes the three enums as ordinals and ``subVersion`` as a string, the Go client
writes ``codeSet`` entries as strings. This module reads all of them into one value (enums as
their Java constant names, whatever the form), with the lenient readers of
``rocketq.protocol.sharedbodies``. The ordinals are the Java declaration order, kept here because
``CONSUME_FROM_LAST_OFFSET`` = 0 means nothing without it.

A body that cannot be read raises ``HeartbeatError`` carrying what was learnt before the fault
(the client id, the group), so the broker can say in its log whose heartbeat it refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from rocketq.protocol import sharedbodies, subscription
from rocketq.protocol.subscription import SubscriptionData, SubscriptionError

CONSUME_TYPES: Final = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP")
"""``ConsumeType`` in declaration order (CONSUME_POP is RocketMQ 5's)."""
MESSAGE_MODELS: Final = ("BROADCASTING", "CLUSTERING")
CONSUME_FROM_WHERE: Final = (
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",  # deprecated, still declared
    "CONSUME_FROM_MIN_OFFSET",  # deprecated
    "CONSUME_FROM_MAX_OFFSET",  # deprecated
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
)
"""``ConsumeFromWhere`` in declaration order, deprecated constants included (they keep their ordinals)."""
DEFAULT_CONSUME_TYPE: Final = "CONSUME_PASSIVELY"
DEFAULT_MESSAGE_MODEL: Final = "CLUSTERING"
DEFAULT_CONSUME_FROM_WHERE: Final = "CONSUME_FROM_LAST_OFFSET"


class HeartbeatError(ValueError):
    """The body is not a HeartbeatData; ``client_id``/``group`` say whose, as far as known."""

    def __init__(self, reason: str, client_id: str | None = None, group: str | None = None) -> None:
        super().__init__(reason)
        self.client_id = client_id
        self.group = group


@dataclass(frozen=True, slots=True)
class ConsumerData:
    group_name: str
    consume_type: str = DEFAULT_CONSUME_TYPE
    message_model: str = DEFAULT_MESSAGE_MODEL
    consume_from_where: str = DEFAULT_CONSUME_FROM_WHERE
    subscriptions: tuple[SubscriptionData, ...] = ()
    unit_mode: bool = False


@dataclass(frozen=True, slots=True)
class HeartbeatData:
    client_id: str
    consumers: tuple[ConsumerData, ...] = ()
    producer_groups: tuple[str, ...] = ()


def decode(body: bytes) -> HeartbeatData:
    """Parse HEART_BEAT's body, or raise HeartbeatError."""
    try:
        raw = sharedbodies.obj(sharedbodies.load_json(body, "heartbeat body"), "heartbeat body")
    except sharedbodies.BodyError as exc:
        raise HeartbeatError(str(exc)) from None
    client_id = raw.get("clientID")
    known_id = client_id if isinstance(client_id, str) and client_id else None
    try:
        client_id = sharedbodies.text(raw, "clientID", "heartbeat")
        if not client_id:
            raise sharedbodies.BodyError("heartbeat.clientID is empty")
        consumers = tuple(_consumer(item, f"consumerDataSet[{i}]", known_id)
                          for i, item in enumerate(_items(raw, "consumerDataSet")))
        # an empty producer group is accepted, as Java does: refusing it would refuse the
        # heartbeat of the same client's consumers too
        producers = tuple(
            sharedbodies.text(sharedbodies.obj(item, f"producerDataSet[{i}]"), "groupName", f"producerDataSet[{i}]")
            for i, item in enumerate(_items(raw, "producerDataSet")))
    except sharedbodies.BodyError as exc:
        raise HeartbeatError(str(exc), known_id) from None
    return HeartbeatData(client_id, consumers, producers)


def _items(raw: dict[Any, Any], key: str, where: str = "heartbeat") -> list[Any]:
    """A Java ``Set`` field: a JSON array, or null/absent for an empty one."""
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise sharedbodies.BodyError(f"{where}.{key} must be a list")
    return value


def _group(raw: dict[Any, Any], where: str) -> str:
    group = sharedbodies.text(raw, "groupName", where)
    if not group:
        raise sharedbodies.BodyError(f"{where}.groupName is empty")
    return group


def _consumer(item: Any, where: str, client_id: str | None) -> ConsumerData:
    raw = sharedbodies.obj(item, where)
    group = _group(raw, where)
    try:
        subs = tuple(subscription.SubscriptionData.from_json(s, f"{where}.subscriptionDataSet[{i}]")
                     for i, s in enumerate(_items(raw, "subscriptionDataSet", where)))
        return ConsumerData(
            group,
            sharedbodies.enum(raw, "consumeType", where, CONSUME_TYPES, DEFAULT_CONSUME_TYPE),
            sharedbodies.enum(raw, "messageModel", where, MESSAGE_MODELS, DEFAULT_MESSAGE_MODEL),
            sharedbodies.enum(raw, "consumeFromWhere", where, CONSUME_FROM_WHERE, DEFAULT_CONSUME_FROM_WHERE),
            subs,
            sharedbodies.flag(raw, "unitMode", where, False),
        )
    except (sharedbodies.BodyError, SubscriptionError) as exc:
        raise HeartbeatError(str(exc), client_id, group) from None

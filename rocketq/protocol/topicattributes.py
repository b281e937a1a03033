"""Topic attributes (RocketMQ 5): named settings of a topic, ``message.type`` the one that matters.

A RocketMQ 5 topic carries a map of attributes beside its queue counts and permission, stored in
topics.json as ``"attributes": {"message.type": "FIFO"}``. Admin tools change them with a
*modification* string in UPDATE_AND_CREATE_TOPIC's ``attributes`` header (``mqadmin updateTopic
-a``): ``+key=value`` adds or changes a key, ``-key`` removes one, items separated by commas
(``+message.type=FIFO,-queue.type``). Applying one (``alter``) follows RocketMQ's rules: a new
topic takes only ``+`` items; a key must be known (``ATTRIBUTES``), its value one of the allowed
ones, a key not marked changeable can only be set when the topic is created, a ``-`` needs the
key to be present, and a key may appear once.

``message.type`` says what a topic is for: NORMAL (the default when absent), FIFO, DELAY,
TRANSACTION, or MIXED (any of them). RocketMQ 5's proxy tells v2 clients which types a queue
accepts (``accept_message_types``) and refuses a send whose type is not the topic's; a message's
type is read from its properties (``of_properties``). Brokers do not check it: remoting sends
straight to a broker are taken whatever the topic's type, as Apache RocketMQ's broker does.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rocketq.protocol import messageproperties as mp

MESSAGE_TYPE: Final = "message.type"
QUEUE_TYPE: Final = "queue.type"
ADD: Final = "+"
DELETE: Final = "-"
ITEM_SEPARATOR: Final = ","
KEY_VALUE_SEPARATOR: Final = "="
MAX_MODIFICATION_CHARS: Final = 4096
"""Longest modification string taken (a header value; RocketMQ's keys and values are short)."""

DELAY_PROPERTIES: Final = (mp.DELAY, "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")
"""Any of these makes a message DELAY (a delay level, or RocketMQ 5's timer properties)."""


class TopicAttributeError(ValueError):
    """A modification string or a change that RocketMQ would refuse; the text says why."""


class MessageType(enum.Enum):
    """RocketMQ's ``TopicMessageType`` (values as stored in ``message.type``)."""

    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    MIXED = "MIXED"


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    changeable: bool
    """False: can only be set when the topic is created."""
    allowed: frozenset[str]
    default: str


ATTRIBUTES: Final = {
    a.name: a for a in (
        Attribute(MESSAGE_TYPE, True, frozenset(t.value for t in MessageType), MessageType.NORMAL.value),
        Attribute(QUEUE_TYPE, False, frozenset({"BatchCQ", "SimpleCQ"}), "SimpleCQ"),
    )
}
"""The topic attributes RocketMQ 5 knows (``TopicAttributes.ALL``); any other key is refused."""


def parse_modification(text: str | None) -> dict[str, str]:
    """``"+a=1,-b"`` as ``{"+a": "1", "-b": ""}``; TopicAttributeError for a malformed item."""
    if not text:
        return {}
    if len(text) > MAX_MODIFICATION_CHARS:
        raise TopicAttributeError(f"attributes longer than {MAX_MODIFICATION_CHARS} characters")
    out: dict[str, str] = {}
    for item in text.split(ITEM_SEPARATOR):
        if KEY_VALUE_SEPARATOR in item:
            key, value = item.split(KEY_VALUE_SEPARATOR, 1)
            if not key.startswith(ADD):
                raise TopicAttributeError(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = item, ""
            if not key.startswith(DELETE):
                raise TopicAttributeError(f"delete attribute format is wrong: {key}")
        if key in out:
            raise TopicAttributeError(f"key duplication: {key}")
        out[key] = value
    return out


def modification(changes: Mapping[str, str]) -> str:
    """The header text of ``{"+a": "1", "-b": ""}`` (``parse_modification``'s inverse)."""
    return ITEM_SEPARATOR.join(k if k.startswith(DELETE) else f"{k}{KEY_VALUE_SEPARATOR}{v}"
                               for k, v in changes.items())


def alter(current: Mapping[str, str], changes: Mapping[str, str], *, create: bool) -> dict[str, str]:
    """The attributes after applying parsed ``changes`` to ``current`` (module docstring's rules)."""
    out = dict(current)
    seen: set[str] = set()
    for key, value in changes.items():
        name = key[1:]
        if not name or ADD in name or DELETE in name:
            raise TopicAttributeError("kv string format wrong.")
        if name in seen:
            raise TopicAttributeError(f"alter duplication key. key: {name}")
        seen.add(name)
        attribute = ATTRIBUTES.get(name)
        if key.startswith(ADD):
            _check_set(attribute, name, value, create=create)
            out[name] = value
        elif create:
            raise TopicAttributeError(f"only add attribute is supported while creating topic. key: {name}")
        elif key.startswith(DELETE):
            if name not in current:
                raise TopicAttributeError(f"attempt to delete a nonexistent key: {name}")
            if attribute is None:
                raise TopicAttributeError(f"unsupported key: {name}")
            if not attribute.changeable:
                raise TopicAttributeError(f"attempt to update an unchangeable attribute. key: {name}")
            del out[name]
        else:
            raise TopicAttributeError(f"wrong format key: {name}")
    return out


def _check_set(attribute: Attribute | None, name: str, value: str, *, create: bool) -> None:
    if attribute is None:
        raise TopicAttributeError(f"unsupported key: {name}")
    if not create and not attribute.changeable:
        raise TopicAttributeError(f"attempt to update an unchangeable attribute. key: {name}")
    if value not in attribute.allowed:
        raise TopicAttributeError(f"value is not in set: {sorted(attribute.allowed)}")


def message_type(attributes: Mapping[str, str]) -> MessageType:
    """A topic's type: its ``message.type``, NORMAL when absent (UNSPECIFIED if unreadable)."""
    value = attributes.get(MESSAGE_TYPE)
    if value is None:
        return MessageType.NORMAL
    try:
        return MessageType(value)
    except ValueError:
        return MessageType.UNSPECIFIED


def of_properties(properties: Mapping[str, str]) -> MessageType:
    """A message's type from its properties, in RocketMQ's order (the first that applies wins)."""
    if properties.get(mp.TRAN_MSG, "").lower() == "true":
        return MessageType.TRANSACTION
    if any(p in properties for p in DELAY_PROPERTIES):
        return MessageType.DELAY
    if mp.SHARDING_KEY in properties:
        return MessageType.FIFO
    return MessageType.NORMAL

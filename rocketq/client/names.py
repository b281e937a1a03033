"""Topic and group names: what RocketMQ accepts, checked before anything goes on the wire.

RocketMQ's ``Validators``: a name is non-empty, made of letters, digits, ``_``, ``-``, ``%`` and
``|``, at most 127 characters for a topic and 255 for a group. Producers may not send to the
auto-create key topic (TBW102) or the scheduling topic; retry topics (``%RETRY%group``) are
valid names because the broker uses them to redeliver.
"""

from __future__ import annotations

import re
from typing import Final

from rocketq.client.errors import ClientStateError, MessageError
from rocketq.protocol.codes import AUTO_CREATE_TOPIC_KEY, SCHEDULE_TOPIC

TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255
_VALID: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")
FORBIDDEN_SEND_TOPICS: Final = frozenset({AUTO_CREATE_TOPIC_KEY, SCHEDULE_TOPIC})


def check_topic(topic: object) -> str:
    """Return the topic, or raise MessageError saying what is wrong with it."""
    if not isinstance(topic, str) or not topic.strip():
        raise MessageError("the specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MessageError(f"the specified topic is longer than topic max length {TOPIC_MAX_LENGTH}")
    if not _VALID.match(topic):
        raise MessageError(
            f"the specified topic [{topic}] contains illegal characters, allowing only {_VALID.pattern}")
    return topic


def check_send_topic(topic: object) -> str:
    name = check_topic(topic)
    if name in FORBIDDEN_SEND_TOPICS:
        raise MessageError(f"sending message to topic [{name}] is forbidden")
    return name


def check_group(group: object) -> str:
    """Return the group, or raise ClientStateError (a group is configuration, not a message)."""
    if not isinstance(group, str) or not group.strip():
        raise ClientStateError("the specified group is blank")
    if len(group) > GROUP_MAX_LENGTH:
        raise ClientStateError(f"the specified group is longer than group max length {GROUP_MAX_LENGTH}")
    if not _VALID.match(group):
        raise ClientStateError(
            f"the specified group [{group}] contains illegal characters, allowing only {_VALID.pattern}")
    return group

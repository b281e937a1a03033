"""Topic and group names as the SDK checks them, before anything goes on the wire.

The rules and their messages are RocketMQ's (``rocketq.protocol.namerules``); what is the SDK's own
is how it fails: a bad topic is a ``MessageError`` (the message cannot be sent), a bad group a
``ClientStateError`` (a group is configuration, not a message). Producers may also not send to
the auto-create key topic (TBW102) or the scheduling topic; retry topics (``%RETRY%group``) are
valid names because the broker uses them to redeliver.
"""

from __future__ import annotations

from typing import Final

from rocketq.client.errors import ClientStateError, MessageError
from rocketq.protocol import namerules
from rocketq.protocol.codes import AUTO_CREATE_TOPIC_KEY, SCHEDULE_TOPIC

FORBIDDEN_SEND_TOPICS: Final = frozenset({AUTO_CREATE_TOPIC_KEY, SCHEDULE_TOPIC})


def check_topic(topic: object) -> str:
    """Return the topic, or raise MessageError saying what is wrong with it."""
    return namerules.check_topic(topic, MessageError)


def check_send_topic(topic: object) -> str:
    name = check_topic(topic)
    if name in FORBIDDEN_SEND_TOPICS:
        raise MessageError(f"sending message to topic [{name}] is forbidden")
    return name


def check_group(group: object) -> str:
    """Return the group, or raise ClientStateError."""
    return namerules.check_group(group, ClientStateError)

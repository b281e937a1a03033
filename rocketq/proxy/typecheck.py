"""Topic message types at the v2 edge: what a route says a queue accepts, and which sends conflict.

A topic's ``message.type`` attribute (``rocketq.protocol.topicattributes``) becomes the
``accept_message_types`` of its queues in QueryRoute (MIXED: NORMAL, FIFO, DELAY and
TRANSACTION). Producers are told ``validate_message_type`` (``enableTopicMessageTypeCheck``) and
then check their own sends against it; the proxy checks again on SendMessage, as RocketMQ's
``DefaultTopicMessageTypeValidator`` does: a message's type (read from its properties) must be
the topic's, unless the topic is MIXED; a topic whose type is unknown (UNSPECIFIED: its config
could not be read) takes nothing. Retry and DLQ topics are not checked. A conflict is
MESSAGE_PROPERTY_CONFLICT_WITH_TYPE.
"""

from __future__ import annotations

from typing import Final

from rocketq.protocol import codes
from rocketq.protocol.topicattributes import MessageType
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb

ACCEPTED: Final[dict[MessageType, tuple[pb.MessageType, ...]]] = {
    MessageType.NORMAL: (pb.NORMAL,),
    MessageType.FIFO: (pb.FIFO,),
    MessageType.DELAY: (pb.DELAY,),
    MessageType.TRANSACTION: (pb.TRANSACTION,),
    MessageType.MIXED: (pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION),
}
"""``accept_message_types`` by topic type (UNSPECIFIED: MESSAGE_TYPE_UNSPECIFIED only)."""


def accepted(topic_type: MessageType) -> tuple[pb.MessageType, ...]:
    return ACCEPTED.get(topic_type, (pb.MESSAGE_TYPE_UNSPECIFIED,))


def is_checked(topic: str) -> bool:
    """Retry and DLQ topics take whatever is sent back to them."""
    return not topic.startswith((codes.RETRY_GROUP_TOPIC_PREFIX, codes.DLQ_GROUP_TOPIC_PREFIX))


def conflicts(topic_type: MessageType, message_type: MessageType) -> bool:
    if message_type is MessageType.UNSPECIFIED:
        return True
    return message_type is not topic_type and topic_type is not MessageType.MIXED


def check(topic: str, topic_type: MessageType, message_type: MessageType) -> None:
    """ProxyError MESSAGE_PROPERTY_CONFLICT_WITH_TYPE when a message of ``message_type`` may not go to ``topic``."""
    if is_checked(topic) and conflicts(topic_type, message_type):
        raise ProxyError(Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                         f"a {message_type.value} message cannot be sent to topic {topic} "
                         f"of message.type {topic_type.value}")

"""The proxy's message type check (RocketMQ's DefaultTopicMessageTypeValidator) and route accept lists."""

from __future__ import annotations

import pytest

from rocketq.protocol.topicattributes import MessageType
from rocketq.proxy import typecheck
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb

SENDABLE = (MessageType.NORMAL, MessageType.FIFO, MessageType.DELAY, MessageType.TRANSACTION)


@pytest.mark.parametrize("topic_type", [*SENDABLE, MessageType.MIXED, MessageType.UNSPECIFIED])
@pytest.mark.parametrize("message_type", SENDABLE)
def test_a_message_goes_only_to_a_topic_of_its_type_or_a_mixed_one(topic_type: MessageType,
                                                                    message_type: MessageType) -> None:
    allowed = topic_type is message_type or topic_type is MessageType.MIXED
    if allowed:
        typecheck.check("T", topic_type, message_type)
    else:
        with pytest.raises(ProxyError) as refused:
            typecheck.check("T", topic_type, message_type)
        assert refused.value.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
        assert message_type.value in refused.value.message


def test_retry_and_dlq_topics_are_not_checked_and_unspecified_messages_always_conflict() -> None:
    typecheck.check("%RETRY%g", MessageType.FIFO, MessageType.NORMAL)
    typecheck.check("%DLQ%g", MessageType.NORMAL, MessageType.DELAY)
    assert typecheck.conflicts(MessageType.MIXED, MessageType.UNSPECIFIED)


def test_routes_accept_the_topics_type_and_mixed_accepts_all_four() -> None:
    assert typecheck.accepted(MessageType.FIFO) == (pb.FIFO,)
    assert typecheck.accepted(MessageType.NORMAL) == (pb.NORMAL,)
    assert set(typecheck.accepted(MessageType.MIXED)) == {pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION}
    assert typecheck.accepted(MessageType.UNSPECIFIED) == (pb.MESSAGE_TYPE_UNSPECIFIED,)

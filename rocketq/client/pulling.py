"""Pulls: building PULL_MESSAGE requests and turning answers into ``PullResult`` values.

A pull asks one queue for up to ``max_nums`` messages from an offset. Its ``sysFlag`` says
what else the request carries (``PullSysFlag``): COMMIT_OFFSET (the consumer's current offset,
which a master stores as the group's offset), SUSPEND (the broker may hold the request up to
``suspendTimeoutMillis`` until a message arrives: long polling) and SUBSCRIPTION (the tag
expression is in the request, so the broker filters without a heartbeat).

The four answers become a ``PullStatus``: SUCCESS -> FOUND, PULL_NOT_FOUND -> NO_NEW_MSG,
PULL_RETRY_IMMEDIATELY -> NO_MATCHED_MSG, PULL_OFFSET_MOVED -> OFFSET_ILLEGAL, each with the
offset to pull next. The body is the stored records, decoded with the protocol codec. Since
the broker filters by tag *hash code*, a different tag with the same hash can arrive; messages
whose tag is not in the subscription are dropped here, and ``next_begin_offset`` still moves
past them. A body that does not decode is a ``ProtocolError``, never a silent skip.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from rocketq.client.errors import ProtocolError
from rocketq.client.queues import MessageQueue
from rocketq.client.wire import PullReply
from rocketq.protocol import message
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import MessageExt
from rocketq.protocol.subscription import SubscriptionData

FLAG_COMMIT_OFFSET: Final = 0x1
FLAG_SUSPEND: Final = 0x2
FLAG_SUBSCRIPTION: Final = 0x4
FLAG_CLASS_FILTER: Final = 0x8


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS_BY_CODE: Final = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(frozen=True, slots=True)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = 0


def sys_flag(*, commit_offset: bool, suspend: bool, subscription: bool) -> int:
    return ((FLAG_COMMIT_OFFSET if commit_offset else 0) | (FLAG_SUSPEND if suspend else 0)
            | (FLAG_SUBSCRIPTION if subscription else 0))


def request_header(
    group: str, mq: MessageQueue, offset: int, max_nums: int, sub: SubscriptionData, *,
    flag: int, commit_offset: int = 0, suspend_timeout_ms: int = 0,
) -> PullMessageRequestHeader:
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_timeout_ms,
        subscription=sub.sub_string,
        sub_version=sub.sub_version,
        expression_type=sub.expression_type,
    )


def decode_messages(body: bytes) -> list[MessageExt]:
    """Every record of a pull body; ProtocolError if any part of it is not a record."""
    try:
        records = list(message.iter_stored_records(body, strict=True))
    except message.MessageFormatError as exc:
        raise ProtocolError(f"pull body does not decode: {exc}") from None
    # TOTALSIZE sums to the body length, or more for MetaQ-era compressed records (see codec).
    consumed = sum(r.store_size for r in records)
    if consumed < len(body):
        raise ProtocolError(f"pull body has {len(body) - consumed} trailing bytes that are not a record")
    return records


def to_result(reply: PullReply, sub: SubscriptionData) -> PullResult:
    header = reply.header
    status = _STATUS_BY_CODE[reply.code]
    messages: list[MessageExt] = []
    if status is PullStatus.FOUND:
        messages = decode_messages(reply.body)
        if not sub.matches_all:
            messages = [m for m in messages if sub.matches_tag(m.tags)]
        min_text, max_text = str(header.min_offset), str(header.max_offset)
        for m in messages:
            # RocketMQ stamps the queue's bounds on each message for lag-aware listeners.
            m.properties[message.MIN_OFFSET] = min_text
            m.properties[message.MAX_OFFSET] = max_text
    return PullResult(status, header.next_begin_offset, header.min_offset, header.max_offset, messages,
                      header.suggest_which_broker_id)

"""Headers of RocketMQ 5's POP consumption requests (POP_MESSAGE, ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME), with RocketMQ's wire names.

POP replaces queue assignment: a consumer asks the broker for up to ``maxMsgNums`` messages of a
topic (``queueId`` -1: any queue) and the broker hands them out *invisible* for
``invisibleTime`` ms. The reply header tells the consumer where each message came from
(``startOffsetInfo``, ``msgOffsetInfo``, ``orderCountInfo``: see ``rocketq.protocol.popinfo``),
from which it builds each message's *extraInfo* (RocketMQ's ``POP_CK``), the token that later
ACKs or re-hides the message. Parsing is as lenient as every other header
(``rocketq.protocol.headers``): Java booleans and ints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rocketq.protocol.headers import Header, wire

INIT_MODE_MIN: Final = 0
"""A group with no offset yet starts at the queue's first message (ConsumeInitMode.MIN)."""
INIT_MODE_MAX: Final = 1
"""... or at its end, unless the queue was never trimmed (ConsumeInitMode.MAX)."""
ALL_QUEUES: Final = -1
"""``queueId`` of a pop that may take messages from any readable queue of the topic."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PopMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    max_msg_nums: int = wire("maxMsgNums")
    invisible_time: int = wire("invisibleTime")
    """ms the popped messages stay invisible to other pops unless acked first."""
    poll_time: int = wire("pollTime")
    """ms the broker may hold the request when nothing is there (0: answer at once)."""
    born_time: int = wire("bornTime")
    """The client's clock when it sent the request (ms); a stale request is refused."""
    init_mode: int = wire("initMode")
    exp_type: str | None = wire("expType", None)
    exp: str | None = wire("exp", None)
    order: bool = wire("order", False)
    attempt_id: str | None = wire("attemptId", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class PopMessageResponseHeader(Header):
    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid")
    rest_num: int = wire("restNum")
    start_offset_info: str | None = wire("startOffsetInfo", None)
    msg_offset_info: str | None = wire("msgOffsetInfo", None)
    order_count_info: str | None = wire("orderCountInfo", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class AckMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    """The topic the message was popped from: the retry topic for a redelivered one."""
    queue_id: int = wire("queueId")
    extra_info: str = wire("extraInfo")
    offset: int = wire("offset")
    """The message's queue offset."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeInvisibleTimeRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    extra_info: str = wire("extraInfo")
    offset: int = wire("offset")
    invisible_time: int = wire("invisibleTime")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeInvisibleTimeResponseHeader(Header):
    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid")

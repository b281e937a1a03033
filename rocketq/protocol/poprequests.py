"""POP request builders and the decoder of a POP answer, shared by the SDK and the gRPC proxy.

The counterpart of ``rocketq.protocol.requests`` for RocketMQ 5's POP: pure functions, no
sockets or clocks. ``decode_pop_answer`` does what RocketMQ's ``MQClientAPIImpl.processPopResponse``
does: it gives each message its extraInfo (``POP_CK``, built from the answer header unless the
broker already stamped it on a renamed retry message), puts it back under the topic the
consumer asked for, reads an orderly pop's pop counts into ``reconsume_times``, and remembers
the topic the message really lives in (where ACKs go). ``PoppedMessage.receipt_handle`` is the
gRPC proxy's receipt handle: the extraInfo plus the CommitLog offset.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Final

from rocketq.protocol import popinfo, requests
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import MessageExt
from rocketq.protocol.popheaders import PopMessageResponseHeader
from rocketq.protocol.popinfo import ExtraInfo, PopInfoError

POP_CK: Final = "POP_CK"
FIRST_POP_TIME: Final = "1ST_POP_TIME"


class PopStatus(enum.Enum):
    """RocketMQ's ``PopStatus``."""

    FOUND = "FOUND"
    POLLING_FULL = "POLLING_FULL"
    POLLING_NOT_FOUND = "POLLING_NOT_FOUND"


POP_STATUS_BY_CODE: Final[dict[int, PopStatus]] = {
    ResponseCode.SUCCESS: PopStatus.FOUND,
    ResponseCode.POLLING_FULL: PopStatus.POLLING_FULL,
    ResponseCode.POLLING_TIMEOUT: PopStatus.POLLING_NOT_FOUND,
    ResponseCode.PULL_NOT_FOUND: PopStatus.POLLING_NOT_FOUND,
}


@dataclass(frozen=True, slots=True)
class PoppedMessage:
    message: MessageExt
    """Under the topic asked for, with ``POP_CK`` among its properties."""
    extra_info: ExtraInfo
    real_topic: str
    """The topic the message lives in: ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME name it."""

    @property
    def receipt_handle(self) -> str:
        """The gRPC proxy's handle: extraInfo and the message's CommitLog offset."""
        return f"{self.extra_info.build()} {self.message.commit_log_offset}"


@dataclass(frozen=True, slots=True)
class PopResult:
    status: PopStatus
    messages: list[PoppedMessage]
    pop_time: int = 0
    invisible_time: int = 0
    revive_qid: int = 0
    rest_num: int = 0


def decode_pop_answer(header: PopMessageResponseHeader, body: bytes, *, topic: str, group: str,
                      broker_name: str, order: bool) -> list[PoppedMessage]:
    """The messages of a SUCCESS answer to POP_MESSAGE. MessageFormatError / PopInfoError if malformed."""
    starts = popinfo.parse_start_offset_info(header.start_offset_info)
    counts = popinfo.parse_order_count_info(header.order_count_info) if order else {}
    out = []
    for msg in requests.decode_records(body):
        stamped = msg.properties.get(POP_CK)
        if stamped:
            extra = ExtraInfo.parse(stamped)
        else:
            kind = popinfo.topic_type(msg.topic)
            start = starts.get((kind, msg.queue_id))
            if start is None:
                raise PopInfoError(f"no startOffsetInfo for queue {msg.queue_id} of {msg.topic}")
            extra = ExtraInfo(start, header.pop_time, header.invisible_time, header.revive_qid, kind, broker_name,
                              msg.queue_id, msg.queue_offset)
        props = dict(msg.properties)
        props[POP_CK] = extra.build()
        props.setdefault(FIRST_POP_TIME, str(header.pop_time))
        reconsume = msg.reconsume_times
        if order:
            found = counts.get((extra.topic_type, msg.queue_id, msg.queue_offset))
            if found is None:
                found = counts.get((extra.topic_type, msg.queue_id, None))
            reconsume = found if found is not None else reconsume
        renamed = dataclasses.replace(msg, topic=topic, properties=props, reconsume_times=reconsume)
        out.append(PoppedMessage(renamed, extra, popinfo.real_topic(extra.topic_type, topic, group)))
    return out

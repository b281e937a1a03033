"""Request builders and answer decoders that the client SDK and the admin client share.

Both sides speak to brokers with the same frames: a request is a code, a typed header turned
into extFields, and a body; the answers to SEND_MESSAGE and PULL_MESSAGE become the same
``SendResult`` and ``PullResult`` values, named as RocketMQ's ``SendStatus`` and
``PullStatus``. Everything here is pure (no sockets, no clocks): each side keeps its own
transport, retry policy and error types, and wraps the ``MessageFormatError`` raised here
(and the ``HeaderError`` of ``Header.from_ext``) in them.

Send answers: SUCCESS and the three durability caveats (FLUSH_DISK_TIMEOUT,
FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) mean "stored"; any other code is an error.
Pull answers: SUCCESS -> FOUND, PULL_NOT_FOUND -> NO_NEW_MSG, PULL_RETRY_IMMEDIATELY ->
NO_MATCHED_MSG, PULL_OFFSET_MOVED -> OFFSET_ILLEGAL, each with the offset to pull next.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketq.protocol import messageerrors, storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import Header, PullMessageRequestHeader
from rocketq.protocol.messagetypes import MessageExt
from rocketq.protocol.queues import MessageQueue


class SendStatus(enum.Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


SEND_STATUS_BY_CODE: Final = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
SEND_OK_CODES: Final = frozenset(SEND_STATUS_BY_CODE)
"""Send answers that mean "stored" (possibly with a durability caveat), not an error."""


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


PULL_STATUS_BY_CODE: Final = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}
PULL_CODES: Final = frozenset(PULL_STATUS_BY_CODE)
"""Pull answers that carry a PullMessageResponseHeader."""


@dataclass(frozen=True, slots=True)
class SendResult:
    status: SendStatus
    msg_id: str
    """The UNIQ_KEY (comma-joined for a batch): what consumers see as ``msg_id``."""
    offset_msg_id: str
    """The broker's id (store host + CommitLog offset; comma-joined for a batch); ``queryMsgById`` takes it."""
    message_queue: MessageQueue
    queue_offset: int
    """The (first) message's logical offset in its queue."""
    region_id: str | None = None


@dataclass(frozen=True, slots=True)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = 0


def command(code: RequestCode, header: Header | Mapping[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    """A request frame: the typed header (or ready extFields) as extFields, and the body."""
    if header is None:
        ext: dict[str, str] = {}
    elif isinstance(header, Header):
        ext = header.to_ext()
    else:
        ext = dict(header)
    return RemotingCommand(code=int(code), ext_fields=ext, body=body)


def pull_header(
    group: str, queue: MessageQueue, offset: int, max_nums: int, *, sys_flag: int, subscription: str,
    sub_version: int = 0, expression_type: str = "TAG", commit_offset: int = 0, suspend_timeout_ms: int = 0,
) -> PullMessageRequestHeader:
    """PULL_MESSAGE's header for up to ``max_nums`` messages of one queue from ``offset``."""
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=queue.topic,
        queue_id=queue.queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_timeout_ms,
        subscription=subscription,
        sub_version=sub_version,
        expression_type=expression_type,
    )


def decode_records(body: bytes) -> list[MessageExt]:
    """Every stored record of an answer body (pull, query, view); MessageFormatError if any part is not one."""
    records = list(storedrecords.iter_stored_records(body, strict=True))
    # TOTALSIZE sums to the body length, or more for MetaQ-era compressed records (see codec).
    consumed = sum(r.store_size for r in records)
    if consumed < len(body):
        raise messageerrors.MessageFormatError(f"{len(body) - consumed} trailing bytes that are not a record")
    return records

"""The values that cross the store's API: put requests and results, pull and query results.

Frozen dataclasses and enums only; ``MessageStore`` produces and consumes them and the broker
maps the statuses to response codes. Status names are RocketMQ's (``PutMessageStatus``,
``GetMessageStatus``). Nothing here touches files.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rocketq.protocol import nativecodecs


class PutStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    DISK_FULL = "DISK_FULL"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    """Kept for RocketMQ parity; like RocketMQ, an unknown queue answers NO_MESSAGE_IN_QUEUE."""
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(frozen=True, slots=True)
class PutRequest:
    """What the broker knows about one message it wants stored."""

    topic: str
    queue_id: int
    body: bytes
    flag: int = 0
    properties: Mapping[str, str] | str = ""
    """A dict, or the already-encoded ``k\\x01v\\x02`` string from the request header."""
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    tags_code: int | None = None
    """ConsumeQueue tag code; None lets the store hash TAGS (``message.tag_hash``)."""
    index_keys: tuple[str | None, str | None] | None = None
    """(UNIQ_KEY, KEYS) as the caller already read them from the properties; None lets the
    store look them up. Like ``tags_code``, a hint that must agree with ``properties``."""


BatchMessage = tuple[bytes, int, str, int, str | None, str | None]
"""One message of a ``BatchPutRequest``: (body, flag, encoded properties, tag code, UNIQ_KEY, KEYS)."""


@dataclass(frozen=True, slots=True)
class BatchPutRequest:
    """The messages of one SEND_BATCH_MESSAGE: what they share, once, then each message.

    Stored exactly like ``put_batch`` of the equivalent ``PutRequest``s (tag code and keys
    are the same kind of hint as theirs), without one object per message and with the shared
    parts of the records encoded once.
    """

    topic: str
    queue_id: int
    sys_flag: int
    born_timestamp: int
    born_host: tuple[str, int]
    reconsume_times: int
    messages: Sequence[BatchMessage]

    def __len__(self) -> int:
        return len(self.messages)


@dataclass(frozen=True, slots=True)
class PutResult:
    """Outcome of a put: a status and, once appended, where each message went."""

    status: PutStatus
    store_timestamp: int = 0
    wrote_offsets: tuple[int, ...] = ()
    wrote_sizes: tuple[int, ...] = ()
    queue_offsets: tuple[int, ...] = ()
    offset_msg_ids: tuple[str, ...] = ()
    error: str = ""
    """Why a put was refused, for the response remark."""
    replication_index: int = 0
    """DLedger: the Raft entry index of this put (``committed.AppendHook``); 0 otherwise."""

    @property
    def ok(self) -> bool:
        return self.status is PutStatus.PUT_OK

    @property
    def appended(self) -> bool:
        """The messages are in the CommitLog (also true for FLUSH_DISK_TIMEOUT)."""
        return bool(self.wrote_offsets)

    @property
    def wrote_offset(self) -> int:
        return self.wrote_offsets[0] if self.wrote_offsets else -1

    @property
    def wrote_bytes(self) -> int:
        return sum(self.wrote_sizes)

    @property
    def queue_offset(self) -> int:
        return self.queue_offsets[0] if self.queue_offsets else -1

    @property
    def offset_msg_id(self) -> str:
        """The first message's id; a batch answer joins ``offset_msg_ids`` with commas."""
        return self.offset_msg_ids[0] if self.offset_msg_ids else ""

    @property
    def message_count(self) -> int:
        return len(self.wrote_offsets)


@dataclass(frozen=True, slots=True)
class GetResult:
    """Outcome of a pull: raw stored records (slices of the CommitLog) and the next offset."""

    status: GetStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    buffers: list[memoryview] = field(default_factory=list)
    queue_offsets: list[int] = field(default_factory=list)
    tag_codes: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.buffers)


@dataclass(frozen=True, slots=True)
class QueryResult:
    buffers: list[memoryview]
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


_T = TypeVar("_T")


def _all_fields(cls: type[_T]) -> Callable[..., _T]:
    """``cls(*values)`` given every field in order, for the put path's per-message values: the
    native twin (native/headers.c) fills the slots directly, as the generated ``__init__`` of a
    frozen dataclass does with ``object.__setattr__``; any other call goes to ``cls`` itself."""

    def frozen_new(*values: Any) -> _T:
        return cls(*values)

    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    return nativecodecs.accelerated_with(cls, names)(frozen_new)


new_put_request: Callable[..., PutRequest] = _all_fields(PutRequest)
"""``PutRequest`` with all twelve fields given positionally."""
new_put_result: Callable[..., PutResult] = _all_fields(PutResult)
"""``PutResult`` with all eight fields given positionally."""
new_get_result: Callable[..., GetResult] = _all_fields(GetResult)
"""``GetResult`` with all nine fields given positionally (a frozen dataclass's ``__init__`` sets
each field by ``object.__setattr__``: most of a small read's Python)."""

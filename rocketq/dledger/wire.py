"""The peer protocol between members of one DLedger group: length-framed binary messages.

Each member listens on its own ``dLegerPeers`` address. A member opens one TCP connection to
each other member and sends requests on it; the other side answers every request, in order,
on the same connection. (It is rocketq's own protocol, not DLedger's Java remoting format;
docs/dledger.md has the table.)

Every frame, big-endian::

    u32 length      bytes that follow (1 .. MAX_FRAME_BYTES)
    u8  kind        VOTE 1, HEARTBEAT 2, PUSH 3, TIMEOUT_NOW 4, ANSWER 128
    u32 request_id  chosen by the requester, echoed by the answer

A request then carries ``u64 term, str group, str sender`` (str = u8 length + UTF-8), then:

- VOTE: ``u64 last_index, u64 last_term, u8 flags`` (1 = pre-vote, 2 = leadership transfer)
- HEARTBEAT: ``u64 commit_index``
- PUSH: ``u8 op, u64 index, u64 index_term, u64 commit_index, u32 count`` and ``count`` entries
  of ``u64 term, u32 size, size bytes``. ``op`` is COMPARE (does your entry ``index`` have term
  ``index_term``?), TRUNCATE (drop everything after ``index``, whose term is ``index_term``),
  APPEND (entries ``index+1 ..`` follow entry ``index`` of term ``index_term``) or COMMIT
  (only the commit index).
- TIMEOUT_NOW: nothing (the leader asks this follower to take over now).

An ANSWER is ``u8 status, u64 term, u64 last_index, u64 commit_index``: the answerer's term, and
where its log ends and how far it has committed, so a leader learns both on every exchange.

Decoding checks everything before it allocates: the length against ``MAX_FRAME_BYTES``, known
kinds/ops/statuses, ids and group names, entry sizes and counts against what is left of the
frame, terms that never go back, indexes in range and no trailing bytes. Any violation is a
:class:`WireError`; the connection that carried it is closed, the member carries on.
"""

from __future__ import annotations

import asyncio
import enum
import struct
from dataclasses import dataclass
from typing import Final

from rocketq.dledger import peers
from rocketq.dledger.contract import Entry

MAX_FRAME_BYTES: Final = 64 * 1024 * 1024
"""One frame's bytes after the length. A push carries at least one whole entry, and one entry
is one stored message or batch (RocketMQ caps those at maxMessageSize, 4 MiB by default)."""
MAX_INDEX: Final = (1 << 63) - 1
MAX_GROUP_BYTES: Final = 255
MAX_REQUEST_ID: Final = (1 << 32) - 1

LENGTH = struct.Struct(">I")
PREFIX = struct.Struct(">BI")
U8 = struct.Struct(">B")
U64 = struct.Struct(">Q")
VOTE_BODY = struct.Struct(">QQB")
PUSH_BODY = struct.Struct(">BQQQI")
ENTRY_HEAD = struct.Struct(">QI")
ANSWER_BODY = struct.Struct(">BQQQ")


class WireError(ValueError):
    """A frame no member of this group would send; its connection is closed."""


class Kind(enum.IntEnum):
    VOTE = 1
    HEARTBEAT = 2
    PUSH = 3
    TIMEOUT_NOW = 4
    ANSWER = 128


class PushOp(enum.IntEnum):
    COMPARE = 1
    TRUNCATE = 2
    APPEND = 3
    COMMIT = 4


class Status(enum.IntEnum):
    OK = 0
    EXPIRED_TERM = 1
    """The requester's term is behind the answerer's (the answer carries the newer term)."""
    ALREADY_VOTED = 2
    STALE_LOG = 3
    """The candidate's log is behind the voter's: it could lose committed entries."""
    HAS_LEADER = 4
    """The voter heard from a live leader within the election timeout and will not help depose it."""
    INCONSISTENT = 5
    """The follower's log does not hold the entry the push builds on."""
    NOT_READY = 6
    """Not now (e.g. a transfer to a member that is not a caught-up follower)."""


VOTE_PRE: Final = 1
VOTE_TRANSFER: Final = 2


@dataclass(frozen=True, slots=True)
class VoteRequest:
    term: int
    group: str
    sender: str
    last_index: int
    last_term: int
    pre_vote: bool = False
    transfer: bool = False


@dataclass(frozen=True, slots=True)
class Heartbeat:
    term: int
    group: str
    sender: str
    commit_index: int


@dataclass(frozen=True, slots=True)
class Push:
    term: int
    group: str
    sender: str
    op: PushOp
    index: int
    index_term: int
    commit_index: int
    entries: tuple[Entry, ...] = ()


@dataclass(frozen=True, slots=True)
class TimeoutNow:
    term: int
    group: str
    sender: str


@dataclass(frozen=True, slots=True)
class Answer:
    status: Status
    term: int
    last_index: int
    commit_index: int

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


Request = VoteRequest | Heartbeat | Push | TimeoutNow
Message = Request | Answer


# --- encoding ---------------------------------------------------------------------------------

def _text(value: str, limit: int) -> bytes:
    raw = value.encode()
    if not 0 < len(raw) <= limit:
        raise ValueError(f"{value!r}: 1..{limit} bytes expected")
    return U8.pack(len(raw)) + raw


def _request_head(kind: Kind, request_id: int, msg: Request) -> list[bytes]:
    return [PREFIX.pack(kind, request_id), U64.pack(msg.term), _text(msg.group, MAX_GROUP_BYTES),
            _text(msg.sender, peers.MAX_ID_LENGTH)]


def encode(request_id: int, msg: Message) -> bytes:
    """The whole frame, length included."""
    parts: list[bytes]
    if isinstance(msg, Answer):
        parts = [PREFIX.pack(Kind.ANSWER, request_id),
                 ANSWER_BODY.pack(msg.status, msg.term, msg.last_index, msg.commit_index)]
    elif isinstance(msg, VoteRequest):
        flags = (VOTE_PRE if msg.pre_vote else 0) | (VOTE_TRANSFER if msg.transfer else 0)
        parts = _request_head(Kind.VOTE, request_id, msg)
        parts.append(VOTE_BODY.pack(msg.last_index, msg.last_term, flags))
    elif isinstance(msg, Heartbeat):
        parts = _request_head(Kind.HEARTBEAT, request_id, msg)
        parts.append(U64.pack(msg.commit_index))
    elif isinstance(msg, Push):
        parts = _request_head(Kind.PUSH, request_id, msg)
        parts.append(PUSH_BODY.pack(msg.op, msg.index, msg.index_term, msg.commit_index, len(msg.entries)))
        for entry in msg.entries:
            parts.append(ENTRY_HEAD.pack(entry.term, len(entry.payload)))
            parts.append(entry.payload)
    else:
        parts = _request_head(Kind.TIMEOUT_NOW, request_id, msg)
    size = sum(len(p) for p in parts)
    if size > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    return LENGTH.pack(size) + b"".join(parts)


# --- decoding ---------------------------------------------------------------------------------

class _Reader:
    """Reads fixed fields from a frame body, refusing to run past its end."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: struct.Struct) -> tuple[int, ...]:
        end = self.pos + fmt.size
        if end > len(self.data):
            raise WireError(f"frame ends inside a field ({len(self.data)} bytes)")
        values = fmt.unpack_from(self.data, self.pos)
        self.pos = end
        return tuple(values)

    def raw(self, size: int) -> bytes:
        end = self.pos + size
        if end > len(self.data):
            raise WireError(f"a {size}-byte field runs past the frame's end")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def text(self, what: str) -> str:
        (size,) = self.take(U8)
        try:
            return self.raw(size).decode()
        except UnicodeDecodeError:
            raise WireError(f"{what} is not UTF-8") from None

    def index(self, what: str) -> int:
        (value,) = self.take(U64)
        if value > MAX_INDEX:
            raise WireError(f"{what} {value} out of range")
        return value

    def finish(self) -> None:
        if self.pos != len(self.data):
            raise WireError(f"{len(self.data) - self.pos} bytes after the message")


def check_length(length: int) -> None:
    if not PREFIX.size <= length <= MAX_FRAME_BYTES:
        raise WireError(f"frame length {length} outside {PREFIX.size}..{MAX_FRAME_BYTES}")


def decode(body: bytes) -> tuple[int, Message]:
    """A frame without its length prefix as (request_id, message); WireError if malformed."""
    check_length(len(body))
    reader = _Reader(body)
    kind_value, request_id = reader.take(PREFIX)
    try:
        kind = Kind(kind_value)
    except ValueError:
        raise WireError(f"unknown message kind {kind_value}") from None
    msg = _decode_answer(reader) if kind is Kind.ANSWER else _decode_request(kind, reader)
    reader.finish()
    return request_id, msg


def _decode_answer(reader: _Reader) -> Answer:
    status_value, term, last_index, commit_index = reader.take(ANSWER_BODY)
    try:
        status = Status(status_value)
    except ValueError:
        raise WireError(f"unknown answer status {status_value}") from None
    for what, value in (("term", term), ("last index", last_index), ("commit index", commit_index)):
        if value > MAX_INDEX:
            raise WireError(f"answer {what} {value} out of range")
    if commit_index > last_index:
        raise WireError(f"answer commit index {commit_index} beyond its last index {last_index}")
    return Answer(status, term, last_index, commit_index)


def _decode_request(kind: Kind, reader: _Reader) -> Request:
    term = reader.index("term")
    group = reader.text("group")
    if not group:
        raise WireError("empty group name")
    sender = reader.text("sender")
    try:
        peers.check_id(sender)
    except peers.PeersError as exc:
        raise WireError(f"sender: {exc}") from None
    if kind is Kind.VOTE:
        last_index, last_term, flags = reader.take(VOTE_BODY)
        if last_index > MAX_INDEX or last_term > term or flags & ~(VOTE_PRE | VOTE_TRANSFER):
            raise WireError(f"vote request {last_index}/{last_term}/{flags:#x} out of range for term {term}")
        return VoteRequest(term, group, sender, last_index, last_term,
                           pre_vote=bool(flags & VOTE_PRE), transfer=bool(flags & VOTE_TRANSFER))
    if kind is Kind.HEARTBEAT:
        return Heartbeat(term, group, sender, reader.index("commit index"))
    if kind is Kind.PUSH:
        return _decode_push(term, group, sender, reader)
    return TimeoutNow(term, group, sender)


def _decode_push(term: int, group: str, sender: str, reader: _Reader) -> Push:
    op_value, index, index_term, commit_index, count = reader.take(PUSH_BODY)
    try:
        op = PushOp(op_value)
    except ValueError:
        raise WireError(f"unknown push op {op_value}") from None
    if index > MAX_INDEX - count or commit_index > MAX_INDEX or index_term > term:
        raise WireError(f"push {op.name} index {index} term {index_term} out of range for term {term}")
    if count and op is not PushOp.APPEND:
        raise WireError(f"push {op.name} carries {count} entries")
    if count * ENTRY_HEAD.size > len(reader.data) - reader.pos:
        raise WireError(f"push claims {count} entries, more than the frame can hold")
    entries: list[Entry] = []
    previous_term = index_term
    for offset in range(count):
        entry_term, size = reader.take(ENTRY_HEAD)
        if not previous_term <= entry_term <= term:
            raise WireError(f"entry {index + 1 + offset} has term {entry_term} after {previous_term} "
                            f"(push term {term})")
        entries.append(Entry(index + 1 + offset, entry_term, reader.raw(size)))
        previous_term = entry_term
    return Push(term, group, sender, op, index, index_term, commit_index, tuple(entries))


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    """One frame's body from a stream (length checked before the body is read)."""
    (length,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
    check_length(length)
    return await reader.readexactly(length)

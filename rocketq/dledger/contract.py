"""The seams between the Raft algorithm and the broker that uses it.

Raft knows entries only as (index, term, payload); it never looks inside a payload. The broker
gives it a :class:`RaftLog` whose payloads are CommitLog bytes (one stored message, or one
batch, per entry; an empty payload is the no-op a new leader appends in its term), and drives a
:class:`RaftMember`: it appends to the log itself while the member is leader, then waits for the
entry to commit before answering the producer.

Indexes start at 1; index 0 with term 0 is the empty log's sentinel, so ``term_at(0) == 0``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


class Role(enum.Enum):
    FOLLOWER = "FOLLOWER"
    CANDIDATE = "CANDIDATE"
    LEADER = "LEADER"


@dataclass(frozen=True, slots=True)
class Entry:
    index: int
    term: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class MemberState:
    """What a member knows of its group right now (runtime info, metrics, admin)."""

    self_id: str
    role: Role
    term: int
    leader_id: str | None
    commit_index: int
    last_index: int
    # Leader only: each follower's highest replicated index (empty on followers).
    match_index: dict[str, int]


class RaftLog(Protocol):
    """The log Raft replicates. Appends must be durable as the store's flush policy makes them."""

    @property
    def last_index(self) -> int: ...

    @property
    def last_term(self) -> int: ...

    @property
    def committed_index(self) -> int:
        """The highest index this log knew committed when it was opened (0 if it does not know):
        a restarted member starts from it, and never truncates below it."""

    def term_at(self, index: int) -> int | None:
        """The term of entry ``index``; 0 for index 0; None when the log does not hold it."""

    def read(self, start: int, max_bytes: int) -> list[Entry]:
        """Entries from ``start`` on: at least one if the log holds ``start``, then as many as
        fit in ``max_bytes`` of payload."""

    def append(self, entries: Sequence[Entry]) -> None:
        """Entries that continue the log (the first is ``last_index + 1``): what a follower
        receives, and the empty no-op a new leader appends in its term."""

    def truncate_after(self, index: int) -> None:
        """Drop every entry above ``index`` (a deposed leader's uncommitted tail)."""

    def commit(self, index: int) -> None:
        """Entries up to ``index`` are committed: the broker may now build ConsumeQueue and
        IndexFile from them and serve them. Never called with a smaller index than before."""


RoleListener = Callable[[MemberState], None]


class RaftMember(Protocol):
    """One member of a group, as the broker sees it."""

    def state(self) -> MemberState: ...

    def add_role_listener(self, listener: RoleListener) -> None:
        """Called on every change of role, term or leader, and when a leader becomes ready for
        writes or stops being so (``leader_term()`` turns non-None or None), on the event loop."""

    def leader_term(self) -> int | None:
        """The current term while this member is a leader ready for writes, else None. The
        broker stamps entries it appends with it, and appends in the same synchronous step as
        it asked (no await in between): leadership can change at any await."""

    def appended(self) -> None:
        """The broker appended entries as leader: start replicating them."""

    async def wait_committed(self, index: int, timeout: float) -> bool:
        """True once ``index`` is committed in this leader's term; False on timeout or when
        leadership is lost first (the entry may still commit later or be truncated)."""

    async def transfer_leadership(self, to_id: str, timeout: float) -> bool:
        """Hand leadership to ``to_id`` once it has caught up; True when it took over."""

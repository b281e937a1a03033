"""Committed-only dispatch: the CommitLog first, ConsumeQueue and IndexFile once bytes count.

Normally ``MessageStore`` dispatches each record the moment it appends it. A DLedger store must
not: a record counts only once a majority of its group holds it (it is *committed*), and pulls
and queries must never see anything else, on the leader as on its followers. In this mode the
store appends a record without dispatching it and gives it the queue offset it *will* have;
``Reput`` dispatches records later, up to the position the Raft log says is committed
(``MessageStore.dispatch_to``), exactly as it dispatches a slave's replicated bytes.

Queue offsets therefore run ahead of the queues: ``PendingOffsets`` remembers the next offset of
each queue an undispatched record went to. It is emptied whenever the tail it counted is cut
(``MessageStore.cut_tail``) and when a member becomes the writing leader, whose log is then
wholly dispatched, so the queues' own ends are right again.

``AppendHook`` is the seam to the replication that decides what counts: it may refuse a put
before anything is appended (this member is not the group's writing leader) and it learns of
every append, synchronously, so that it can stamp it (a Raft entry index) before any other put
runs.
"""

from __future__ import annotations

from typing import Protocol

from rocketq.store.consumequeue import ConsumeQueue


class AppendHook(Protocol):
    def refusal(self) -> str | None:
        """Why puts are refused now (the remark), or None to accept them."""

    def appended(self, start: int, end: int) -> int:
        """The CommitLog grew from ``start`` to ``end`` by one put; returns its replication
        index (carried in ``PutResult.replication_index``)."""


class PendingOffsets:
    """The next queue offset of queues whose newest records are not dispatched yet."""

    def __init__(self) -> None:
        self._next: dict[ConsumeQueue, int] = {}

    def take(self, cq: ConsumeQueue) -> int:
        """The queue offset for the next record of ``cq``, counted as taken."""
        offset = max(self._next.get(cq, 0), cq.max_offset)
        self._next[cq] = offset + 1
        return offset

    def give_back(self, cq: ConsumeQueue, first: int) -> None:
        """A failed put returns the offsets it took from ``first`` on."""
        self._next[cq] = first

    def clear(self) -> None:
        self._next.clear()

    def __len__(self) -> int:
        return len(self._next)

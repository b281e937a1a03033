"""StoreLog: the Raft log of a DLedger broker, kept in its MessageStore's CommitLog.

Raft replicates entries (index, term, payload); here a payload is CommitLog bytes: what one put
appended (a message or a batch, after the END_OF_FILE blank if the put rolled a segment), or
nothing for the no-op a new leader appends in its term. The CommitLog keeps RocketMQ's plain
format; the ``entryindex`` beside it says where each entry lies and in which term it was
written. Every member writes an entry's bytes at the same physical offset (a follower through
``MessageStore.append_replicated``, as a master/slave slave does), so the offsets and message
ids clients see are the same on every member and stay valid across leader changes.

Nothing is visible before it commits: the store runs in committed-only dispatch mode
(``rocketq.store.committed``), and ``commit`` dispatches the records up to the committed
entry's end, building their ConsumeQueue units and index entries and waking held pulls, on the
leader exactly as on a follower. ``truncate_after`` (a deposed leader's uncommitted tail) cuts
the CommitLog and the entry index; nothing derived from those bytes exists yet.

The leader's own appends do not come through ``append``: the broker puts messages into the store
as always, and the store's ``AppendHook`` (this class) refuses them unless the broker says this
member is the writing leader (``leader_term``), and records each one as an entry stamped with
that term, synchronously, so that the put learns its entry index (``PutResult.replication_index``)
and Raft starts replicating it at once (``on_append``).

At open the two files are made to agree: records of entries whose bytes the CommitLog lost in a
crash are dropped, and CommitLog bytes no record describes are cut (the shorter one wins; the
store has already CRC-checked the CommitLog's tail). What does not come back: entries whose
CommitLog segments retention deleted can no longer be sent to a follower.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from rocketq.dledger.contract import Entry
from rocketq.dledger.entryindex import EntryIndex, EntryRecord
from rocketq.store.errors import StoreError
from rocketq.store.messagestore import MessageStore

log = logging.getLogger(__name__)

DIRECTORY = "dledger"
"""Under storePathRootDir: the entry index (and the Raft member's own files)."""


def _no_term() -> int | None:
    return None


def _nothing() -> None:
    return None


def _ignore(_index: int) -> None:
    return None


class StoreLog:
    """``contract.RaftLog`` over a ``MessageStore``, and that store's ``AppendHook``."""

    def __init__(self, store: MessageStore, directory: Path) -> None:
        fresh = not (directory / "entryindex").exists()
        self._store = store
        self._entries = EntryIndex(directory)
        self.commit_index = 0
        self.leader_term: Callable[[], int | None] = _no_term
        """The term to stamp this member's own puts with; None refuses them (not the writing leader)."""
        self.on_append: Callable[[], None] = _nothing
        """Called after each own put (the member's ``appended``: replicate it now)."""
        self.on_commit: Callable[[int], None] = _ignore
        """Called with the new commit index once its records are dispatched (sends waiting for it)."""
        self.refusal_remark = "this broker is not the leader of its DLedger group"
        try:
            self._reconcile(fresh)
        except BaseException:
            self._entries.close()
            raise
        store.flusher.companion_fds = lambda: [self._entries.fd] if self._entries.fd >= 0 else []

    def _reconcile(self, fresh: bool) -> None:
        commitlog = self._store.commitlog
        if fresh and commitlog.max_offset > commitlog.min_offset:
            raise StoreError(f"{self._store.settings.root_dir} holds messages but no DLedger entry index: "
                             "a master/slave store cannot become a DLedger member (start it with an empty store)")
        entries = self._entries
        dropped = 0
        while entries.last is not None and entries.last.end > commitlog.max_offset:
            entries.truncate_after(entries.last_index - 1)
            dropped += 1
        if dropped:
            log.warning("dledger: dropped %d entries whose commitlog bytes were lost", dropped)
        self.commit_index = entries.committed_hint
        self._store.dispatch_committed_only(self._end_of(self.commit_index))
        end = self._end_of(entries.last_index)
        if commitlog.max_offset > end:
            log.warning("dledger: cutting %d commitlog bytes no entry describes", commitlog.max_offset - end)
            self._store.cut_tail(end)

    def close(self) -> None:
        self._entries.close()

    def _end_of(self, index: int) -> int:
        """CommitLog offset just past entry ``index`` (where entry ``index + 1`` starts)."""
        if index > 0:
            record = self._entries.get(index)
            assert record is not None
            return record.end
        first = self._entries.get(1)
        return first.pos if first is not None else self._store.commitlog.max_offset

    # --- contract.RaftLog -----------------------------------------------------------------------

    @property
    def last_index(self) -> int:
        return self._entries.last_index

    @property
    def last_term(self) -> int:
        last = self._entries.last
        return last.term if last is not None else 0

    @property
    def committed_index(self) -> int:
        """What this log knows committed (at open: the entry index's persisted hint)."""
        return self.commit_index

    def term_at(self, index: int) -> int | None:
        if index == 0:
            return 0
        record = self._entries.get(index)
        return record.term if record is not None else None

    def read(self, start: int, max_bytes: int) -> list[Entry]:
        out: list[Entry] = []
        total = 0
        for index in range(max(start, 1), self._entries.last_index + 1):
            record = self._entries.get(index)
            payload = self._payload(record) if record is not None else None
            if record is None or payload is None or (out and total + len(payload) > max_bytes):
                break
            out.append(Entry(index, record.term, payload))
            total += len(payload)
        return out

    def _payload(self, record: EntryRecord) -> bytes | None:
        """The entry's CommitLog bytes, or None when the log no longer holds them (retention)."""
        commitlog = self._store.commitlog
        parts: list[bytes] = []
        at, left = record.pos, record.size
        while left > 0:
            view = commitlog.read_replica(at, left)
            if not view:
                return None
            parts.append(bytes(view))
            at += len(view)
            left -= len(view)
        return b"".join(parts)

    def append(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            if entry.index != self._entries.last_index + 1:
                raise ValueError(f"entry {entry.index} does not continue the log (last index {self.last_index})")
            pos = self._store.commitlog.max_offset
            if entry.payload:
                try:
                    self._store.append_replicated(pos, entry.payload)
                except BaseException:
                    self._store.cut_tail(pos)  # a half-written entry must not stay without its record
                    raise
            self._entries.append(EntryRecord(entry.term, pos, len(entry.payload)))

    def truncate_after(self, index: int) -> None:
        if index >= self._entries.last_index:
            return
        if index < self.commit_index:
            raise ValueError(f"cannot drop entries above {index}: entries up to {self.commit_index} are committed")
        first_cut = self._entries.get(index + 1)
        assert first_cut is not None
        dropped = self._entries.last_index - index
        self._store.cut_tail(first_cut.pos)
        self._entries.truncate_after(index)
        log.warning("dledger: dropped %d uncommitted entries after index %d", dropped, index)

    def commit(self, index: int) -> None:
        index = min(index, self._entries.last_index)
        if index <= self.commit_index:
            return
        self._store.dispatch_to(self._end_of(index))
        self.commit_index = index
        self._entries.set_committed(index)
        self.on_commit(index)

    # --- the store's AppendHook -----------------------------------------------------------------

    def refusal(self) -> str | None:
        return None if self.leader_term() is not None else self.refusal_remark

    def appended(self, start: int, end: int) -> int:
        term = self.leader_term()
        if term is None:  # refusal() said yes in this same step: cannot happen
            raise StoreError("appended as a DLedger member that is not the writing leader")
        index = self._entries.append(EntryRecord(term, start, end - start))
        self.on_append()
        return index

    # --- state ----------------------------------------------------------------------------------

    @property
    def committed_end(self) -> int:
        """CommitLog offset up to which records are committed (and dispatched)."""
        return self._end_of(self.commit_index)

    def all_dispatched(self) -> bool:
        """Every entry is committed and dispatched (a new leader may take writes)."""
        return self.commit_index == self._entries.last_index and \
            self._store.dispatched_offset >= self._end_of(self.commit_index)

"""An in-memory RaftLog for the Raft tests: the contract, kept in a list, with its rules checked.

It refuses what a real log must never be asked to do (a gap, a term going back, truncating a
committed entry, a commit going back), so a Raft bug shows up as an AssertionError here rather
than as a quietly wrong log.
"""

from __future__ import annotations

from collections.abc import Sequence

from rocketq.dledger.contract import Entry


class MemLog:
    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.committed = 0

    @property
    def last_index(self) -> int:
        return len(self.entries)

    @property
    def last_term(self) -> int:
        return self.entries[-1].term if self.entries else 0

    @property
    def committed_index(self) -> int:
        return self.committed

    def term_at(self, index: int) -> int | None:
        if index == 0:
            return 0
        if 1 <= index <= len(self.entries):
            return self.entries[index - 1].term
        return None

    def read(self, start: int, max_bytes: int) -> list[Entry]:
        out: list[Entry] = []
        size = 0
        for entry in self.entries[start - 1:]:
            if out and size + len(entry.payload) > max_bytes:
                break
            out.append(entry)
            size += len(entry.payload)
        return out

    def append(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            assert entry.index == len(self.entries) + 1, f"gap: {entry.index} after {len(self.entries)}"
            assert entry.term >= self.last_term, f"term {entry.term} after {self.last_term}"
            self.entries.append(entry)

    def truncate_after(self, index: int) -> None:
        assert index >= self.committed, f"truncating committed entries ({index} < {self.committed})"
        del self.entries[index:]

    def commit(self, index: int) -> None:
        assert index >= self.committed, f"commit went back from {self.committed} to {index}"
        assert index <= len(self.entries), f"commit {index} beyond the log's end {len(self.entries)}"
        self.committed = index

    def payloads(self, upto: int | None = None) -> list[bytes]:
        """The non-empty payloads (the no-ops left out) up to ``upto`` (default: the commit index)."""
        end = self.committed if upto is None else upto
        return [e.payload for e in self.entries[:end] if e.payload]

"""The ``currterm`` file: a member's current term and the vote it cast in that term.

Raft's safety rests on a member never voting twice in one term, also across a crash. So the
term and the vote are written together, atomically, and are on disk (fsync of the file and of
its directory) *before* the member answers the vote or acts on the new term. The file is the
same as DLedger's in spirit: a small properties text in the member's directory

    currTerm=7
    voteLeader=n1

(``voteLeader`` empty: no vote in this term). A write goes to ``currterm.tmp``, is fsynced and
renamed over ``currterm``, so a crash leaves either the old or the new pair, never half of one.

The write blocks the event loop for one small fsync. That is on purpose: it happens once per
term change or vote, and doing it inline keeps "persist, then answer" a single step of the
member's state machine that no other message can interleave with.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocketq.dledger import peers

FILE_NAME: Final = "currterm"
MAX_FILE_BYTES: Final = 4096


class TermStoreError(ValueError):
    """``currterm`` exists but cannot be read as a term and a vote: refusing to guess."""


@dataclass(frozen=True, slots=True)
class TermVote:
    term: int = 0
    voted_for: str | None = None


def default_dir(store_root: str | os.PathLike[str], self_id: str) -> Path:
    """Where DLedger keeps a member's files under the broker's store root (``dledger-<id>``)."""
    return Path(store_root) / f"dledger-{self_id}"


class TermStore:
    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.path = self.directory / FILE_NAME

    def load(self) -> TermVote:
        """The saved pair; (0, None) when the member never saved one."""
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return TermVote()
        if len(raw) > MAX_FILE_BYTES:
            raise TermStoreError(f"{self.path}: larger than {MAX_FILE_BYTES} bytes; not a currterm file")
        return _parse(raw, self.path)

    def save(self, value: TermVote) -> None:
        """Write the pair durably; returns only once it is on disk."""
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(FILE_NAME + ".tmp")
        text = f"currTerm={value.term}\nvoteLeader={value.voted_for or ''}\n".encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, text)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the rename itself must survive a crash too
        finally:
            os.close(dir_fd)


def _parse(raw: bytes, path: Path) -> TermVote:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TermStoreError(f"{path}: not UTF-8 text") from None
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    term_text = values.get("currTerm", "")
    if not term_text.isdigit():
        raise TermStoreError(f"{path}: currTerm={term_text!r} is not a term number")
    voted_for = values.get("voteLeader") or None
    if voted_for is not None:
        try:
            peers.check_id(voted_for)
        except peers.PeersError as exc:
            raise TermStoreError(f"{path}: voteLeader: {exc}") from None
    return TermVote(int(term_text), voted_for)

"""Epochs: which stretch of the CommitLog which master wrote, so a rejoining broker cuts exactly
what its group's current master does not have.

Each promotion starts a new epoch: its number (the previous one + 1) and the CommitLog offset
where the new master's first write goes. The history is a list of such entries, oldest first,
persisted in ``config/epoch.json`` (written, fsynced, renamed; RocketMQ 5 keeps the same facts
in its ``epochFileCheckpoint``). A store without the file has one implicit epoch 0 from offset
0: the group's first master, as before promotion existed.

A slave asks its master for the master's history before it reports its end (the HA extension in
``protocol.encode_epoch_request``). The newest epoch the two histories share, same number and
same start, is where both logs hold the same master's bytes; the logs agree up to the first of
the two ends of that epoch (``consistent_point``, RocketMQ 5's findLastConsistentPoint). The
slave truncates beyond that point, then takes the master's history as its own: what it will
receive from here on is the master's. An old master that was killed and replaced therefore
drops exactly the tail the new master never received, even when the new master has written as
much or more since its promotion at the same offsets.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from pathlib import Path
from typing import Final

import orjson

from rocketq.store import configfiles

log = logging.getLogger(__name__)

EPOCH_FILE: Final = "epoch.json"
MAX_EPOCHS: Final = 4096
"""Entries a peer's history may carry: promotions are rare, a longer list is not a history."""


class EpochError(ValueError):
    """An epoch history that does not parse or is not ordered."""


@dataclasses.dataclass(frozen=True, slots=True)
class Epoch:
    number: int
    start: int
    """CommitLog offset of the epoch's first byte."""


FIRST: Final = (Epoch(0, 0),)


def validated(entries: list[Epoch]) -> list[Epoch]:
    if not entries or len(entries) > MAX_EPOCHS:
        raise EpochError(f"an epoch history has 1..{MAX_EPOCHS} entries, got {len(entries)}")
    for before, after in itertools.pairwise(entries):
        if after.number <= before.number or after.start < before.start:
            raise EpochError(f"epoch {after} does not follow {before}")
    if entries[0].number < 0 or entries[0].start < 0:
        raise EpochError(f"negative epoch entry {entries[0]}")
    return entries


def encode(entries: list[Epoch], end: int) -> bytes:
    """The master's answer body: its history and its CommitLog end."""
    return orjson.dumps({"end": end, "epochs": [[e.number, e.start] for e in entries]})


def decode(body: bytes) -> tuple[list[Epoch], int]:
    try:
        doc = orjson.loads(body)
        end = doc["end"]
        entries = [Epoch(int(n), int(s)) for n, s in doc["epochs"]]
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise EpochError(f"not an epoch history: {exc}") from None
    if not isinstance(end, int) or end < 0:
        raise EpochError(f"bad log end {end!r}")
    return validated(entries), end


def consistent_point(mine: list[Epoch], my_end: int, theirs: list[Epoch], their_end: int) -> int:
    """Offset up to which both logs hold the same bytes (0: no epoch in common)."""
    starts = {(e.number, e.start): i for i, e in enumerate(theirs)}
    for i in range(len(mine) - 1, -1, -1):
        j = starts.get((mine[i].number, mine[i].start))
        if j is None:
            continue
        my_epoch_end = mine[i + 1].start if i + 1 < len(mine) else my_end
        their_epoch_end = theirs[j + 1].start if j + 1 < len(theirs) else their_end
        return min(my_epoch_end, their_epoch_end)
    return 0


class EpochHistory:
    """This store's epoch history and its file."""

    def __init__(self, config_dir: Path) -> None:
        self.path = config_dir / EPOCH_FILE
        self.entries = list(FIRST)

    def load(self) -> EpochHistory:
        doc = configfiles.read_json(self.path)
        if doc is not None:
            try:
                self.entries = validated([Epoch(int(n), int(s)) for n, s in doc])
            except (TypeError, ValueError) as exc:
                raise EpochError(f"{self.path}: not an epoch history ({exc}); fix or delete it") from None
        return self

    @property
    def current(self) -> Epoch:
        return self.entries[-1]

    def begin(self, start: int, *, above: int = 0) -> Epoch:
        """A promotion: a new epoch from ``start`` (this log's end), numbered past this history
        and past ``above`` (a group epoch this broker was fenced by: re-promoting a fenced master
        must outrank the master that fenced it). Entries this log never received bytes of (they
        start at or beyond its end) are not its history."""
        kept = [e for e in self.entries if e.start < start] or [self.entries[0]]
        epoch = Epoch(max(self.current.number, above) + 1, start)
        self._save([*kept, epoch])
        log.warning("HA: epoch %d begins at commitlog offset %d", epoch.number, start)
        return epoch

    def adopt(self, entries: list[Epoch]) -> None:
        """A slave takes its master's history (after truncating to the consistent point)."""
        if entries != self.entries:
            self._save(entries)

    def _save(self, entries: list[Epoch]) -> None:
        configfiles.write_json_atomic(self.path, [[e.number, e.start] for e in entries])
        self.entries = list(entries)

"""The checkpoint: how far each part of the store is known to be on disk, as store timestamps.

``<root>/checkpoint`` is a 4 KiB file (one page, so a write never tears across pages) holding,
big-endian, ``physicMsgTimestamp`` i64 (newest CommitLog record flushed),
``logicsMsgTimestamp`` i64 (newest record whose ConsumeQueue units are all flushed) and
``indexMsgTimestamp`` i64 (likewise for the index), exactly as RocketMQ's ``StoreCheckpoint``.
After a crash, recovery starts re-validating the CommitLog from the segment holding the oldest
of these moments. The checkpoint records progress; it does not decide anything.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

FILE_SIZE: Final = 4096
_LAYOUT = struct.Struct(">qqq")


@dataclass(frozen=True, slots=True)
class CheckpointValues:
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0

    def min_timestamp(self, *, with_index: bool) -> int:
        """The oldest of the recorded moments (index included only when indexing is on)."""
        stamps = [self.physic_msg_timestamp, self.logics_msg_timestamp]
        if with_index:
            stamps.append(self.index_msg_timestamp)
        return min(stamps)


def read(path: Path) -> CheckpointValues:
    """The recorded values; a missing or short file reads as all zeros (start from the beginning)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return CheckpointValues()
    if len(raw) < _LAYOUT.size:
        return CheckpointValues()
    return CheckpointValues(*_LAYOUT.unpack_from(raw, 0))


def write(path: Path, values: CheckpointValues, fsync: Callable[[int], None] = os.fdatasync) -> None:
    """Overwrite the values in place and fsync (blocking: call it off the event loop)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    created = False
    try:
        if os.fstat(fd).st_size != FILE_SIZE:
            os.ftruncate(fd, FILE_SIZE)
            created = True
        os.pwrite(fd, _LAYOUT.pack(values.physic_msg_timestamp, values.logics_msg_timestamp,
                                   values.index_msg_timestamp), 0)
        fsync(fd)
    finally:
        os.close(fd)
    if created:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

"""Retention: deleting old data, and refusing new data when the disk is nearly full.

Every ``CLEAN_INTERVAL`` seconds the ``Retention`` task

1. reads how full the CommitLog's disk is. At or above diskSpaceWarningLevelRatio it sets
   ``disk_full`` and the store refuses puts with DISK_FULL until usage drops again (while
   refusing, the store reads the disk again every ``DISK_FULL_RECHECK`` seconds, and a put that
   meets ENOSPC reads it at once).
2. deletes CommitLog segments, oldest first, at most ``DELETE_FILES_BATCH_MAX`` per round:
   those whose last write is older than fileReservedTime hours, during the hours listed in
   deleteWhen; or, when usage is above diskMaxUsedSpaceRatio, the oldest ones whatever their
   age. Never the segment being written, and never one not yet flushed. Deletion stops at the
   first segment that must stay, so the log remains contiguous.
3. deletes ConsumeQueue files whose units all point below the CommitLog's new first offset, and
   IndexFiles wholly below it.

The clock and the disk-usage reading are injected, so tests drive time and fullness. Unlinking
runs in a worker thread (removing a 1 GiB file can take a while).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import ConsumeQueue
from rocketq.store.index import IndexService
from rocketq.store.mappedfile import MappedFile
from rocketq.store.settings import StoreSettings
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

CLEAN_INTERVAL: Final = 10.0
"""Seconds between retention rounds (RocketMQ's cleanResourceInterval)."""
DISK_FULL_RECHECK: Final = 1.0
"""Seconds between disk readings while writes are refused, so that they resume soon after space
is freed rather than at the next round."""
DELETE_FILES_BATCH_MAX: Final = 10
"""CommitLog segments deleted per round at most, to spread the I/O."""

DiskUsage = Callable[[Path], float]
"""Fraction (0..1) of the disk holding a path that is in use."""


def disk_usage_ratio(path: Path) -> float:
    usage = shutil.disk_usage(path)
    return usage.used / usage.total if usage.total else 0.0


class Retention:
    """Owner of the retention task and of the disk-full flag."""

    def __init__(
        self,
        settings: StoreSettings,
        commitlog: CommitLog,
        queues: Callable[[], Iterable[ConsumeQueue]],
        index: IndexService | None,
        *,
        clock: Callable[[], float] = time.time,
        disk_usage: DiskUsage = disk_usage_ratio,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._commitlog = commitlog
        self._queues = queues
        self._index = index
        self._clock = clock
        self._disk_usage = disk_usage
        self._monotonic = monotonic
        self._checked_at = 0.0
        self._delete_hours = settings.delete_hours
        self._task = OwnedTask("store-retention", self._run)
        self.disk_full = False
        self.disk_ratio = 0.0
        self.deleted_segments = 0

    def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.stop()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(CLEAN_INTERVAL)
            try:
                await self.run_once()
            except OSError as exc:
                log.error("retention round failed: %s", exc)

    def check_disk(self) -> float:
        """Read disk usage and update ``disk_full``; logs each change of state."""
        ratio = self._disk_usage(self._commitlog.directory)
        self._checked_at = self._monotonic()
        self.disk_ratio = ratio
        full = ratio * 100 >= self._settings.disk_space_warning_level_ratio
        if full != self.disk_full:
            if full:
                log.error("disk %.1f%% used, at or above diskSpaceWarningLevelRatio=%d%%: refusing writes",
                          ratio * 100, self._settings.disk_space_warning_level_ratio)
            else:
                log.warning("disk %.1f%% used, below the high-water mark again: accepting writes",
                            ratio * 100)
        self.disk_full = full
        return ratio

    def refuses_writes(self) -> bool:
        """``disk_full``, read again at most every ``DISK_FULL_RECHECK`` seconds while it is set."""
        if self.disk_full and self._monotonic() - self._checked_at >= DISK_FULL_RECHECK:
            self.check_disk()
        return self.disk_full

    async def run_once(self) -> int:
        """One round: check the disk, delete what is due. Returns segments deleted."""
        ratio = self.check_disk()
        at_once = ratio * 100 >= self._settings.disk_max_used_space_ratio
        now = self._clock()
        in_window = time.localtime(now).tm_hour in self._delete_hours
        removed: list[MappedFile] = []
        if in_window or at_once:
            removed = self._expired_segments(now, force=at_once)
        if removed:
            if at_once:
                log.warning("disk %.1f%% used, above diskMaxUsedSpaceRatio: deleting %d oldest segments",
                            ratio * 100, len(removed))
            self._commitlog.remove_head(len(removed))
            for segment in removed:
                segment.close()
            await asyncio.to_thread(_unlink_all, [s.path for s in removed])
            self.deleted_segments += len(removed)
            log.info("deleted commitlog segments %s", ", ".join(s.path.name for s in removed))
        self._clean_derived()
        return len(removed)

    def _expired_segments(self, now: float, *, force: bool) -> list[MappedFile]:
        reserved = self._settings.file_reserved_time * 3600
        candidates: list[MappedFile] = []
        for segment in self._commitlog.segments[:-1]:
            if segment.end > self._commitlog.flushed_offset or len(candidates) >= DELETE_FILES_BATCH_MAX:
                break
            if not force and segment.path.stat().st_mtime + reserved > now:
                break
            candidates.append(segment)
        return candidates

    def _clean_derived(self) -> None:
        floor = self._commitlog.min_offset
        for cq in list(self._queues()):
            cq.delete_below(floor)
        if self._index is not None:
            self._index.delete_below(floor)


def _unlink_all(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)

"""Flushing: getting appended bytes from the page cache onto the disk, off the event loop.

Two owners of one task each:

* ``CommitLogFlusher`` flushes the CommitLog. Under ASYNC_FLUSH it wakes every
  flushIntervalCommitLog ms and fsyncs once flushCommitLogLeastPages pages are dirty (all of it
  every ``COMMITLOG_THOROUGH_INTERVAL``). Under SYNC_FLUSH it is a *group commit*: a put waits
  (``wait_flushed``) for the flushed offset to pass the end of its record; the flusher takes
  the log's current end as its target, fsyncs once, and releases every waiter that target
  covers, so a burst of concurrent puts shares one fsync. A waiter not released within
  syncFlushTimeout gets False (the put answers FLUSH_DISK_TIMEOUT; the message stays stored).
* ``LogicFlusher`` flushes ConsumeQueue and IndexFile files every flushIntervalConsumeQueue ms
  and then writes the checkpoint. The logics/index timestamps in the checkpoint only advance
  on a *thorough* flush (every file, every ``LOGIC_THOROUGH_INTERVAL``), since only then is
  every unit up to that moment on disk.

fsync runs in a worker thread on ``dup``-ed descriptors, so cleanup closing a file meanwhile
cannot make the thread fsync a reused descriptor. If fsync fails the store can no longer
promise durability: the flusher records the error (``failure``) and the store refuses writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from rocketq import tasks
from rocketq.store import checkpoint
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import ConsumeQueue
from rocketq.store.index import IndexService
from rocketq.store.settings import FlushDiskType, StoreSettings
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

COMMITLOG_THOROUGH_INTERVAL: Final = 10.0
"""Seconds after which ASYNC_FLUSH flushes even fewer than flushCommitLogLeastPages pages."""
LOGIC_THOROUGH_INTERVAL: Final = 60.0
"""Seconds after which every ConsumeQueue/IndexFile file is flushed and the checkpoint moves."""

Fsync = Callable[[int], None]


def sync_fds(fds: list[int], fsync: Fsync) -> None:
    """fsync then close each (dup-ed) descriptor; runs in a worker thread."""
    try:
        for fd in fds:
            fsync(fd)
    finally:
        for fd in fds:
            os.close(fd)


class _Blocking:
    """Runs blocking calls in a thread and remembers the one in flight, so that a cancelled
    owner can still wait for the thread before the files it uses are closed."""

    def __init__(self) -> None:
        self._inflight: asyncio.Future[None] | None = None

    async def run(self, fn: Callable[..., None], *args: object) -> None:
        future = asyncio.get_running_loop().run_in_executor(None, fn, *args)
        self._inflight = future
        await asyncio.shield(future)

    async def drain(self) -> None:
        if self._inflight is not None and not self._inflight.done():
            with contextlib.suppress(Exception):
                await self._inflight


class CommitLogFlusher:
    """Owner of the CommitLog flush task and of SYNC_FLUSH's waiting puts."""

    def __init__(self, commitlog: CommitLog, settings: StoreSettings, fsync: Fsync = os.fdatasync) -> None:
        self._commitlog = commitlog
        self._settings = settings
        self._fsync = fsync
        self._sync = settings.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._order = itertools.count()
        self._wakeup = asyncio.Event()
        self._blocking = _Blocking()
        self._task = OwnedTask("commitlog-flush", self._run)
        self._last_thorough = time.monotonic()
        self.failure: OSError | None = None
        self.fsync_calls = 0
        """Flush rounds that fsynced (a round may fsync several segments)."""
        self.companion_fds: Callable[[], list[int]] = list
        """Files fsynced with every CommitLog flush (a DLedger store's entry index)."""

    def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        """Stop the task (idempotent) and wait for an fsync in flight; release all waiters."""
        await self._task.stop()
        await self._blocking.drain()
        self._release(self._commitlog.flushed_offset, final=True)

    def wakeup(self) -> None:
        self._wakeup.set()

    async def wait_flushed(self, offset: int, timeout: float) -> bool:
        """True once everything below ``offset`` is on disk; False on timeout or fsync failure."""
        if self._commitlog.flushed_offset >= offset:
            return True
        if self.failure is not None or self._task is None:
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        heapq.heappush(self._waiters, (offset, next(self._order), future))
        self._wakeup.set()
        # a timer on the future, not asyncio.wait(): that builds sets, a waiter and callbacks
        # for every SYNC_FLUSH put
        timer = loop.call_later(timeout, _time_out, future)
        try:
            return await future
        finally:
            timer.cancel()

    async def flush(self) -> None:
        """Flush everything appended so far (close and tests use it)."""
        await self._flush_to(self._commitlog.max_offset, self._commitlog.last_store_timestamp)

    async def _run(self) -> None:
        interval = self._settings.flush_interval_commit_log / 1000
        while True:
            if self._sync:
                await self._wakeup.wait()
            else:
                await tasks.wait_event(self._wakeup, interval)
            self._wakeup.clear()
            if self._sync or self._async_due():
                await self._flush_to(self._commitlog.max_offset, self._commitlog.last_store_timestamp)

    def _async_due(self) -> bool:
        if self._commitlog.dirty_pages() >= self._settings.flush_commit_log_least_pages:
            return True
        if time.monotonic() - self._last_thorough >= COMMITLOG_THOROUGH_INTERVAL:
            self._last_thorough = time.monotonic()
            return True
        return False

    async def _flush_to(self, target: int, target_timestamp: int) -> None:
        if target > self._commitlog.flushed_offset and self.failure is None:
            fds = [os.dup(s.fd) for s in self._commitlog.unflushed_below(target)]
            fds += [os.dup(fd) for fd in self.companion_fds()]
            cuts = self._commitlog.cuts
            try:
                self.fsync_calls += 1
                await self._blocking.run(sync_fds, fds, self._fsync)
            except OSError as exc:
                self.failure = exc
                log.critical("commitlog fsync failed (%s): refusing writes from now on", exc)
                self._release(target, final=True)
                return
            if self._commitlog.cuts != cuts:  # the tail was cut meanwhile: what is there now may be new
                self._wakeup.set()
                return
            self._commitlog.mark_flushed(target, target_timestamp)
        self._release(self._commitlog.flushed_offset)

    def _release(self, flushed: int, *, final: bool = False) -> None:
        """Answer the waiters that ``flushed`` covers (all of them, False, when ``final``)."""
        waiters = self._waiters
        while waiters and (final or waiters[0][0] <= flushed):
            offset, _order, future = heapq.heappop(waiters)
            if not future.done():
                future.set_result(offset <= flushed and self.failure is None)


def _time_out(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)


class LogicFlusher:
    """Owner of the ConsumeQueue/IndexFile flush task and of checkpoint writes."""

    def __init__(
        self,
        commitlog: CommitLog,
        queues: Callable[[], Iterable[ConsumeQueue]],
        index: IndexService | None,
        settings: StoreSettings,
        checkpoint_path: Path,
        initial: checkpoint.CheckpointValues,
        fsync: Fsync = os.fdatasync,
    ) -> None:
        self._commitlog = commitlog
        self._queues = queues
        self._index = index
        self._settings = settings
        self._checkpoint_path = checkpoint_path
        self.values = initial
        self._fsync = fsync
        self._blocking = _Blocking()
        self._task = OwnedTask("consumequeue-flush", self._run)
        self._last_thorough = time.monotonic()
        self._serial = asyncio.Lock()
        """One flush at a time: a slower, older flush must never write its checkpoint over a newer one."""

    def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.stop()
        await self._blocking.drain()

    async def _run(self) -> None:
        interval = self._settings.flush_interval_consume_queue / 1000
        while True:
            await asyncio.sleep(interval)
            thorough = time.monotonic() - self._last_thorough >= LOGIC_THOROUGH_INTERVAL
            try:
                await self.flush(thorough=thorough)
            except OSError as exc:
                log.error("consume queue / index flush failed: %s", exc)
                continue
            if thorough:
                self._last_thorough = time.monotonic()

    async def flush(self, *, thorough: bool) -> None:
        """Flush dirty queue and index files, then write the checkpoint."""
        async with self._serial:
            await self._flush(thorough=thorough)

    async def _flush(self, *, thorough: bool) -> None:
        dispatched_until = self._commitlog.last_store_timestamp
        least = 0 if thorough else self._settings.flush_consume_queue_least_pages
        queue_files = [(f, f.wrote) for cq in list(self._queues()) for f in cq.dirty_files(least)]
        index_files = [(f, f.index_count) for f in self._index.unflushed()] if self._index else []
        fds = [os.dup(f.fd) for f, _ in queue_files] + [os.dup(f.fd) for f, _ in index_files]
        if fds:
            await self._blocking.run(sync_fds, fds, self._fsync)
        for f, wrote in queue_files:
            f.flushed = max(f.flushed, wrote)
        for index_file, count in index_files:
            index_file.flushed = index_file.index_count == count
        values = checkpoint.CheckpointValues(
            physic_msg_timestamp=self._commitlog.flushed_store_timestamp,
            logics_msg_timestamp=dispatched_until if thorough else self.values.logics_msg_timestamp,
            index_msg_timestamp=dispatched_until if thorough else self.values.index_msg_timestamp,
        )
        await self._blocking.run(checkpoint.write, self._checkpoint_path, values, self._fsync)
        self.values = values

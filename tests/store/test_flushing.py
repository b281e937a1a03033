"""Flushing: SYNC_FLUSH group commit, flush timeouts and failures, ASYNC_FLUSH, the checkpoint."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

from store_helpers import StoreFactory, request, small_settings

from rocketq.store import checkpoint
from rocketq.store.messagestore import PutStatus
from rocketq.store.settings import FlushDiskType


class CountingFsync:
    """Real fdatasync, counted, optionally slowed down or failing."""

    def __init__(self, delay: float = 0.0) -> None:
        self.calls = 0
        self.delay = delay
        self.fail = False
        self._lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        with self._lock:
            self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if self.fail:
            raise OSError(5, "Input/output error")
        os.fdatasync(fd)


async def test_group_commit_shares_fsyncs(tmp_path: Path, make_store: StoreFactory) -> None:
    fsync = CountingFsync(delay=0.01)
    store = await make_store(small_settings(tmp_path / "s", flush_disk_type=FlushDiskType.SYNC_FLUSH), fsync=fsync)
    before = store.flusher.fsync_calls
    results = await asyncio.gather(*(store.put(request(body=b"x" * 200)) for _ in range(200)))
    assert all(r.status is PutStatus.PUT_OK for r in results)
    rounds = store.flusher.fsync_calls - before
    assert 1 <= rounds < 200 / 4  # many puts rode on each fsync
    assert store.commitlog.flushed_offset >= max(r.wrote_offset + r.wrote_bytes for r in results)


async def test_sync_flush_covers_each_put(tmp_path: Path, make_store: StoreFactory) -> None:
    store = await make_store(small_settings(tmp_path / "s", flush_disk_type=FlushDiskType.SYNC_FLUSH))
    for _ in range(5):
        result = await store.put(request())
        assert result.ok
        assert store.commitlog.flushed_offset >= result.wrote_offset + result.wrote_bytes


async def test_flush_timeout(tmp_path: Path, make_store: StoreFactory) -> None:
    fsync = CountingFsync(delay=0.3)
    settings = small_settings(tmp_path / "s", flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=50)
    store = await make_store(settings, fsync=fsync)
    result = await store.put(request(properties={"UNIQ_KEY": "slow"}))
    assert result.status is PutStatus.FLUSH_DISK_TIMEOUT
    assert result.appended and result.queue_offset == 0  # stored, just not confirmed on disk in time
    assert store.get_max_offset("T", 0) == 1
    assert store.stats.flush_timeouts == 1
    fsync.delay = 0


async def test_no_wait_when_producer_says_so(tmp_path: Path, make_store: StoreFactory) -> None:
    fsync = CountingFsync(delay=0.3)
    settings = small_settings(tmp_path / "s", flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=50)
    store = await make_store(settings, fsync=fsync)
    result = await store.put(request(properties={"WAIT": "false"}))
    assert result.status is PutStatus.PUT_OK
    fsync.delay = 0


async def test_fsync_failure_stops_writes(tmp_path: Path, make_store: StoreFactory) -> None:
    fsync = CountingFsync()
    store = await make_store(small_settings(tmp_path / "s", flush_disk_type=FlushDiskType.SYNC_FLUSH), fsync=fsync)
    assert (await store.put(request())).ok
    fsync.fail = True
    failed = await store.put(request())
    assert failed.status is PutStatus.FLUSH_DISK_TIMEOUT
    refused = await store.put(request())
    assert refused.status is PutStatus.SERVICE_NOT_AVAILABLE and "not writeable" in refused.error


async def test_async_flush_runs_in_background(tmp_path: Path, make_store: StoreFactory) -> None:
    fsync = CountingFsync()
    settings = small_settings(tmp_path / "s", flush_commit_log_least_pages=1, flush_interval_commit_log=10)
    store = await make_store(settings, fsync=fsync)
    result = await store.put(request(body=b"x" * 9000))  # more than two pages dirty
    assert result.ok
    for _ in range(200):
        if store.commitlog.flushed_offset >= result.wrote_offset + result.wrote_bytes:
            break
        await asyncio.sleep(0.01)
    assert store.commitlog.flushed_offset >= result.wrote_offset + result.wrote_bytes
    assert fsync.calls >= 1


async def test_close_flushes_and_writes_checkpoint(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    result = await store.put(request())
    await store.close()
    values = checkpoint.read(settings.checkpoint_path)
    assert values.physic_msg_timestamp == result.store_timestamp
    assert values.logics_msg_timestamp == result.store_timestamp
    assert values.index_msg_timestamp == result.store_timestamp
    assert all(s.flushed == s.wrote for s in store.commitlog.segments)


async def test_logic_flush_moves_checkpoint_only_when_thorough(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    result = await store.put(request(properties={"UNIQ_KEY": "a"}))
    await store.flusher.flush()
    assert store._logic_flusher is not None
    await store._logic_flusher.flush(thorough=False)
    partial = checkpoint.read(settings.checkpoint_path)
    assert partial.physic_msg_timestamp == result.store_timestamp
    assert partial.logics_msg_timestamp == 0
    await store.flush()
    assert checkpoint.read(settings.checkpoint_path).logics_msg_timestamp == result.store_timestamp

"""Retention with an injected clock and disk reading: expiry, deleteWhen, forced cleanup, disk full."""

from __future__ import annotations

import os
import time
from pathlib import Path

from store_helpers import StoreFactory, request, small_settings

from rocketq.store.messagestore import GetStatus, MessageStore, PutStatus


class Disk:
    def __init__(self, ratio: float = 0.1) -> None:
        self.ratio = ratio

    def __call__(self, path: Path) -> float:
        return self.ratio


def at_hour(hour: int, days_later: float = 0) -> float:
    today = time.localtime()
    base = time.mktime((today.tm_year, today.tm_mon, today.tm_mday, hour, 30, 0, 0, 0, -1))
    return base + days_later * 86400


async def fill_segments(store: MessageStore, segments: int) -> None:
    target = segments * store.settings.mapped_file_size_commit_log
    i = 0
    while store.max_phy_offset < target or i % 2 == 1:
        result = await store.put(request(queue_id=i % 2, body=b"d" * 2000, properties={"KEYS": f"k{i}"}))
        assert result.ok
        i += 1
    for qid in (0, 1):  # both queues keep a message in the newest segment
        assert (await store.put(request(queue_id=qid, body=b"n"))).ok
    await store.flush()


async def test_expired_segments_deleted_at_delete_when(tmp_path: Path, make_store: StoreFactory) -> None:
    clock = [at_hour(3)]
    settings = small_settings(tmp_path / "s", delete_when="04", file_reserved_time=48,
                              mapped_file_size_consume_queue=20 * 8)
    store = await make_store(settings, clock=lambda: clock[0], disk_usage=Disk())
    await fill_segments(store, 4)
    segments = len(store.commitlog.segments)
    assert await store.retention.run_once() == 0  # 03:30: not the hour
    clock[0] = at_hour(4, days_later=1)
    assert await store.retention.run_once() == 0  # the hour, but files are only a day old
    clock[0] = at_hour(4, days_later=3)
    deleted = await store.retention.run_once()
    assert deleted == segments - 1  # all but the segment being written
    assert len(store.commitlog.segments) == 1
    assert store.min_phy_offset == store.commitlog.segments[0].start
    assert sorted(os.listdir(settings.commitlog_dir)) == [store.commitlog.segments[0].path.name]
    for qid in (0, 1):
        cq = store.queues.by_topic["T"][qid]
        assert cq.min_offset > 0
        first = store.get_messages("T", qid, 0, 1)
        assert first.status is GetStatus.OFFSET_TOO_SMALL and first.next_begin_offset == cq.min_offset
        got = store.get_messages("T", qid, cq.min_offset, 1)
        assert got.status is GetStatus.FOUND
        unit = cq.unit(cq.min_offset)
        assert unit is not None and unit[0] >= store.min_phy_offset
        assert len(cq.files) < 4
    assert store.index is not None and len(store.index.files) >= 1
    assert (await store.put(request())).ok


async def test_disk_pressure_deletes_at_once(tmp_path: Path, make_store: StoreFactory) -> None:
    disk = Disk(0.5)
    settings = small_settings(tmp_path / "s", delete_when="04", disk_max_used_space_ratio=75)
    store = await make_store(settings, clock=lambda: at_hour(12), disk_usage=disk)
    await fill_segments(store, 3)
    assert await store.retention.run_once() == 0
    disk.ratio = 0.8  # above diskMaxUsedSpaceRatio: oldest segments go, expired or not, outside the window
    assert await store.retention.run_once() >= 2
    assert len(store.commitlog.segments) == 1
    assert not store.retention.disk_full
    assert (await store.put(request())).ok


async def test_disk_full_refuses_writes(tmp_path: Path, make_store: StoreFactory) -> None:
    disk = Disk(0.95)
    settings = small_settings(tmp_path / "s", disk_space_warning_level_ratio=90)
    store = await make_store(settings, clock=lambda: at_hour(12), disk_usage=disk)
    assert store.retention.disk_full  # checked at open already
    refused = await store.put(request())
    assert refused.status is PutStatus.DISK_FULL and "diskSpaceWarningLevelRatio" in refused.error
    disk.ratio = 0.5
    await store.retention.run_once()
    assert (await store.put(request())).ok
    assert store.runtime_info()["commitLogDiskRatio"] == "0.5000"


async def test_refusing_writes_reads_the_disk_again_within_a_second(tmp_path: Path, make_store: StoreFactory) -> None:
    """While full, the store does not wait for the next 10 s round to accept writes again."""
    disk = Disk(0.95)
    now = [100.0]
    store = await make_store(small_settings(tmp_path / "s"), disk_usage=disk, monotonic=lambda: now[0])
    assert (await store.put(request())).status is PutStatus.DISK_FULL
    disk.ratio = 0.5
    now[0] += 0.5
    assert (await store.put(request())).status is PutStatus.DISK_FULL  # read again at most once a second
    now[0] += 0.6
    assert (await store.put(request())).ok


async def test_never_deletes_unflushed_or_last(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s", flush_interval_commit_log=60_000, flush_commit_log_least_pages=10_000)
    store = await make_store(settings, clock=lambda: at_hour(4, days_later=30), disk_usage=Disk(0.99))
    i = 0
    while store.max_phy_offset < 2 * settings.mapped_file_size_commit_log:
        store.retention.disk_full = False  # let the writes in; the test is about deletion
        assert (await store.put(request(body=b"u" * 2000))).ok
        i += 1
    assert await store.retention.run_once() == 0  # nothing flushed yet: nothing may go
    await store.flush()
    assert await store.retention.run_once() == 2
    assert len(store.commitlog.segments) == 1

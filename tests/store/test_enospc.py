"""A full disk: puts are refused with an error, the broker lives, nothing acknowledged is lost.

Writes into a sparse mmap on a full disk end the process with SIGBUS. The store reserves
(fallocates) what it writes through its maps, so a full disk is an ENOSPC on the put instead.
These tests make ``posix_fallocate`` fail on demand; tests/integration/test_disk_full.py fills
a real tmpfs under a real broker.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from store_helpers import StoreFactory, request, small_settings

from rocketq.protocol import storedrecords
from rocketq.store import mappedfile
from rocketq.store.messagestore import MessageStore, PutStatus


class DiskSpace:
    """Stands in for ``os.posix_fallocate``: fails with ENOSPC while ``full`` is set."""

    def __init__(self) -> None:
        self.full = False
        self.refused = 0
        self._real = os.posix_fallocate

    def __call__(self, fd: int, offset: int, length: int) -> None:
        if self.full:
            self.refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._real(fd, offset, length)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> DiskSpace:
    space = DiskSpace()
    monkeypatch.setattr(mappedfile.os, "posix_fallocate", space)
    return space


def bodies(store: MessageStore, topic: str = "T", queue_id: int = 0) -> list[bytes]:
    got = store.get_messages(topic, queue_id, 0, 10_000, max_bytes=1 << 30)
    return [storedrecords.decode_stored_record(b).body for b in got.buffers]


async def test_full_disk_refuses_the_put_and_keeps_the_log(tmp_path: Path, make_store: StoreFactory,
                                                        disk: DiskSpace) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    assert (await store.put(request(body=b"first"))).ok
    stored = [b"first"]
    end, count = store.max_phy_offset, 1
    disk.full = True
    refused = 0
    for _ in range(1000):  # puts go on into blocks already reserved, then the files must grow
        if refused == 3:
            break
        result = await store.put(request(body=b"b%d" % len(stored) * 1000))
        if result.ok:
            stored.append(b"b%d" % len(stored) * 1000)
            end, count = store.max_phy_offset, store.get_max_offset("T", 0)
            continue
        assert result.status is PutStatus.DISK_FULL and "no space" in result.error and not result.appended
        refused += 1
        assert (store.max_phy_offset, store.get_max_offset("T", 0)) == (end, count)  # nothing half-stored
    assert refused == 3 and bodies(store) == stored  # reads keep working
    disk.full = False
    after = await store.put(request(body=b"after"))
    assert after.ok and after.wrote_offset == end and after.queue_offset == count
    await store.close()
    again = await make_store(settings)
    assert bodies(again) == [*stored, b"after"]


async def test_failed_batch_is_not_half_stored(tmp_path: Path, make_store: StoreFactory, disk: DiskSpace) -> None:
    """A batch that crosses into a segment the disk cannot hold is undone whole, blank included."""
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    assert (await store.put(request(body=b"first"))).ok
    end = store.max_phy_offset
    disk.full = True
    batch = [request(body=b"c" * 4000, queue_id=i % 2) for i in range(40)]  # more than one 64 KiB segment
    result = await store.put_batch(batch)
    assert result.status is PutStatus.DISK_FULL and not result.appended
    assert store.max_phy_offset == end and len(store.commitlog.segments) == 1
    assert (store.get_max_offset("T", 0), store.get_max_offset("T", 1)) == (1, 0)
    segment = store.commitlog.segments[0]
    assert not any(segment.view[end:])  # no record and no END_OF_FILE blank left behind
    await store.close()
    disk.full = False
    again = await make_store(settings)
    assert again.max_phy_offset == end and bodies(again) == [b"first"]
    assert (await again.put_batch(batch)).ok


async def test_full_disk_while_creating_a_consume_queue_file(tmp_path: Path, make_store: StoreFactory,
                                                            disk: DiskSpace) -> None:
    """Dispatch cannot skip: when the queue's next file cannot be made, the put is undone."""
    settings = small_settings(tmp_path / "s", mapped_file_size_consume_queue=20 * 4)
    store = await make_store(settings)
    for i in range(4):  # the queue's first file is full now
        assert (await store.put(request(body=b"%d" % i))).ok
    end = store.max_phy_offset
    disk.full = True
    result = await store.put(request(body=b"x"))
    assert result.status is PutStatus.DISK_FULL
    assert store.max_phy_offset == end and store.get_max_offset("T", 0) == 4
    assert len(list(settings.consumequeue_dir.glob("T/0/*"))) == 1
    disk.full = False
    assert (await store.put(request(body=b"x"))).queue_offset == 4
    assert bodies(store) == [b"0", b"1", b"2", b"3", b"x"]


async def test_full_disk_while_creating_an_index_file(tmp_path: Path, make_store: StoreFactory,
                                                     disk: DiskSpace) -> None:
    settings = small_settings(tmp_path / "s", mapped_file_size_consume_queue=20 * 1000)
    store = await make_store(settings)
    for i in range(settings.max_index_num - 1):  # entry 0 is never used: the index file is full
        assert (await store.put(request(body=b"i", properties={"UNIQ_KEY": f"U{i}"}))).ok
    end = store.max_phy_offset
    disk.full = True
    result = await store.put(request(body=b"next", properties={"UNIQ_KEY": "NEXT"}))
    assert result.status is PutStatus.DISK_FULL
    assert store.max_phy_offset == end and store.get_max_offset("T", 0) == settings.max_index_num - 1
    assert len(list(settings.index_dir.iterdir())) == 1  # no half-made file left behind
    assert len(store.query_message("T", "U7", 10, 0, 1 << 62).buffers) == 1
    disk.full = False
    assert (await store.put(request(body=b"next", properties={"UNIQ_KEY": "NEXT"}))).ok
    assert len(store.query_message("T", "NEXT", 10, 0, 1 << 62).buffers) == 1

"""Files of the wrong size at start-up: a short last segment is repaired, older ones stop the store,
and damaged derived files (ConsumeQueue, IndexFile) are rebuilt from the CommitLog."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from store_helpers import StoreFactory, put_many, request, small_settings

from rocketq.protocol import storedrecords
from rocketq.store import mappedfile
from rocketq.store.mappedfile import StoreFileError
from rocketq.store.messagestore import MessageStore
from rocketq.store.settings import StoreSettings


def bodies(store: MessageStore, queue_id: int = 0) -> list[bytes]:
    got = store.get_messages("T", queue_id, 0, 10_000, max_bytes=1 << 30)
    return [storedrecords.decode_stored_record(b).body for b in got.buffers]


async def fill(make_store: StoreFactory, settings: StoreSettings, count: int) -> list[int]:
    """``count`` messages of 2000 bytes over several segments, cleanly stopped; their offsets."""
    store = await make_store(settings)
    results = await put_many(store, count, body=b"s" * 2000)
    await store.close()
    return [r.wrote_offset for r in results]


async def test_short_last_segment_is_extended_and_recovered(tmp_path: Path, make_store: StoreFactory,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    settings = small_settings(tmp_path / "s")
    segment_size = settings.mapped_file_size_commit_log
    offsets = await fill(make_store, settings, 80)  # 2.5 segments
    last = sorted(settings.commitlog_dir.iterdir())[-1]
    cut = offsets[-3] + 100  # inside the third-to-last record: it and the two after are lost
    os.truncate(last, cut - int(last.name))
    store = await make_store(settings)
    assert os.path.getsize(last) == segment_size
    assert f"{last} is {cut - int(last.name)} bytes" in caplog.text
    assert store.max_phy_offset == offsets[-3] and store.get_max_offset("T", 0) == 77
    assert bodies(store) == [b"s" * 2000] * 77
    assert (await store.put(request(body=b"next"))).queue_offset == 77


async def test_wrong_size_older_segment_is_a_start_up_error(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    await fill(make_store, settings, 80)
    first = sorted(settings.commitlog_dir.iterdir())[0]
    os.truncate(first, 1000)
    with pytest.raises(StoreFileError, match=str(first)) as raised:
        await make_store(settings)
    assert "\n" not in str(raised.value)


async def test_changed_segment_size_is_a_start_up_error(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    await fill(make_store, settings, 80)
    bigger = small_settings(tmp_path / "s", mapped_file_size_commit_log=2 * settings.mapped_file_size_commit_log)
    with pytest.raises(StoreFileError, match="mappedFileSizeCommitLog"):
        await make_store(bigger)


async def test_short_last_consume_queue_file_is_rebuilt(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    for i in range(70):  # queue 0 gets two files (50 units each), queue 1 the newest records
        assert (await store.put(request(queue_id=0, body=b"%d" % i))).ok
    assert (await store.put(request(queue_id=1, body=b"other"))).ok
    await store.close()
    cq_files = sorted((settings.consumequeue_dir / "T" / "0").iterdir())
    os.truncate(cq_files[-1], 7 * 20 + 9)  # 7 whole units and part of one
    again = await make_store(settings)
    assert os.path.getsize(cq_files[-1]) == settings.mapped_file_size_consume_queue
    assert again.get_max_offset("T", 0) == 70
    assert bodies(again) == [b"%d" % i for i in range(70)]


async def test_damaged_older_consume_queue_file_is_rebuilt(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    for i in range(120):
        assert (await store.put(request(queue_id=i % 2, body=b"%d" % i))).ok
    await store.close()
    first = sorted((settings.consumequeue_dir / "T" / "1").iterdir())[0]
    os.truncate(first, 100)
    again = await make_store(settings)
    assert again.get_max_offset("T", 1) == 60
    assert bodies(again, 1) == [b"%d" % i for i in range(1, 120, 2)]
    assert bodies(again, 0) == [b"%d" % i for i in range(0, 120, 2)]


async def test_damaged_index_file_is_rebuilt(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    await put_many(store, 500, keys="k")  # two index files (400 entries each, two keys a message)
    assert len(list(settings.index_dir.iterdir())) >= 2
    await store.close()
    index_files = sorted(settings.index_dir.iterdir())
    os.truncate(index_files[0], 1000)
    again = await make_store(settings)
    found = again.query_message("T", "U3", 10, 0, 1 << 62).buffers
    assert [storedrecords.decode_stored_record(b).uniq_key for b in found] == ["U3"]
    assert len(again.query_message("T", "U499", 10, 0, 1 << 62).buffers) == 1


def test_load_segments_extends_only_the_last_file(tmp_path: Path) -> None:
    size = 8192
    for start in (0, size):
        mappedfile.MappedFile(tmp_path / mappedfile.file_name(start), size, create=True).close()
    os.truncate(tmp_path / mappedfile.file_name(size), 45)
    files = mappedfile.load_segments(tmp_path, size, unit=20)
    assert [os.path.getsize(f.path) for f in files] == [size, size]
    assert files[-1].repaired_from == 40  # whole units kept
    for f in files:
        f.close()
    os.truncate(tmp_path / mappedfile.file_name(size), size * 2)  # larger: a changed size setting
    with pytest.raises(StoreFileError, match="expected 8192"):
        mappedfile.load_segments(tmp_path, size)

"""Recovery after simulated crashes: torn tails, corrupt records, lost ConsumeQueue and index data."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from store_helpers import StoreFactory, crash, put_many, request, small_settings

from rocketq.protocol import javahash, storedrecords
from rocketq.store import mappedfile
from rocketq.store.consumequeue import UNIT
from rocketq.store.messagestore import GetStatus, MessageStore, PutResult
from rocketq.store.settings import StoreSettings


def segment_path(settings: StoreSettings, offset: int) -> Path:
    start = offset - offset % settings.mapped_file_size_commit_log
    return settings.commitlog_dir / mappedfile.file_name(start)


def write_at(path: Path, pos: int, data: bytes) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, data, pos)
    finally:
        os.close(fd)


def bodies(store: MessageStore, queue_id: int = 0) -> list[bytes]:
    got = store.get_messages("T", queue_id, 0, 10_000, max_bytes=1 << 30)
    return [storedrecords.decode_stored_record(b).body for b in got.buffers]


async def test_garbage_after_last_record(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    results = await put_many(store, 20)
    end = store.max_phy_offset
    await crash(store)
    assert settings.abort_path.exists()
    write_at(segment_path(settings, end), end % settings.mapped_file_size_commit_log, b"\xde\xad\xbe\xef" * 50)
    again = await make_store(settings)
    report = again.recovery_report
    assert report is not None and report.abnormal and report.torn_tail and report.end_offset == end
    assert again.max_phy_offset == end and again.get_max_offset("T", 0) == 20
    assert len(bodies(again)) == 20
    follow = await again.put(request(body=b"after"))
    assert follow.wrote_offset == end and follow.queue_offset == 20
    assert bodies(again)[-1] == b"after"
    assert results[-1].wrote_offset < end


async def test_torn_last_record(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    results = await put_many(store, 10, body=b"z" * 300)
    await crash(store)
    last = results[-1]
    # the last record's second half never reached the disk
    half = last.wrote_offset + last.wrote_bytes // 2
    write_at(segment_path(settings, half), half % settings.mapped_file_size_commit_log,
             bytes(last.wrote_offset + last.wrote_bytes - half))
    again = await make_store(settings)
    assert again.max_phy_offset == last.wrote_offset
    assert again.get_max_offset("T", 0) == 9  # the unit of the lost record was dropped
    assert again.look_message_by_offset(last.wrote_offset) is None
    assert (await again.put(request())).queue_offset == 9


def flip_body_byte(settings: StoreSettings, bad: PutResult, body_len: int) -> None:
    """Overwrite the first body byte of the record ``bad`` (written by ``put_many``)."""
    props = len("UNIQ_KEY\x01U6\x02TAGS\x01t\x02")
    body_at = bad.wrote_offset + bad.wrote_bytes - body_len - 2 - props - 2
    write_at(segment_path(settings, body_at), body_at % settings.mapped_file_size_commit_log, b"X")


@pytest.mark.parametrize("clean_stop", [False, True], ids=["after-crash", "after-clean-stop"])
async def test_corrupt_body_cuts_the_log_there(tmp_path: Path, make_store: StoreFactory, clean_stop: bool,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """checkCRCOnRecover applies to both recoveries, as in RocketMQ's recoverNormally."""
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    results = await put_many(store, 10, body=b"q" * 100)
    if clean_stop:
        await store.close()
        assert not settings.abort_path.exists()
    else:
        await crash(store)
    bad = results[6]
    flip_body_byte(settings, bad, 100)
    again = await make_store(settings)
    assert again.max_phy_offset == bad.wrote_offset
    assert again.get_max_offset("T", 0) == 6
    assert bodies(again) == [b"q" * 100] * 6
    assert f"body CRC mismatch at offset {bad.wrote_offset}" in caplog.text


async def test_crc_check_can_be_turned_off(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s", check_crc_on_recover=False)
    store = await make_store(settings)
    results = await put_many(store, 10, body=b"q" * 100)
    await store.close()
    flip_body_byte(settings, results[6], 100)
    again = await make_store(settings)
    assert again.get_max_offset("T", 0) == 10


async def test_rebuilds_consume_queues_and_index(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    for i in range(300):  # several commitlog segments, several consume queue files
        result = await store.put(request(queue_id=i % 3, body=b"r" * 500,
                                         properties={"UNIQ_KEY": f"U{i}", "KEYS": f"k{i}", "TAGS": "a"}))
        assert result.ok
    assert len(store.commitlog.segments) >= 3
    expected = {qid: store.get_max_offset("T", qid) for qid in range(3)}
    await crash(store)
    shutil.rmtree(settings.consumequeue_dir)
    shutil.rmtree(settings.index_dir)
    again = await make_store(settings)
    assert {qid: again.get_max_offset("T", qid) for qid in range(3)} == expected
    got = again.get_messages("T", 1, 0, 1000, max_bytes=1 << 30)
    assert got.status is GetStatus.FOUND and got.message_count == expected[1]
    assert [storedrecords.decode_stored_record(b).queue_offset for b in got.buffers] == list(range(expected[1]))
    assert got.tag_codes[0] == javahash.tag_hash("a")
    found = again.query_message("T", "k123", 10, 0, 1 << 62).buffers
    assert [storedrecords.decode_stored_record(b).uniq_key for b in found] == ["U123"]
    assert len(again.query_message("T", "U299", 10, 0, 1 << 62).buffers) == 1


async def test_stale_consume_queue_units_are_dropped(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    await put_many(store, 3)
    end = store.max_phy_offset
    cq_file = store.queues.by_topic["T"][0].files[0].path
    await crash(store)
    write_at(cq_file, 3 * 20, UNIT.pack(end + 1000, 100, 0))  # a unit for bytes the log never kept
    again = await make_store(settings)
    assert again.get_max_offset("T", 0) == 3


async def test_recovery_is_idempotent(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    await put_many(store, 30, keys="k")
    await crash(store)
    first = await make_store(settings)
    state = (first.max_phy_offset, first.topic_queue_table(), bodies(first))
    await crash(first)
    second = await make_store(settings)
    assert (second.max_phy_offset, second.topic_queue_table(), bodies(second)) == state
    assert len(second.query_message("T", "k", 64, 0, 1 << 62).buffers) == 30
    await second.close()
    third = MessageStore(settings, ("127.0.0.1", 10911))
    third.open()
    report = third.recovery_report
    assert report is not None and not report.abnormal and report.records_dispatched == 0
    assert third.topic_queue_table() == state[1]
    await third.close()


async def test_empty_store_and_roll_boundary(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    await crash(store)
    again = await make_store(settings)
    assert again.max_phy_offset == 0
    segment = settings.mapped_file_size_commit_log
    while again.max_phy_offset < segment:  # fill until the log rolls to a second segment
        assert (await again.put(request(body=b"f" * 1000))).ok
    count = again.get_max_offset("T", 0)
    await crash(again)
    final = await make_store(settings)
    assert final.get_max_offset("T", 0) == count
    assert len(bodies(final)) == count

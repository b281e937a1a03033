"""CommitLog: appends with stamped positions, roll-over with END_OF_FILE, reads, cutting the end."""

from __future__ import annotations

import struct
from pathlib import Path

from rocketq.protocol import storedrecords
from rocketq.store import commitlog as commitlog_mod
from rocketq.store.commitlog import CommitLog

SEGMENT = 4096


def record(i: int, body_size: int = 100) -> tuple[bytes, int]:
    raw = storedrecords.encode_stored_record(topic="T", queue_id=0, body=bytes([i % 256]) * body_size,
                                       properties={"UNIQ_KEY": f"id{i}"}, store_host=("10.0.0.1", 10911))
    return raw, storedrecords.store_timestamp_pos(0)


def test_append_stamps_and_reads(tmp_path: Path) -> None:
    log = CommitLog(tmp_path, SEGMENT)
    log.load()
    raw, ts_pos = record(1)
    phys = log.append(raw, 7, 12345, ts_pos)
    assert phys == 0 and log.max_offset == len(raw) and log.last_store_timestamp == 12345
    view = log.read_record(0)
    assert view is not None
    rec = storedrecords.decode_stored_record(view, check_crc=True)
    assert (rec.queue_offset, rec.commit_log_offset, rec.store_timestamp) == (7, 0, 12345)
    assert rec.offset_msg_id == "0A00000100002A9F0000000000000000"
    assert log.store_timestamp_at(0) == 12345
    assert log.read(0, len(raw)) == view
    assert log.read(0, len(raw) + 1) is None  # beyond what was written
    assert log.read_record(1) is None
    assert log.read_record(10 ** 9) is None
    assert log.store_timestamp_at(5) == -1
    log.close()


def test_roll_over_writes_blank(tmp_path: Path) -> None:
    log = CommitLog(tmp_path, SEGMENT)
    log.load()
    raw, ts_pos = record(0, body_size=1000)
    offsets = [log.append(raw, i, i, ts_pos) for i in range(8)]
    size = len(raw)
    per_segment = (SEGMENT - commitlog_mod.END_FILE_MIN_BLANK_LENGTH) // size
    assert offsets[per_segment] == SEGMENT  # the next record starts the second segment
    assert [s.path.name for s in log.segments][:2] == ["00000000000000000000", "00000000000000004096"]
    first = log.segments[0]
    blank_at = per_segment * size
    total, magic = struct.unpack_from(">ii", first.view, blank_at)
    assert (total, magic) == (SEGMENT - blank_at, storedrecords.BLANK_MAGIC)
    records = list(storedrecords.iter_stored_records(first.view, strict=True))
    assert len(records) == per_segment
    for i, phys in enumerate(offsets):
        view = log.read_record(phys)
        assert view is not None
        assert storedrecords.decode_stored_record(view).queue_offset == i
    assert log.fits_in_segment(SEGMENT - 8) and not log.fits_in_segment(SEGMENT - 7)
    log.close()


def test_reload_and_set_end(tmp_path: Path) -> None:
    log = CommitLog(tmp_path, SEGMENT)
    log.load()
    raw, ts_pos = record(0, body_size=1000)
    offsets = [log.append(raw, i, i, ts_pos) for i in range(9)]
    log.close()
    again = CommitLog(tmp_path, SEGMENT)
    again.load()
    assert len(again.segments) == 3
    cut = offsets[5]
    again.set_end(cut + 10)  # inside a record: the bytes from there on are gone
    assert again.max_offset == cut + 10
    assert len(again.segments) == 2
    seg = again.segment_for(cut)
    assert seg is not None and not any(seg.view[cut + 10 - seg.start:])
    assert again.flushed_offset == cut + 10
    again.close()


def test_flush_bookkeeping(tmp_path: Path) -> None:
    log = CommitLog(tmp_path, SEGMENT)
    log.load()
    raw, ts_pos = record(0, body_size=1000)
    for i in range(6):
        log.append(raw, i, 100 + i, ts_pos)
    assert [s.start for s in log.unflushed_below(log.max_offset)] == [0, SEGMENT]
    log.mark_flushed(SEGMENT, 103)
    assert [s.start for s in log.unflushed_below(log.max_offset)] == [SEGMENT]
    assert (log.flushed_offset, log.flushed_store_timestamp) == (SEGMENT, 103)
    removed = log.remove_head(5)
    assert [s.start for s in removed] == [0] and log.min_offset == SEGMENT
    for s in removed:
        s.destroy()
    log.close()

"""ConsumeQueue: 20-byte units, files of N units, recovery, truncation, rebuild, cleanup."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.store import consumequeue
from rocketq.store.consumequeue import BLANK_UNIT_SIZE, UNIT, ConsumeQueue

FILE = 20 * 10  # ten units per file


def make(tmp_path: Path) -> ConsumeQueue:
    cq = ConsumeQueue(tmp_path / "T" / "0", "T", 0, FILE)
    cq.load()
    return cq


@settings(max_examples=60, deadline=None)
@given(count=st.integers(0, 45), first=st.integers(0, 40), reads=st.lists(
    st.tuples(st.integers(0, 50), st.integers(1, 60), st.integers(0, 60)), min_size=1, max_size=6))
def test_units_runs_across_files_match_unit_by_unit(count: int, first: int,
                                                     reads: list[tuple[int, int, int]]) -> None:
    """``units`` (one unpack per file, chained) yields what ``unit`` gives offset by offset,
    across file boundaries, from a queue that starts above 0, and when a reader stops early."""
    with tempfile.TemporaryDirectory() as tmp:
        cq = ConsumeQueue(Path(tmp) / "T" / "0", "T", 0, FILE)
        cq.load()
        for i in range(count):
            cq.put_at(first + i, 1000 + i * 7, 7 + i, -i * 3)
        for offset, limit, taken in reads:
            if not cq.min_offset <= offset < cq.max_offset:
                continue
            expected = [cq.unit(o) for o in range(offset, min(cq.max_offset, offset + limit))]
            assert list(cq.units(offset, limit)) == expected
            read = cq.units(offset, limit)
            assert [u for _, u in zip(range(taken), read, strict=False)] == expected[:taken]
        cq.close()


def test_append_read_and_roll(tmp_path: Path) -> None:
    cq = make(tmp_path)
    assert (cq.min_offset, cq.max_offset) == (0, 0)
    for i in range(25):
        cq.append(i * 100, 100, -i)
    assert cq.max_offset == 25
    assert [f.path.name for f in cq.files] == ["00000000000000000000", "00000000000000000200",
                                              "00000000000000000400"]
    assert cq.unit(12) == (1200, 100, -12)
    assert cq.unit(25) is None and cq.unit(-1) is None
    assert [u[0] for u in cq.units(8, 5)] == [800, 900, 1000, 1100, 1200]
    assert len(list(cq.units(20, 100))) == 5
    assert cq.last_phys_end() == 2500
    raw = (tmp_path / "T" / "0" / "00000000000000000200").read_bytes()
    assert UNIT.unpack_from(raw, 20) == (1100, 100, -11)  # big-endian, RocketMQ's layout
    cq.close()


def test_recover_and_truncate(tmp_path: Path) -> None:
    cq = make(tmp_path)
    for i in range(15):
        cq.append(i * 100, 100, 0)
    cq.close()
    again = make(tmp_path)
    again.recover()
    assert again.max_offset == 15
    again.truncate_beyond(1050)  # units for bytes beyond 1050 point at lost data
    assert again.max_offset == 10
    assert len(again.files) == 1  # the emptied second file is gone
    again.truncate_beyond(0)
    assert again.max_offset == 0
    again.close()


def test_put_at_is_idempotent_and_fills_holes(tmp_path: Path) -> None:
    cq = make(tmp_path)
    cq.put_at(0, 0, 10, 1)
    cq.put_at(0, 0, 10, 1)
    assert cq.max_offset == 1
    cq.put_at(0, 0, 10, 99)  # disagrees with the commitlog: rewritten
    assert cq.unit(0) == (0, 10, 99)
    cq.put_at(3, 30, 10, 3)  # units 1 and 2 never came: placeholders
    assert cq.max_offset == 4
    assert cq.unit(1) == (0, BLANK_UNIT_SIZE, 0)
    cq.close()


def test_queue_starting_mid_file(tmp_path: Path) -> None:
    cq = make(tmp_path)
    cq.put_at(13, 5000, 10, 0)
    assert (cq.min_offset, cq.max_offset) == (13, 14)
    assert cq.files[0].path.name == "00000000000000000200"
    cq.close()
    again = make(tmp_path)
    again.recover()
    again.correct_min_offset(0)
    assert (again.min_offset, again.max_offset) == (13, 14)
    again.close()


def test_delete_below_and_min_offset(tmp_path: Path) -> None:
    cq = make(tmp_path)
    for i in range(25):
        cq.append(i * 100, 100, 0)
    assert cq.delete_below(1250) == 1
    assert cq.files[0].path.name == "00000000000000000200"
    assert cq.min_offset == 13
    assert cq.delete_below(10 ** 9) == 1  # never the last file
    assert len(cq.files) == 1 and cq.min_offset == 25 and cq.max_offset == 25
    cq.destroy()
    assert not (tmp_path / "T" / "0").exists()


def test_load_all(tmp_path: Path) -> None:
    for qid in (0, 3):
        cq = ConsumeQueue(tmp_path / "T" / str(qid), "T", qid, FILE)
        cq.append(0, 1, 0)
        cq.close()
    (tmp_path / "T" / "junk").mkdir()
    (tmp_path / "stray-file").write_text("x")
    queues = consumequeue.load_all(tmp_path, FILE)
    assert sorted((q.topic, q.queue_id) for q in queues) == [("T", 0), ("T", 3)]
    for q in queues:
        q.close()
    assert consumequeue.load_all(tmp_path / "none", FILE) == []
    assert consumequeue.unit_file_size(1001) == 1000


def test_reserves_a_small_window_ahead(tmp_path: Path) -> None:
    """Every queue has a file being written: each reserves 64 KiB ahead, not megabytes."""
    cq = ConsumeQueue(tmp_path / "T" / "0", "T", 0, 6_000_000)
    cq.load()
    cq.append(0, 100, 0)
    allocated = os.stat(cq.files[0].path).st_blocks * 512
    assert consumequeue.RESERVE_WINDOW <= allocated < 2 * consumequeue.RESERVE_WINDOW
    for i in range(1, consumequeue.RESERVE_WINDOW // 20 + 2):  # past the window: the next one
        cq.append(i * 100, 100, 0)
    assert os.stat(cq.files[0].path).st_blocks * 512 >= 2 * consumequeue.RESERVE_WINDOW
    cq.close()

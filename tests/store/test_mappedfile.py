"""MappedFile: creation, loading checks, tail truncation, closing with readers attached."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketq.store import mappedfile
from rocketq.store.mappedfile import MappedFile, StoreFileError

SIZE = 8192


def test_create_write_reload(tmp_path: Path) -> None:
    f = MappedFile(tmp_path / mappedfile.file_name(0), SIZE, create=True)
    assert f.path.name == "00000000000000000000"
    assert (f.start, f.end, f.remaining) == (0, SIZE, SIZE)
    f.buf[0:5] = b"hello"
    f.wrote = 5
    f.sync_fd()
    f.close()
    f.close()  # idempotent
    again = MappedFile(tmp_path / mappedfile.file_name(0), SIZE)
    assert bytes(again.view[:5]) == b"hello"
    again.close()


def test_create_refuses_existing_and_wrong_sizes(tmp_path: Path) -> None:
    MappedFile(tmp_path / mappedfile.file_name(0), SIZE, create=True).close()
    with pytest.raises(StoreFileError):
        MappedFile(tmp_path / mappedfile.file_name(0), SIZE, create=True)
    with pytest.raises(StoreFileError, match="expected"):
        MappedFile(tmp_path / mappedfile.file_name(0), SIZE * 2)
    with pytest.raises(StoreFileError, match="20 digits"):
        MappedFile(tmp_path / "abc", SIZE, create=True)
    with pytest.raises(StoreFileError, match="cannot open"):
        MappedFile(tmp_path / mappedfile.file_name(SIZE), SIZE)


def test_truncate_tail_zeroes(tmp_path: Path) -> None:
    f = MappedFile(tmp_path / mappedfile.file_name(0), SIZE, create=True)
    f.buf[:] = b"\xff" * SIZE
    f.wrote = f.flushed = SIZE
    f.truncate_tail(100)
    assert (f.wrote, f.flushed) == (100, 100)
    assert bytes(f.view[:100]) == b"\xff" * 100
    assert not any(f.view[100:])
    assert os.path.getsize(f.path) == SIZE
    with pytest.raises(ValueError):
        f.truncate_tail(SIZE + 1)
    f.close()


def test_load_segments_checks(tmp_path: Path) -> None:
    for start in (0, SIZE, 2 * SIZE):
        MappedFile(tmp_path / mappedfile.file_name(start), SIZE, create=True).close()
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / mappedfile.file_name(3 * SIZE)).touch()  # interrupted roll: empty last file
    files = mappedfile.load_segments(tmp_path, SIZE)
    assert [f.start for f in files] == [0, SIZE, 2 * SIZE]
    assert not (tmp_path / mappedfile.file_name(3 * SIZE)).exists()
    for f in files:
        f.close()
    (tmp_path / mappedfile.file_name(SIZE)).unlink()
    with pytest.raises(StoreFileError, match="missing"):
        mappedfile.load_segments(tmp_path, SIZE)
    assert mappedfile.load_segments(tmp_path / "absent", SIZE) == []


def test_destroy_while_a_reader_holds_a_slice(tmp_path: Path) -> None:
    f = MappedFile(tmp_path / mappedfile.file_name(0), SIZE, create=True)
    f.buf[0:4] = b"data"
    held = f.view[0:4]
    f.destroy()
    assert not f.path.exists()
    assert bytes(held) == b"data"  # the reader's bytes stay valid until it lets go
    held.release()


def test_reserve_allocates_a_window_ahead(tmp_path: Path) -> None:
    size = 3 * mappedfile.RESERVE_WINDOW
    f = MappedFile(tmp_path / mappedfile.file_name(0), size, create=True)
    assert os.stat(f.path).st_blocks == 0  # created sparse
    f.reserve(10)
    assert f.reserved == mappedfile.RESERVE_WINDOW
    assert os.stat(f.path).st_blocks * 512 >= mappedfile.RESERVE_WINDOW  # backed by blocks now
    f.reserve(10)  # already reserved: nothing more
    assert f.reserved == mappedfile.RESERVE_WINDOW
    f.reserve(size)
    assert f.reserved == size
    f.wrote = 5000
    f.truncate_tail(5000)  # the tail's blocks are freed: what is reserved shrinks with them
    assert f.reserved == 4096 and os.stat(f.path).st_blocks * 512 < mappedfile.RESERVE_WINDOW
    f.close()

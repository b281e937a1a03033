"""Start-up failures are typed, one-line StoreErrors: no raw OSError or ValueError escapes open()."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from store_helpers import STORE_HOST, StoreFactory, put_many, small_settings

from rocketq.store import mappedfile
from rocketq.store.errors import StoreError, StoreFileError, StoreLockedError
from rocketq.store.messagestore import MessageStore


def open_error(store: MessageStore, kind: type[StoreError] = StoreError) -> str:
    with pytest.raises(kind) as raised:
        store.open()
    text = str(raised.value)
    assert "\n" not in text
    return text


def test_root_that_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    store = MessageStore(small_settings(tmp_path / "file" / "store"), STORE_HOST)
    assert str(tmp_path / "file") in open_error(store)


async def test_locked_store_names_the_holder(tmp_path: Path, make_store: StoreFactory) -> None:
    settings = small_settings(tmp_path / "s")
    await make_store(settings)
    text = open_error(MessageStore(settings, STORE_HOST), StoreLockedError)
    assert "in use" in text and f"pid {os.getpid()}" in text


def test_os_errors_inside_the_store_become_store_errors(tmp_path: Path) -> None:
    settings = small_settings(tmp_path / "s")
    settings.root_dir.mkdir()
    settings.index_dir.write_text("not a directory")
    assert str(settings.index_dir) in open_error(MessageStore(settings, STORE_HOST))
    assert issubclass(StoreFileError, StoreError) and issubclass(StoreLockedError, StoreError)


async def test_full_disk_while_rebuilding_holds_the_start(tmp_path: Path, make_store: StoreFactory,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-dispatch at start-up does not skip what it cannot write: the store does not open."""
    settings = small_settings(tmp_path / "s")
    store = await make_store(settings)
    await put_many(store, 30)
    await store.close()
    shutil.rmtree(settings.consumequeue_dir)
    real = os.posix_fallocate

    def no_space(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(mappedfile.os, "posix_fallocate", no_space)
    assert "No space left on device" in open_error(MessageStore(settings, STORE_HOST))
    monkeypatch.setattr(mappedfile.os, "posix_fallocate", real)
    again = await make_store(settings)
    assert again.get_max_offset("T", 0) == 30

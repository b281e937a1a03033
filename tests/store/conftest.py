"""Fixtures for store tests: small files, a temporary root, a store that is always closed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from rocketq.store.messagestore import MessageStore, StoreState
from rocketq.store.settings import StoreSettings

STORE_HOST = ("127.0.0.1", 10911)


def small_settings(root: Path, **overrides: Any) -> StoreSettings:
    values: dict[str, Any] = dict(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 50,
        max_hash_slot_num=64,
        max_index_num=400,
        flush_interval_commit_log=20,
        flush_interval_consume_queue=50,
    )
    values.update(overrides)
    return StoreSettings(**values)


@pytest.fixture
def settings(tmp_path: Path) -> StoreSettings:
    return small_settings(tmp_path / "store")


StoreFactory = Callable[..., Any]


@pytest.fixture
async def make_store(tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """``await make_store(settings=None, start=True, **hooks)`` opens (and starts) a store; all
    stores made are closed at the end of the test."""
    made: list[MessageStore] = []

    async def factory(settings: StoreSettings | None = None, *, start: bool = True, **hooks: Any) -> MessageStore:
        store = MessageStore(settings or small_settings(tmp_path / "store"), STORE_HOST, **hooks)
        made.append(store)
        store.open()
        if start:
            await store.start()
        return store

    yield factory
    for store in made:
        await store.close()


async def crash(store: MessageStore) -> None:
    """Stop a store the way a killed process stops: no final flush, no checkpoint, abort file
    left behind. Written bytes stay in the page cache, as they would after a process crash."""
    await store.retention.close()
    await store.flusher.close()
    if store._logic_flusher is not None:
        await store._logic_flusher.close()
    store._close_files()
    store._unlock()
    store.state = StoreState.CLOSED  # the fixture's close() must not tidy up after the "crash"

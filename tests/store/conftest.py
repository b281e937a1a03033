"""Fixtures for store tests: small files, a temporary root, a store that is always closed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import STORE_HOST, StoreFactory, small_settings

from rocketq.store.messagestore import MessageStore
from rocketq.store.settings import StoreSettings


@pytest.fixture
def settings(tmp_path: Path) -> StoreSettings:
    return small_settings(tmp_path / "store")


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

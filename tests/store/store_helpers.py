"""Small builders shared by the store tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketq.store.messagestore import MessageStore, PutRequest, PutResult, StoreState
from rocketq.store.settings import StoreSettings


def request(**overrides: Any) -> PutRequest:
    values: dict[str, Any] = dict(topic="T", queue_id=0, body=b"body", properties={})
    values.update(overrides)
    return PutRequest(**values)


async def put_many(store: MessageStore, count: int, *, keys: str | None = None, body: bytes = b"payload",
                   queue_id: int = 0) -> list[PutResult]:
    results = []
    for i in range(count):
        props = {"UNIQ_KEY": f"U{i}", "TAGS": "t"}
        if keys:
            props["KEYS"] = keys
        result = await store.put(request(body=body, properties=props, queue_id=queue_id))
        assert result.ok, result
        results.append(result)
    return results


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


StoreFactory = Callable[..., Any]


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

"""Small builders shared by the store tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import UNIT_SIZE, ConsumeQueue
from rocketq.store.mappedfile import MappedFile, file_name
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
CLOCK_S = 1_700_000_000.0
"""The wall clock of ``running_store``'s store (its index file names)."""


@contextlib.asynccontextmanager
async def running_store(root: Path, **overrides: Any) -> AsyncIterator[MessageStore]:
    """A started store of ``small_settings`` at ``root`` on a fixed clock, without fsyncs; closed after."""
    store = MessageStore(small_settings(root, **overrides), STORE_HOST, clock=lambda: CLOCK_S, fsync=lambda fd: None)
    store.open()
    await store.start()
    try:
        yield store
    finally:
        await store.close()


def put_stats(store: MessageStore) -> tuple[int, ...]:
    """The put statistics two append paths must agree on."""
    stats = store.stats
    return (stats.put_requests, stats.put_message_times, stats.put_message_bytes, stats.put_failures,
            sum(stats.put_latency))


def log_and_queue(root: Path, state: dict[str, int], segment: int, queue_file: int) -> tuple[CommitLog, ConsumeQueue]:
    """A CommitLog with one segment and queue T/0 with one file, each at the write position,
    reserved mark and start that ``state`` gives (log_wrote, log_reserved, log_start and the
    unit_* twins): the in-place append tests' starting point."""
    log = CommitLog(root / "commitlog", segment)
    log.directory.mkdir(parents=True)
    seg = MappedFile(log.directory / file_name(state["log_start"]), segment, create=True)
    seg.wrote, seg.reserved = state["log_wrote"], state["log_reserved"]
    log.segments.append(seg)
    queue = ConsumeQueue(root / "cq", "T", 0, queue_file)
    queue.directory.mkdir(parents=True)
    unit_file = MappedFile(queue.directory / file_name(state["unit_start"]), queue_file, create=True)
    unit_file.wrote, unit_file.reserved = state["unit_wrote"], state["unit_reserved"]
    queue.files.append(unit_file)
    return log, queue


def map_states(segment: int, queue_file: int) -> st.SearchStrategy[dict[str, int]]:
    """``log_and_queue`` states: write positions and reserved marks anywhere in one segment and
    one queue file (units whole), each file at the start of its directory or further on."""
    return st.fixed_dictionaries({
        "log_wrote": st.integers(0, segment),
        "log_reserved": st.integers(0, segment),
        "log_start": st.sampled_from([0, segment * 7]),
        "unit_wrote": st.integers(0, queue_file // UNIT_SIZE).map(lambda n: n * UNIT_SIZE),
        "unit_reserved": st.integers(0, queue_file),
        "unit_start": st.sampled_from([0, queue_file * 3]),
    })


def maps_snapshot(log: CommitLog, queue: ConsumeQueue) -> tuple[Any, ...]:
    """Everything an in-place append may change: the log's last stamp, counters, map bytes."""
    files = [*log.segments, *queue.files]
    return (log.last_store_timestamp, [(f.wrote, f.reserved) for f in files], [bytes(f.buf) for f in files])


def store_files(root: Path) -> dict[str, bytes]:
    """The bytes of a store's data files (CommitLog, ConsumeQueue, index), by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.parts[-2] != "config" and p.name not in ("lock", "abort", "checkpoint")}


def put_summary(results: list[PutResult]) -> list[tuple[object, ...]]:
    """What two append paths must agree on in their results."""
    return [(r.status, r.store_timestamp, r.wrote_offsets, r.wrote_sizes, r.queue_offsets, r.offset_msg_ids)
            for r in results]


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


def appends_seen(log: CommitLog, queue: ConsumeQueue, appends: Iterable[Callable[[], Any]]) -> list[Any]:
    """Each in-place append run in turn: (what it returned, the maps after it). One that declines
    (returns None) must leave every map and counter as it was. Closes the log and the queue."""
    seen: list[Any] = []
    try:
        for append in appends:
            before = maps_snapshot(log, queue)
            placed = append()
            after = maps_snapshot(log, queue)
            if placed is None:
                assert after == before  # declined: nothing written, nothing moved
            seen.append((placed, after))
    finally:
        log.close()
        queue.close()
    return seen


def put_properties(topic: str, keys: str | None, uniq: str | None, delay: str, schedule_topic: str) -> dict[str, str]:
    """A put's properties: TAGS, then KEYS and UNIQ_KEY when given, DELAY for the schedule topic."""
    props = {"TAGS": "t"}
    if keys is not None:
        props["KEYS"] = keys
    if uniq is not None:
        props["UNIQ_KEY"] = uniq
    if topic == schedule_topic:
        props["DELAY"] = delay
    return props

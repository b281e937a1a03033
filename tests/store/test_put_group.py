"""``MessageStore.put_group``: several independent puts in one append, each with its own result."""

from __future__ import annotations

from pathlib import Path

from store_helpers import StoreFactory, request, small_settings

from rocketq.protocol import storedrecords
from rocketq.store.messagestore import MessageStore, PutStatus
from rocketq.store.results import BatchPutRequest
from rocketq.store.settings import FlushDiskType


def stored(store: MessageStore, queue_id: int = 0) -> list[tuple[bytes, int]]:
    got = store.get_messages("T", queue_id, 0, 1000)
    return [(r.body, r.queue_offset) for r in map(storedrecords.decode_stored_record, got.buffers)]


async def test_each_put_gets_its_own_result_and_a_bad_one_changes_nothing(make_store: StoreFactory) -> None:
    store = await make_store()
    batch = BatchPutRequest("T", 0, 0, 1, ("127.0.0.1", 1), 0,
                            [(b"b1", 0, "", 0, None, None), (b"b2", 0, "", 0, None, None)])
    too_large = [request(body=b"x" * (64 * 1024))]  # larger than a CommitLog segment
    results = await store.put_group([[request(body=b"a")], too_large, batch, [], [request(body=b"z", queue_id=1)],
                                     [request(body=b"c")]])
    assert [r.status for r in results] == [PutStatus.PUT_OK, PutStatus.MESSAGE_ILLEGAL, PutStatus.PUT_OK,
                                           PutStatus.MESSAGE_ILLEGAL, PutStatus.PUT_OK, PutStatus.PUT_OK]
    assert [r.queue_offsets for r in results] == [(0,), (), (1, 2), (), (0,), (3,)]
    assert stored(store) == [(b"a", 0), (b"b1", 1), (b"b2", 2), (b"c", 3)]
    assert stored(store, 1) == [(b"z", 0)]
    assert results[2].wrote_offsets[0] == results[0].wrote_offsets[0] + results[0].wrote_sizes[0]
    assert store.stats.put_requests == 4 and store.stats.put_failures == 2
    assert store.stats.put_message_times == 5 and sum(store.stats.put_latency) == 4  # per put, not per group
    assert store.stats.put_message_bytes == sum(sum(r.wrote_sizes) for r in results)


async def test_a_group_is_stored_as_the_same_puts_one_by_one(tmp_path: Path, make_store: StoreFactory) -> None:
    puts = [[request(body=b"m%d" % i, properties={"KEYS": f"k{i}", "TAGS": "t"})] for i in range(10)]
    grouped = await make_store(small_settings(tmp_path / "grouped"))
    alone = await make_store(small_settings(tmp_path / "alone"))
    group_results = await grouped.put_group(puts)
    alone_results = [await alone.put_batch(p) for p in puts]
    assert [(r.wrote_offsets, r.queue_offsets, r.offset_msg_ids) for r in group_results] == \
           [(r.wrote_offsets, r.queue_offsets, r.offset_msg_ids) for r in alone_results]
    assert [len(grouped.query_message("T", f"k{i}", 10, 0, 2**62).buffers) for i in range(10)] == [1] * 10


async def test_sync_flush_holds_only_the_puts_that_wait(tmp_path: Path, make_store: StoreFactory) -> None:
    fsyncs: list[int] = []
    store = await make_store(small_settings(tmp_path / "s", flush_disk_type=FlushDiskType.SYNC_FLUSH),
                             fsync=fsyncs.append)
    results = await store.put_group([[request(body=b"a")], [request(body=b"b", properties={"WAIT": "false"})],
                                     [request(body=b"c")]])
    assert all(r.ok for r in results)
    assert store.commitlog.flushed_offset >= results[2].wrote_offsets[0] + results[2].wrote_sizes[0]
    assert store.flusher.fsync_calls == 1

"""Arrival rounds: after the notices of one append (or one replicated range), each round
listener is told once, after every queue of the round was notified."""

from __future__ import annotations

from pathlib import Path

from store_helpers import StoreFactory, put_many, request, small_settings

from rocketq.store.messagestore import MessageStore


def record_rounds(store: MessageStore) -> list[object]:
    """What the listeners see, in order: ("T", queue, next offset) notices and "end" marks."""
    seen: list[object] = []
    store.add_arrival_listener(lambda t, q, o: seen.append((t, q, o)))
    store.add_arrival_round_listener(lambda: seen.append("end"))
    return seen


async def test_a_group_of_puts_is_one_round(make_store: StoreFactory) -> None:
    store = await make_store()
    seen = record_rounds(store)
    store.add_arrival_round_listener(lambda: 1 / 0)  # a failing round listener stops neither puts nor others
    store.add_arrival_round_listener(lambda: seen.append("after"))
    store.put_group_now([[request(queue_id=q)] for q in (3, 1, 3)])
    assert seen == [("T", 3, 2), ("T", 1, 1), "end", "after"]
    store.put_one_now(request(queue_id=1))
    await store.put_batch([request(queue_id=2), request(queue_id=0)])
    assert seen[4:] == [("T", 1, 2), "end", "after", ("T", 2, 1), ("T", 0, 1), "end", "after"]


async def test_a_replicated_range_is_one_round(tmp_path: Path, make_store: StoreFactory) -> None:
    master = await make_store(small_settings(tmp_path / "m"))
    slave = await make_store(small_settings(tmp_path / "s"))
    for queue_id in range(3):
        await put_many(master, 2, queue_id=queue_id)
    seen = record_rounds(slave)
    view = master.commitlog.read_replica(master.commitlog.min_offset, master.max_phy_offset)
    assert view is not None
    slave.append_replicated(master.commitlog.min_offset, view)
    assert seen == [("T", 0, 2), ("T", 1, 2), ("T", 2, 2), "end"]


async def test_a_lone_put_notices_its_queue_s_next_offset(make_store: StoreFactory) -> None:
    """``put_one_now``'s notice gives the queue's ``max_offset`` after the put, across its
    ConsumeQueue files (50 units each in ``small_settings``) and CommitLog segments, and for a
    put that is refused (no notice of its queue, still a round)."""
    store = await make_store()
    seen = record_rounds(store)
    for i in range(120):
        queue_id = i % 2
        assert store.put_one_now(request(queue_id=queue_id, body=b"x" * 700)).ok
        assert seen[-2:] == [("T", queue_id, store.queues.get_or_create("T", queue_id).max_offset), "end"]
    assert len(store.commitlog.segments) > 1 and len(store.queues.get_or_create("T", 0).files) > 1
    seen.clear()
    assert not store.put_one_now(request(queue_id=1, body=b"x" * (64 * 1024))).ok  # larger than a segment
    assert seen == []  # refused before any append: no notice, no round (as put_group_now)

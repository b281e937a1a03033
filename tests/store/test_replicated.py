"""A slave's store: replicated appends at the master's offsets, dispatch of what arrived whole,
truncation, and recovery of a slave that crashed with half a record."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from store_helpers import StoreFactory, crash, put_many, request, small_settings

from rocketq.store.commitlog import ReplicaOffsetError
from rocketq.store.messagestore import MessageStore
from rocketq.store.reput import ReplicaRecordError


def log_bytes(store: MessageStore) -> bytes:
    return b"".join(bytes(s.view[:s.wrote]) for s in store.commitlog.segments)


def units(store: MessageStore, topic: str = "T", queue_id: int = 0) -> list[tuple[int, int, int]]:
    end = store.get_max_offset(topic, queue_id)
    return [store.queues.find(topic, queue_id).unit(i) for i in range(end)]  # type: ignore[union-attr]


def replicate(master: MessageStore, slave: MessageStore, rng: random.Random, upto: int | None = None) -> None:
    """Copy the master's log into the slave in random pieces, as an HA stream would."""
    end = master.max_phy_offset if upto is None else upto
    offset = slave.max_phy_offset or master.commitlog.min_offset
    while offset < end:
        view = master.commitlog.read_replica(offset, min(rng.randint(1, 5000), end - offset))
        assert view is not None
        offset = slave.append_replicated(offset, view)


async def test_slave_log_and_queues_equal_the_masters(tmp_path: Path, make_store: StoreFactory) -> None:
    master = await make_store(small_settings(tmp_path / "m"))
    slave = await make_store(small_settings(tmp_path / "s"))
    arrived: list[tuple[str, int, int]] = []
    slave.add_arrival_listener(lambda t, q, n: arrived.append((t, q, n)))
    body = b"x" * 700
    for queue_id in range(3):
        await put_many(master, 60, body=body, queue_id=queue_id, keys="k1 k2")
    assert len(master.commitlog.segments) > 2  # the stream crosses END_OF_FILE blanks
    replicate(master, slave, random.Random(7))
    assert log_bytes(slave) == log_bytes(master)
    assert [s.start for s in slave.commitlog.segments] == [s.start for s in master.commitlog.segments]
    for queue_id in range(3):
        assert units(slave, queue_id=queue_id) == units(master, queue_id=queue_id)
    assert slave.dispatched_offset == master.max_phy_offset
    assert ("T", 2, 60) in arrived
    found = slave.query_message("T", "k1", 64, 0, 1 << 62)
    assert len(found.buffers) == len(master.query_message("T", "k1", 64, 0, 1 << 62).buffers) > 0
    got = slave.get_messages("T", 1, 10, 5)
    assert got.message_count == 5


async def test_an_empty_slave_starts_at_a_segment_boundary(tmp_path: Path, make_store: StoreFactory) -> None:
    master = await make_store(small_settings(tmp_path / "m"))
    slave = await make_store(small_settings(tmp_path / "s"))
    await put_many(master, 200, body=b"y" * 700)
    last = master.commitlog.segments[-1].start
    assert last > 0
    with pytest.raises(ReplicaOffsetError):
        slave.append_replicated(last + 1, b"z")
    view = master.commitlog.read_replica(last, 1 << 20)
    assert view is not None
    assert slave.append_replicated(last, view) == master.max_phy_offset
    assert slave.commitlog.min_offset == last
    with pytest.raises(ReplicaOffsetError):
        slave.append_replicated(last, b"again")


async def test_bytes_that_are_not_records_are_refused(tmp_path: Path, make_store: StoreFactory) -> None:
    slave = await make_store(small_settings(tmp_path / "s"))
    with pytest.raises(ReplicaRecordError):
        slave.append_replicated(0, b"\x00\x00\x01\x00garbage-garbage-garbage")
    assert slave.dispatched_offset == 0
    await slave.truncate(slave.dispatched_offset)
    assert slave.max_phy_offset == 0


async def test_truncate_drops_the_tail_and_its_units(tmp_path: Path, make_store: StoreFactory) -> None:
    master = await make_store(small_settings(tmp_path / "m"))
    slave = await make_store(small_settings(tmp_path / "s"))
    first = await put_many(master, 30, keys="early")
    cut = master.max_phy_offset
    await put_many(master, 30, keys="late")
    replicate(master, slave, random.Random(1))
    await slave.truncate(cut)
    assert slave.max_phy_offset == cut == slave.dispatched_offset
    assert slave.get_max_offset("T", 0) == 30
    assert slave.query_message("T", "late", 64, 0, 1 << 62).buffers == []
    assert len(slave.query_message("T", "early", 64, 0, 1 << 62).buffers) == 30
    assert units(slave)[-1][0] == first[-1].wrote_offset
    # the master's later history replaces the cut tail
    master2 = await make_store(small_settings(tmp_path / "m2"))
    view = master.commitlog.read_replica(0, cut)
    assert view is not None
    master2.append_replicated(0, view)
    await master2.put(request(body=b"other history"))
    replicate(master2, slave, random.Random(2))
    assert log_bytes(slave) == log_bytes(master2)
    assert slave.get_max_offset("T", 0) == 31


async def test_a_slave_that_crashed_mid_record_recovers_to_a_record_boundary(
        tmp_path: Path, make_store: StoreFactory) -> None:
    master = await make_store(small_settings(tmp_path / "m"))
    results = await put_many(master, 40)
    settings = small_settings(tmp_path / "s")
    slave = await make_store(settings)
    half_way = results[-1].wrote_offset + 10
    replicate(master, slave, random.Random(3), upto=half_way)
    assert slave.dispatched_offset == results[-1].wrote_offset
    await crash(slave)
    reopened = await make_store(settings)
    assert reopened.max_phy_offset == results[-1].wrote_offset
    assert reopened.get_max_offset("T", 0) == 39
    replicate(master, reopened, random.Random(4))
    assert log_bytes(reopened) == log_bytes(master)
    assert units(reopened) == units(master)

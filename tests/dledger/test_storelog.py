"""StoreLog: the Raft log in a broker's CommitLog (entry index beside it, committed-only dispatch)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from rocketq.dledger import entryindex
from rocketq.dledger.contract import Entry
from rocketq.dledger.storelog import StoreLog
from rocketq.store.errors import StoreError
from rocketq.store.messagestore import MessageStore, PutRequest, PutStatus
from rocketq.store.settings import FlushDiskType, StoreSettings

HOST = ("127.0.0.1", 10911)


def settings(root: Path) -> StoreSettings:
    return StoreSettings(store_path_root_dir=str(root), mapped_file_size_commit_log=16 * 1024,
                         mapped_file_size_consume_queue=20 * 50, max_hash_slot_num=64, max_index_num=400,
                         flush_interval_commit_log=20, flush_interval_consume_queue=50)


class Member:
    """One member's store and log, as the broker wires them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = MessageStore(settings(root), HOST)
        self.store.open()
        self.log = StoreLog(self.store, root / "dledger")
        self.store.append_hook = self.log
        self.term: int | None = None
        self.log.leader_term = lambda: self.term
        self.appended = 0
        self.log.on_append = self._count

    def _count(self) -> None:
        self.appended += 1

    async def put(self, body: bytes = b"x" * 100, queue_id: int = 0, keys: str = "k") -> Any:
        props = {"KEYS": keys, "UNIQ_KEY": body.hex()[:8]}
        return await self.store.put(PutRequest("T", queue_id, body, properties=props))

    def visible(self, queue_id: int = 0) -> int:
        return self.store.get_max_offset("T", queue_id)

    def log_bytes(self) -> bytes:
        return b"".join(bytes(s.view[:s.wrote]) for s in self.store.commitlog.segments)

    async def close(self) -> None:
        await self.store.close()
        self.log.close()


@pytest.fixture
async def members(tmp_path: Path) -> AsyncIterator[Callable[[str], Any]]:
    made: list[Member] = []

    async def make(name: str) -> Member:
        member = Member(tmp_path / name)
        await member.store.start()
        made.append(member)
        return member

    yield make
    for member in made:
        await member.close()


async def written(root: Path, puts: int, commit: int = 0) -> Member:
    """A leader's store with ``puts`` messages, the first ``commit`` committed, then closed."""
    member = Member(root)
    await member.store.start()
    member.term = 1
    for _ in range(puts):
        await member.put()
    if commit:
        member.log.commit(commit)
    await member.close()
    return member


@contextlib.asynccontextmanager
async def reopened(root: Path) -> AsyncIterator[Member]:
    again = Member(root)
    await again.store.start()
    try:
        yield again
    finally:
        await again.close()


def replicate(leader: Member, follower: Member) -> None:
    """What Raft does: send the follower every entry it lacks."""
    entries = leader.log.read(follower.log.last_index + 1, 1 << 30)
    follower.log.append(entries)


async def test_leader_puts_are_invisible_until_committed(members: Any) -> None:
    leader = await members("n0")
    leader.term = 3
    first = await leader.put()
    second = await leader.put()
    assert first.ok and second.ok
    assert (first.replication_index, second.replication_index) == (1, 2)
    assert (first.queue_offset, second.queue_offset) == (0, 1)  # offsets run ahead of dispatch
    assert leader.appended == 2 and leader.log.last_term == 3
    assert leader.visible() == 0
    assert leader.store.query_message("T", "k", 10, 0, 1 << 62).buffers == []
    leader.log.commit(1)
    assert leader.visible() == 1
    leader.log.commit(2)
    assert leader.visible() == 2
    assert len(leader.store.query_message("T", "k", 10, 0, 1 << 62).buffers) == 2


async def test_a_member_that_is_not_the_writing_leader_refuses_puts(members: Any) -> None:
    member = await members("n0")
    result = await member.put()
    assert result.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert "not the leader" in result.error
    assert member.store.max_phy_offset == 0 and member.log.last_index == 0


async def test_followers_hold_the_same_bytes_at_the_same_offsets(members: Any) -> None:
    leader, follower = await members("n0"), await members("n1")
    leader.term = 1
    leader.log.append([Entry(1, 1, b"")])  # a new leader's no-op
    for i in range(60):  # 16 KiB segments: the log rolls several times
        await leader.put(body=bytes([i]) * 700, queue_id=i % 2)
    assert len(leader.store.commitlog.segments) > 2
    leader.log.append([Entry(62, 1, b"")])
    replicate(leader, follower)
    assert follower.log_bytes() == leader.log_bytes()
    assert [s.start for s in follower.store.commitlog.segments] == [s.start for s in leader.store.commitlog.segments]
    assert [follower.log.term_at(i) for i in range(63)] == [leader.log.term_at(i) for i in range(63)]
    assert follower.visible() == 0  # nothing committed yet
    leader.log.commit(62)
    follower.log.commit(40)
    assert follower.visible(0) + follower.visible(1) == 39
    follower.log.commit(62)
    for queue_id in (0, 1):
        assert follower.visible(queue_id) == leader.visible(queue_id) == 30
        assert [follower.store.queues.find("T", queue_id).unit(i) for i in range(30)] == \
            [leader.store.queues.find("T", queue_id).unit(i) for i in range(30)]


async def test_read_is_bounded_by_bytes_but_returns_at_least_one(members: Any) -> None:
    leader = await members("n0")
    leader.term = 2
    for _ in range(5):
        await leader.put(body=b"y" * 1000)
    assert len(leader.log.read(1, 10)) == 1
    assert [e.index for e in leader.log.read(2, 2500)] == [2, 3]
    assert leader.log.read(6, 1 << 20) == []
    assert leader.log.term_at(6) is None and leader.log.term_at(0) == 0


async def test_a_deposed_leaders_uncommitted_tail_is_truncated(members: Any) -> None:
    old, new = await members("n0"), await members("n1")
    old.term = 1
    for _ in range(3):
        await old.put()
    replicate(old, new)
    old.log.commit(3)
    new.log.commit(3)
    for _ in range(4):  # never reached a majority
        await old.put(body=b"lost" * 30)
    old.term = None
    new.term = 2
    new.log.append([Entry(4, 2, b"")])
    await new.put(body=b"kept" * 30)
    with pytest.raises(ValueError):
        old.log.truncate_after(2)  # below the commit index
    old.log.truncate_after(3)  # Raft's consistency check found index 4 differs
    assert old.log.last_index == 3 and old.store.max_phy_offset == old.log.committed_end
    replicate(new, old)
    new.log.commit(5)
    old.log.commit(5)
    assert old.log_bytes() == new.log_bytes()
    assert old.visible() == new.visible() == 4
    # the deposed leader, leader again, numbers its puts after what the queue really holds
    new.term = None
    old.term = 3
    old.store.reset_pending_offsets()
    result = await old.put()
    assert result.queue_offset == 4


async def test_restart_dispatches_only_what_was_committed(tmp_path: Path) -> None:
    await written(tmp_path / "n0", 5, commit=3)
    async with reopened(tmp_path / "n0") as again:
        assert again.log.last_index == 5 and again.log.commit_index == 3
        assert again.visible() == 3  # recovery rebuilt 5 units; the 2 uncommitted are withdrawn
        again.log.commit(5)
        assert again.visible() == 5


async def test_open_cuts_the_longer_of_commitlog_and_entry_index(tmp_path: Path) -> None:
    member = await written(tmp_path / "n0", 4, commit=4)
    end_of_3 = member.store.max_phy_offset // 4 * 3
    # the entry index lost its last record (torn), the commitlog kept its bytes: the bytes go
    path = tmp_path / "n0" / "dledger" / entryindex.FILE_NAME
    with open(path, "r+b") as f:
        f.seek(entryindex.HEADER.size + 3 * entryindex.RECORD.size + 5)
        f.write(b"\xff\xff")
    async with reopened(tmp_path / "n0") as again:
        assert again.log.last_index == 3
        assert again.store.max_phy_offset == end_of_3
        assert again.visible() == 3


async def test_open_drops_entries_whose_bytes_the_commitlog_lost(tmp_path: Path) -> None:
    member = await written(tmp_path / "n0", 3)
    segment = sorted((tmp_path / "n0" / "commitlog").iterdir())[0]
    fd = os.open(segment, os.O_RDWR)
    size_of_two = 2 * (member.store.max_phy_offset // 3)
    os.pwrite(fd, b"\0" * 64, size_of_two)  # the third record is gone: recovery ends the log there
    os.close(fd)
    async with reopened(tmp_path / "n0") as again:
        assert again.log.last_index == 2
        assert again.store.max_phy_offset == size_of_two


async def test_a_store_with_messages_but_no_entry_index_is_refused(tmp_path: Path) -> None:
    plain = MessageStore(settings(tmp_path / "n0"), HOST)
    plain.open()
    await plain.start()
    assert (await plain.put(PutRequest("T", 0, b"body"))).ok
    await plain.close()
    store = MessageStore(settings(tmp_path / "n0"), HOST)
    store.open()
    try:
        with pytest.raises(StoreError, match="no DLedger entry index"):
            StoreLog(store, tmp_path / "n0" / "dledger")
    finally:
        await store.close()


async def test_an_entry_index_with_another_magic_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "dledger"
    directory.mkdir()
    (directory / entryindex.FILE_NAME).write_bytes(b"NOTANIDX" + b"\0" * 24)
    with pytest.raises(entryindex.EntryIndexError):
        entryindex.EntryIndex(directory)


async def test_bytes_appended_after_a_cut_are_fsynced_again(tmp_path: Path) -> None:
    """A cut tail's bytes were on disk; what replaces them is not until the next fsync."""
    synced: list[int] = []

    def fsync(fd: int) -> None:
        synced.append(fd)
        os.fdatasync(fd)

    sync_flush = dataclasses.replace(settings(tmp_path / "n0"), flush_disk_type=FlushDiskType.SYNC_FLUSH)
    store = MessageStore(sync_flush, HOST, fsync=fsync)
    store.open()
    log = StoreLog(store, tmp_path / "n0" / "dledger")
    store.append_hook = log
    log.leader_term = lambda: 1
    await store.start()
    try:
        for _ in range(3):
            assert (await store.put(PutRequest("T", 0, b"z" * 200))).ok
        log.truncate_after(0)
        rounds = store.flusher.fsync_calls
        assert (await store.put(PutRequest("T", 0, b"w" * 200))).ok
        assert store.flusher.fsync_calls == rounds + 1
        assert store.commitlog.flushed_offset == store.max_phy_offset
    finally:
        await store.close()
        log.close()

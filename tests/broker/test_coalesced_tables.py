"""topics.json and subscriptionGroup.json kept by group commit: every change awaited with
``flush`` is on disk (a manager loading the directory, as after a crash, has it), concurrent
changes share appends, and an older snapshot never replaces a newer file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig, TopicConfig
from rocketq.store import configfiles

CHANGES = 300


async def test_concurrent_topic_creates_are_all_durable_and_share_writes(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = TopicConfigManager(path)

    async def create(i: int) -> None:
        table.upsert(TopicConfig(f"T{i}", 8, 8))
        await table.flush()
        on_disk = TopicConfigManager(path)
        on_disk.load()
        assert f"T{i}" in on_disk.table  # durable when answered

    await asyncio.gather(*(create(i) for i in range(CHANGES)))
    assert table.writes < CHANGES / 10
    reloaded = TopicConfigManager(path)
    reloaded.load()
    assert reloaded.table == table.table and reloaded.data_version == table.data_version


async def test_concurrent_group_creates_are_all_durable(tmp_path: Path) -> None:
    path = tmp_path / "subscriptionGroup.json"
    groups = SubscriptionGroupManager(path)

    async def create(i: int) -> None:
        groups.upsert(SubscriptionGroupConfig(f"g{i}"))
        await groups.flush()

    await asyncio.gather(*(create(i) for i in range(CHANGES)))
    groups.delete("g0")
    await groups.flush()
    on_disk = SubscriptionGroupManager(path)
    on_disk.load()
    assert set(on_disk.table) == {f"g{i}" for i in range(1, CHANGES)}
    assert on_disk.data_version == groups.data_version


async def test_a_deleted_topic_leaves_the_file_and_its_cached_json(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = TopicConfigManager(path)
    table.upsert(TopicConfig("Gone", 2, 2))
    table.upsert(TopicConfig("Stays", 2, 2))
    table.delete(["Gone"])
    table.upsert(TopicConfig("Stays", 4, 4))  # a changed config is written, not its cached JSON
    await table.close()  # shutdown: the whole file, no journal left
    assert set(orjson.loads(path.read_bytes())["topicConfigTable"]) == {"Stays"}
    assert orjson.loads(path.read_bytes())["topicConfigTable"]["Stays"]["readQueueNums"] == 4
    assert [p.name for p in tmp_path.iterdir() if ".journal." in p.name] == []


def test_an_older_snapshot_never_replaces_a_newer_file(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    state = {"v": 1}
    file = configfiles.CoalescedFile(path, lambda: dict(state))
    file._store(2, {"v": 2})  # a newer snapshot written first (by write_now, say)
    file._store(1, {"v": 1})  # the slower thread write of an older one finishes later
    assert orjson.loads(path.read_bytes()) == {"v": 2}


async def test_offsets_are_snapshotted_on_the_loop_and_written_when_dirty(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    offsets = ConsumerOffsetManager(path)
    await offsets.flush()
    assert not path.exists()  # nothing committed: nothing written
    offsets.commit("g", "T", 0, 5)
    flush = asyncio.create_task(offsets.flush())
    await asyncio.sleep(0)
    offsets.commit("g", "T", 0, 6)  # during the write: this write or the next period carries it
    await flush
    assert orjson.loads(path.read_bytes())["offsetTable"]["T@g"]["0"] in (5, 6)
    await offsets.flush()
    assert orjson.loads(path.read_bytes())["offsetTable"]["T@g"]["0"] == 6


def test_offset_indexes_answer_per_topic_and_group_and_follow_deletes(tmp_path: Path) -> None:
    offsets = ConsumerOffsetManager(tmp_path / "consumerOffset.json")
    offsets.commit("g1", "T1", 0, 1)
    offsets.commit("g2", "T1", 0, 1)
    offsets.commit("g1", "T2", 0, 1)
    offsets.clone("g1", "g3", "T2")
    assert offsets.groups_of_topic("T1") == {"g1", "g2"}
    assert offsets.topics_of_group("g1") == {"T1", "T2"}
    assert offsets.groups_of_topic("T2") == {"g1", "g3"}
    offsets.delete_group("g1")
    assert offsets.groups_of_topic("T1") == {"g2"} and offsets.topics_of_group("g1") == set()
    offsets.delete_topic("T2")
    assert offsets.table == {"T1@g2": {0: 1}}
    offsets.table.update({"T9@g9": {0: 3}})  # a slave adopting its master's offsets
    assert offsets.groups_of_topic("T9") == {"g9"}

"""A broker table kept as a file plus journals: what ``read`` returns after a crash at any point
(journals only, a torn last line, a compaction half done), compaction, and what a clean
shutdown leaves (the file alone, as a Java broker expects)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.sharedbodies import TopicConfig
from rocketq.store import configfiles
from rocketq.store.configjournal import JournaledFile

KEY = "topicConfigTable"


class Table:
    """A dict table behind a JournaledFile, as the broker's managers use it."""

    def __init__(self, path: Path, compact_above: int = 1 << 30) -> None:
        self.entries: dict[str, Any] = {}
        self.version = 0
        self.file = JournaledFile(path, KEY, self.snapshot, compact_above=compact_above)

    def snapshot(self) -> dict[str, Any]:
        return {KEY: dict(self.entries), "dataVersion": {"counter": self.version}}

    def put(self, name: str, value: Any) -> None:
        self.entries[name] = value
        self.version += 1
        self.file.record({"counter": self.version}, put={name: value})

    def delete(self, name: str) -> None:
        del self.entries[name]
        self.version += 1
        self.file.record({"counter": self.version}, delete=[name])


def journals(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".journal." in p.name)


async def test_acknowledged_changes_are_read_back_from_the_journal_without_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = Table(path)
    for i in range(50):
        table.put(f"T{i}", {"q": i})
    table.delete("T7")
    table.put("T8", {"q": 800})
    await table.file.write()
    assert not path.exists() and table.file.rewrites == 0
    assert table.file.appends < 10  # changes made together share appends
    # a crash now: a new process reads the journal
    assert JournaledFile(path, KEY, dict).read() == table.snapshot()


async def test_a_torn_last_line_is_ignored_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = Table(path)
    table.put("A", 1)
    await table.file.write()
    (journal,) = journals(tmp_path)
    with (tmp_path / journal).open("ab") as f:
        f.write(b'{"dataVersion": {"counter": 9}, "put": {"B"')  # a crash mid-append, never answered
    assert JournaledFile(path, KEY, dict).read() == {KEY: {"A": 1}, "dataVersion": {"counter": 1}}


async def test_compaction_rewrites_the_file_and_drops_the_journals_it_covers(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = Table(path, compact_above=2000)
    for i in range(300):
        table.put(f"T{i:03d}", {"payload": "x" * 20})
        if i % 7 == 0:
            await table.file.write()  # separate appends, so the journal grows past the limit
    await table.file.write()
    await table.file.close()
    assert table.file.rewrites >= 1
    assert orjson.loads(path.read_bytes())[KEY].keys() <= table.entries.keys()
    assert len(journals(tmp_path)) <= 2  # older ones deleted once the file covered them
    assert JournaledFile(path, KEY, dict).read() == table.snapshot()


async def test_a_journal_older_than_the_file_changes_nothing_on_replay(tmp_path: Path) -> None:
    """A crash after a compaction's rewrite but before it deleted the journal it covered."""
    path = tmp_path / "topics.json"
    table = Table(path)
    table.put("A", 1)
    table.put("B", 2)
    await table.file.write()
    (journal,) = journals(tmp_path)
    kept = (tmp_path / journal).read_bytes()
    table.delete("A")
    table.file.write_now()
    (tmp_path / journal).write_bytes(kept)  # the covered journal survives the crash
    table.put("C", 3)
    await table.file.write()
    # the stale journal puts A back, but the delete went to the next journal, replayed after it
    assert JournaledFile(path, KEY, dict).read() == table.snapshot() == {KEY: {"B": 2, "C": 3},
                                                                          "dataVersion": {"counter": 4}}


async def test_a_broker_table_loads_its_journals_and_folds_them_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    topics = TopicConfigManager(path)
    await asyncio.gather(*(_create(topics, f"T{i}") for i in range(40)))
    topics.delete(["T3"])
    await topics.flush()
    assert journals(tmp_path)  # no shutdown: the changes are in the journal only
    loaded = TopicConfigManager(path)
    loaded.load()
    assert loaded.table == topics.table and loaded.data_version == topics.data_version
    assert journals(tmp_path) == []  # start-up folded them in: the file alone is complete
    assert set(configfiles.read_json(path)[KEY]) == set(topics.table)


async def _create(topics: TopicConfigManager, name: str) -> None:
    topics.upsert(TopicConfig(name, 8, 8))
    await topics.flush()

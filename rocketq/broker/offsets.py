"""Committed consumer offsets: ``topic@group -> {queueId: offset}``, behind consumerOffset.json.

Offsets change on every pull that carries a commit offset, so they are kept in memory and
written by the broker's flush task every ``flushConsumerOffsetInterval`` and at shutdown, not per
update. The file layout is RocketMQ's, so a broker directory moved between the two keeps its
consumers' progress. The document is taken on the event loop and written in a worker thread
(``configfiles.CoalescedFile``): the loop keeps committing while the file is written.

Admin listings ask "which groups consumed this topic" and "which topics did this group consume"
for every topic or group in turn; two indexes answer each in time proportional to the answer,
not to the whole table (a scan per topic made listing 10 000 topics quadratic).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rocketq.store import configfiles

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager:
    def __init__(self, path: Path) -> None:
        self._path = path
        self.table: dict[str, dict[int, int]] = {}
        self._dirty = False
        self._groups_by_topic: dict[str, set[str]] = {}
        self._topics_by_group: dict[str, set[str]] = {}
        self._indexed: set[str] = set()
        """The keys the two indexes hold; a table changed behind their back (a slave adopting its
        master's offsets updates ``table`` directly) is re-indexed on the next question."""
        self._file = configfiles.CoalescedFile(path, self.to_json)

    def load(self) -> None:
        raw = configfiles.read_json(self._path)
        if not isinstance(raw, dict):
            return
        for key, queues in (raw.get("offsetTable") or {}).items():
            if TOPIC_GROUP_SEPARATOR not in key or not isinstance(queues, dict):
                log.warning("ignoring unreadable offset entry %r in %s", key, self._path)
                continue
            try:
                self.table[key] = {int(q): int(o) for q, o in queues.items()}
            except (TypeError, ValueError):
                log.warning("ignoring unreadable offsets of %r in %s", key, self._path)

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = self.key(topic, group)
        queues = self.table.get(key)
        if queues is None:
            queues = self.table[key] = {}
            self._index(key)
        if queues.get(queue_id) != offset:
            queues[queue_id] = offset
            self._dirty = True

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed on this queue."""
        return self.table.get(self.key(topic, group), {}).get(queue_id, -1)

    def offsets_of(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(self.key(topic, group), {}))

    def groups_of_topic(self, topic: str) -> set[str]:
        self._reindex_if_stale()
        return set(self._groups_by_topic.get(topic, ()))

    def topics_of_group(self, group: str) -> set[str]:
        self._reindex_if_stale()
        return set(self._topics_by_group.get(group, ()))

    def _index(self, key: str) -> None:
        topic, group = key.split(TOPIC_GROUP_SEPARATOR, 1)
        self._groups_by_topic.setdefault(topic, set()).add(group)
        self._topics_by_group.setdefault(group, set()).add(topic)
        self._indexed.add(key)

    def _unindex(self, key: str) -> None:
        topic, group = key.split(TOPIC_GROUP_SEPARATOR, 1)
        for index, outer, inner in ((self._groups_by_topic, topic, group), (self._topics_by_group, group, topic)):
            members = index.get(outer)
            if members is not None:
                members.discard(inner)
                if not members:
                    del index[outer]
        self._indexed.discard(key)

    def _reindex_if_stale(self) -> None:
        if len(self._indexed) == len(self.table):  # commit, clone and delete keep both in step
            return
        self._groups_by_topic, self._topics_by_group, self._indexed = {}, {}, set()
        for key in self.table:
            self._index(key)

    def entries(self) -> Iterator[tuple[str, str, dict[int, int]]]:
        for key, queues in self.table.items():
            topic, group = key.split(TOPIC_GROUP_SEPARATOR, 1)
            yield topic, group, queues

    def clone(self, src_group: str, dest_group: str, topic: str) -> None:
        src = self.table.get(self.key(topic, src_group))
        if src is not None:
            key = self.key(topic, dest_group)
            self.table[key] = dict(src)
            self._index(key)
            self._dirty = True

    def delete_topic(self, topic: str) -> None:
        for group in self.groups_of_topic(topic):
            self._delete(self.key(topic, group))

    def delete_group(self, group: str) -> None:
        for topic in self.topics_of_group(group):
            self._delete(self.key(topic, group))

    def _delete(self, key: str) -> None:
        if self.table.pop(key, None) is not None:
            self._dirty = True
        self._unindex(key)

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in self.table.items()}}

    def persist(self, force: bool = False) -> None:
        """Write now, on this thread, if anything changed (or ``force``)."""
        if self._dirty or force:
            self._file.write_now()
            self._dirty = False

    async def flush(self) -> None:
        """The periodic write: the table as it is now, written off the loop, if anything changed."""
        if not self._dirty:
            return
        self._dirty = False
        try:
            await self._file.write()
        except Exception:
            self._dirty = True  # the next period tries again
            raise

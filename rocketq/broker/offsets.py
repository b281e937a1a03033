"""Committed consumer offsets: ``topic@group -> {queueId: offset}``, behind consumerOffset.json.

Offsets change on every pull that carries a commit offset, so they are kept in memory and
written by the broker's flush task every ``flushConsumerOffsetInterval`` and at shutdown, not per
update. The file layout is RocketMQ's, so a broker directory moved between the two keeps its
consumers' progress.
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
        queues = self.table.setdefault(self.key(topic, group), {})
        if queues.get(queue_id) != offset:
            queues[queue_id] = offset
            self._dirty = True

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed on this queue."""
        return self.table.get(self.key(topic, group), {}).get(queue_id, -1)

    def offsets_of(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(self.key(topic, group), {}))

    def groups_of_topic(self, topic: str) -> set[str]:
        return {k.split(TOPIC_GROUP_SEPARATOR, 1)[1] for k in self.table if k.startswith(topic + TOPIC_GROUP_SEPARATOR)}

    def topics_of_group(self, group: str) -> set[str]:
        return {k.rsplit(TOPIC_GROUP_SEPARATOR, 1)[0] for k in self.table if k.endswith(TOPIC_GROUP_SEPARATOR + group)}

    def entries(self) -> Iterator[tuple[str, str, dict[int, int]]]:
        for key, queues in self.table.items():
            topic, group = key.split(TOPIC_GROUP_SEPARATOR, 1)
            yield topic, group, queues

    def clone(self, src_group: str, dest_group: str, topic: str) -> None:
        src = self.table.get(self.key(topic, src_group))
        if src is not None:
            self.table[self.key(topic, dest_group)] = dict(src)
            self._dirty = True

    def delete_topic(self, topic: str) -> None:
        for key in [k for k in self.table if k.startswith(topic + TOPIC_GROUP_SEPARATOR)]:
            del self.table[key]
            self._dirty = True

    def delete_group(self, group: str) -> None:
        for key in [k for k in self.table if k.endswith(TOPIC_GROUP_SEPARATOR + group)]:
            del self.table[key]
            self._dirty = True

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in self.table.items()}}

    def persist(self, force: bool = False) -> None:
        if self._dirty or force:
            configfiles.write_json_atomic(self._path, self.to_json())
            self._dirty = False

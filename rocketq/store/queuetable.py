"""The store's table of ConsumeQueues: one per (topic, queue id), created on first use.

A queue exists once a message was put to it (or recovery found its files); its directory is
``consumequeue/<topic>/<queueId>``. Creating one checks the topic name (records are written with
MAGIC_V1, whose one-byte TOPICLEN allows the same 127 characters as a topic name) and the queue
id. The table only maps names to queues: what is appended, read, flushed or deleted is decided
by ``MessageStore`` and the services it hands ``all`` or ``get_or_create`` to.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Final

from rocketq.protocol import namerules
from rocketq.protocol.messageerrors import MessageIllegalError
from rocketq.store.consumequeue import ConsumeQueue

MAX_QUEUE_ID: Final = 1 << 20
"""Queue ids at or above this are refused (a broker's queue counts are far smaller)."""


class QueueTable:
    def __init__(self, root_dir: Path, file_size: int) -> None:
        self.root_dir = root_dir
        self.file_size = file_size
        self.by_topic: dict[str, dict[int, ConsumeQueue]] = {}

    def all(self) -> list[ConsumeQueue]:
        return [cq for by_id in self.by_topic.values() for cq in by_id.values()]

    def add(self, cq: ConsumeQueue) -> None:
        """A queue loaded from disk."""
        self.by_topic.setdefault(cq.topic, {})[cq.queue_id] = cq

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        by_id = self.by_topic.get(topic)
        return by_id.get(queue_id) if by_id is not None else None

    def get_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        """The queue, created (empty) if new; MessageIllegalError for a bad topic or queue id."""
        by_id = self.by_topic.get(topic)
        cq = by_id.get(queue_id) if by_id is not None else None
        if cq is None:
            namerules.check_topic(topic, MessageIllegalError)
            if not 0 <= queue_id < MAX_QUEUE_ID:
                raise MessageIllegalError(f"queue id {queue_id} out of range")
            cq = ConsumeQueue(self.root_dir / topic / str(queue_id), topic, queue_id, self.file_size)
            self.by_topic.setdefault(topic, {})[queue_id] = cq
        return cq

    def delete_topic(self, topic: str) -> bool:
        """Destroy a topic's queues and their files; False when it had none."""
        by_id = self.by_topic.pop(topic, None)
        if not by_id:
            return False
        for cq in by_id.values():
            cq.destroy()
        with contextlib.suppress(OSError):
            (self.root_dir / topic).rmdir()
        return True

    def max_offsets(self) -> dict[str, dict[int, int]]:
        """topic -> {queue id: max offset}."""
        return {topic: {qid: cq.max_offset for qid, cq in by_id.items()} for topic, by_id in self.by_topic.items()}

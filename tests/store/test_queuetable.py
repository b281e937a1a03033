"""The store's table of ConsumeQueues: created on first use, checked, found, deleted with their files."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.protocol.messageerrors import MessageIllegalError
from rocketq.store.queuetable import MAX_QUEUE_ID, QueueTable

FILE_SIZE = 20 * 64


def test_a_queue_is_created_once_and_found_after(tmp_path: Path) -> None:
    table = QueueTable(tmp_path, FILE_SIZE)
    assert table.find("T", 1) is None
    cq = table.get_or_create("T", 1)
    assert table.get_or_create("T", 1) is cq and table.find("T", 1) is cq
    assert table.all() == [cq] and table.max_offsets() == {"T": {1: 0}}


@pytest.mark.parametrize("topic, queue_id", [("bad topic", 0), ("", 0), ("T", -1), ("T", MAX_QUEUE_ID)])
def test_bad_topics_and_queue_ids_are_illegal_messages(tmp_path: Path, topic: str, queue_id: int) -> None:
    with pytest.raises(MessageIllegalError):
        QueueTable(tmp_path, FILE_SIZE).get_or_create(topic, queue_id)


def test_deleting_a_topic_destroys_its_queues_and_directory(tmp_path: Path) -> None:
    table = QueueTable(tmp_path, FILE_SIZE)
    table.get_or_create("T", 0).append(0, 100, 7)
    table.get_or_create("T", 1)
    assert table.delete_topic("T") and not table.delete_topic("T")
    assert table.all() == [] and not (tmp_path / "T").exists()

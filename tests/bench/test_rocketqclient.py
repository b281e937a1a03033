"""rocketq's side of the comparison: what can be checked without a cluster."""

from __future__ import annotations

from typing import Any, cast

import pytest
from peers.clients import rocketqclient
from peers.clients.rocketqclient import QUEUES, RocketqClient

from rocketq.protocol.queues import MessageQueue

TOPIC = "cmp0e2e1000"


class _Consumer:
    """A PushConsumer as far as ``assigned`` goes: the queues it owns right now."""

    def __init__(self, queues: list[MessageQueue]) -> None:
        self.queues = queues

    def assigned(self) -> list[MessageQueue]:
        return list(self.queues)


def _client() -> RocketqClient:
    return RocketqClient("127.0.0.1:9876", TOPIC, cast(Any, None))


async def test_the_group_retry_queue_does_not_count_as_one_of_the_topic_queues(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 7 of the topic's 8 queues and the group's %RETRY% queue: 8 queues, but one topic queue
    # has no puller yet, so the producer must not be told to start
    owned = [MessageQueue(TOPIC, "broker-a", q) for q in range(QUEUES - 1)]
    owned.append(MessageQueue(f"%RETRY%{TOPIC}_g", "broker-a", 0))
    monkeypatch.setattr(rocketqclient, "SETUP_TIMEOUT_S", 0.2)
    with pytest.raises(TimeoutError, match=f"7 of {QUEUES} queues"):
        await _client()._owns_every_queue(cast(Any, _Consumer(owned)))


async def test_every_topic_queue_owned_is_ready() -> None:
    owned = [MessageQueue(TOPIC, "broker-a", q) for q in range(QUEUES)]
    await _client()._owns_every_queue(cast(Any, _Consumer(owned)))

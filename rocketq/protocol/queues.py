"""MessageQueue: one queue of a topic on one broker group, the unit of sending and of balancing.

A topic with 4 write queues on brokers ``broker-a`` and ``broker-b`` has eight message queues,
``(topic, broker-a, 0..3)`` and ``(topic, broker-b, 0..3)``. Queues order by topic, broker name,
then queue id, exactly like RocketMQ's ``MessageQueue.compareTo``; every consumer of a group
sorts the same way, which is what makes client-side allocation agree without coordination.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "brokerName": self.broker_name, "queueId": self.queue_id}

    @classmethod
    def from_json(cls, raw: Any) -> MessageQueue:
        """Parse ``{"topic", "brokerName", "queueId"}``; ValueError names what is wrong."""
        if not isinstance(raw, dict):
            raise ValueError(f"a message queue must be an object, not {type(raw).__name__}")
        topic, broker, queue_id = raw.get("topic"), raw.get("brokerName"), raw.get("queueId")
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"message queue topic {topic!r} is not a non-empty string")
        if not isinstance(broker, str) or not broker:
            raise ValueError(f"message queue brokerName {broker!r} is not a non-empty string")
        if isinstance(queue_id, bool) or not isinstance(queue_id, int) or queue_id < 0:
            raise ValueError(f"message queue queueId {queue_id!r} is not a non-negative integer")
        return cls(topic, broker, queue_id)

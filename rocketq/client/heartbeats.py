"""HeartbeatData: how a client tells a broker who it is and what it consumes.

Every 30 s (and at start, and when subscriptions change) a client sends HEART_BEAT to the
brokers of its topics with RocketMQ's JSON body::

    {"clientID": "10.0.0.5@4242#1234",
     "producerDataSet": [{"groupName": "pg"}],
     "consumerDataSet": [{"groupName": "cg", "consumeType": "CONSUME_PASSIVELY",
                          "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                          "subscriptionDataSet": [SubscriptionData...], "unitMode": false}]}

The broker learns group membership from it (the consumer-id list rebalancing reads), the
subscriptions it filters pulls by, and creates the group's retry topic. This module only builds
the body; sending it is the client instance's job.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from rocketq.client.settings import ConsumeFromWhere, MessageModel
from rocketq.protocol.subscription import SubscriptionData


class ConsumeType(enum.Enum):
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"
    """Push: the client pulls on its own schedule and calls a listener."""
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    """Pull: the application asks for messages."""


@dataclass(frozen=True, slots=True)
class ConsumerData:
    group: str
    consume_type: ConsumeType
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    subscriptions: tuple[SubscriptionData, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "groupName": self.group,
            "consumeType": self.consume_type.value,
            "messageModel": self.message_model.value,
            "consumeFromWhere": self.consume_from_where.value,
            "subscriptionDataSet": [s.to_json() for s in self.subscriptions],
            "unitMode": False,
        }


def encode(client_id: str, producer_groups: Iterable[str] = (), consumers: Iterable[ConsumerData] = ()) -> bytes:
    return orjson.dumps({
        "clientID": client_id,
        "producerDataSet": [{"groupName": group} for group in producer_groups],
        "consumerDataSet": [consumer.to_json() for consumer in consumers],
    })

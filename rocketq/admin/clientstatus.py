"""What producers and consumers say about themselves: mqadmin's producerConnection and
consumerStatus.

- ``producer_connection``: GET_PRODUCER_CONNECTION_LIST to a master of the topic (producers
  heartbeat to the brokers of the topics they send to).
- ``consumer_running_info``: GET_CONSUMER_RUNNING_INFO to a broker the consumer is connected to,
  which forwards it to the client (``rocketq.broker.clientadmin``); the answer is the client's
  ``ConsumerRunningInfo`` (``rocketq.client.runninginfo`` writes it for the SDK's consumers).
  Its ``mqTable`` is keyed by MessageQueue objects, fastjson-style; here it becomes a list of
  ``QueueStatus``.
- ``consume_message_directly``: CONSUME_MESSAGE_DIRECTLY (mqadmin ``queryMsgById -g -d``) to the
  broker that stored the message, which hands it to the client; the answer is the client's
  ``ConsumeMessageDirectlyResult`` (CR_SUCCESS, CR_LATER, ...).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from rocketq.admin import adminbodies, cluster, fastjson, messages
from rocketq.admin.adminbodies import Connection
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import BodyError
from rocketq.protocol import headers
from rocketq.protocol.codes import RequestCode, retry_topic


async def producer_connection(admin: AdminClient, group: str, topic: str) -> tuple[Connection, ...]:
    """The group's producers connected to one master of ``topic`` (chosen at random, as mqadmin)."""
    adminbodies.check_group(group)
    _, masters = await cluster.route_masters(admin, topic)
    _, addr = random.choice(masters)
    response = await admin.call(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST,
                                headers.ProducerGroupHeader(producer_group=group))
    # the same connectionSet shape as a consumer group's
    return adminbodies.parse_consumer_connection(response.body).connections


@dataclass(frozen=True, slots=True)
class QueueStatus:
    topic: str
    broker_name: str
    queue_id: int
    info: dict[str, Any]
    """The queue's ProcessQueueInfo fields as the client wrote them."""


@dataclass(frozen=True, slots=True)
class RunningInfo:
    client_id: str
    properties: dict[str, str]
    subscriptions: tuple[tuple[str, str], ...]
    """(topic, expression) of every subscription, sorted."""
    queues: tuple[QueueStatus, ...]
    jstack: str | None = None
    """The client's thread stacks, when asked for (``jstackEnable``) and given."""

    def to_json(self) -> dict[str, Any]:
        out = {"clientId": self.client_id, "properties": self.properties,
               "subscriptions": [{"topic": t, "subString": s} for t, s in self.subscriptions],
               "mqTable": [{"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id, **q.info}
                           for q in self.queues]}
        if self.jstack is not None:
            out["jstack"] = self.jstack
        return out


def parse_running_info(client_id: str, body: bytes) -> RunningInfo:
    raw = fastjson.loads(body)
    if not isinstance(raw, dict):
        raise BodyError("consumer running info is not an object")
    props = raw.get("properties") or {}
    subs = raw.get("subscriptionSet") or []
    table = raw.get("mqTable") or {}
    if not isinstance(props, dict) or not isinstance(subs, list) or not isinstance(table, dict):
        raise BodyError("consumer running info: properties, subscriptionSet or mqTable has the wrong type")
    queues = []
    for key, info in table.items():
        if not isinstance(key, fastjson.ObjectKey) or not isinstance(info, dict):
            raise BodyError(f"consumer running info: mqTable entry {key!r} is not MessageQueue -> object")
        queues.append(QueueStatus(str(key.get("topic", "")), str(key.get("brokerName", "")),
                                  int(key.get("queueId", 0) or 0), info))
    subscriptions = sorted((str(s.get("topic", "")), str(s.get("subString", "*"))) for s in subs if isinstance(s, dict))
    jstack = raw.get("jstack")
    return RunningInfo(client_id, {str(k): str(v) for k, v in props.items()}, tuple(subscriptions),
                       tuple(sorted(queues, key=lambda q: (q.topic, q.broker_name, q.queue_id))),
                       str(jstack) if jstack is not None else None)


async def consumer_running_info(admin: AdminClient, group: str, client_id: str, *,
                                broker_addr: str | None = None, jstack: bool = False) -> RunningInfo:
    """Ask one consumer for its running info through a broker it is connected to (``broker_addr``,
    else a master of the group's retry topic, as mqadmin does); ``jstack``: its thread stacks too."""
    adminbodies.check_group(group)
    if broker_addr is None:
        _, masters = await cluster.route_masters(admin, retry_topic(group))
        broker_addr = masters[0][1]
    response = await admin.call(broker_addr, RequestCode.GET_CONSUMER_RUNNING_INFO,
                                headers.GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id,
                                                                            jstack_enable=jstack))
    return parse_running_info(client_id, response.body)


@dataclass(frozen=True, slots=True)
class DirectResult:
    """A client's ``ConsumeMessageDirectlyResult``."""

    consume_result: str | None
    remark: str
    order: bool
    auto_commit: bool
    spent_time_mills: int

    def to_json(self) -> dict[str, Any]:
        return {"consumeResult": self.consume_result, "remark": self.remark, "order": self.order,
                "autoCommit": self.auto_commit, "spentTimeMills": self.spent_time_mills}


async def consume_message_directly(admin: AdminClient, group: str, client_id: str, offset_msg_id: str) -> DirectResult:
    """Have one consumer consume one stored message now, through the broker that stored it."""
    adminbodies.check_group(group)
    addr, _ = messages.locate(offset_msg_id)
    header = headers.ConsumeMessageDirectlyResultRequestHeader(consumer_group=group, client_id=client_id,
                                                               msg_id=offset_msg_id.strip().upper())
    response = await admin.call(addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
    raw = fastjson.loads(response.body)
    if not isinstance(raw, dict):
        raise BodyError("consume message directly result is not an object")
    result = raw.get("consumeResult")
    return DirectResult(str(result) if result is not None else None, str(raw.get("remark") or ""),
                        bool(raw.get("order")), bool(raw.get("autoCommit", True)), int(raw.get("spentTimeMills") or 0))


def same_subscriptions(infos: list[RunningInfo]) -> bool:
    """mqadmin's check: every member of a group subscribes to the same topics and expressions."""
    return len({info.subscriptions for info in infos}) <= 1

"""Rebalancing: deciding which queues this consumer owns, and where it starts in a new one.

Every ``rebalanceInterval`` (20 s), and at once when a broker says the group changed
(NOTIFY_CONSUMER_IDS_CHANGED) or the subscriptions changed, the rebalancer goes over the
subscribed topics:

- CLUSTERING: the topic's readable queues (from the cached route) and the group's consumer
  ids (GET_CONSUMER_LIST_BY_GROUP on one broker of the topic), both sorted, go through the
  allocation strategy; this consumer keeps what it is given.
- BROADCASTING: this consumer takes every queue.

Queues no longer owned are removed (their offset persisted first, by the owner's
``remove_queue``); new ones are added at their *initial offset*: the stored offset if the group
has one, else by ``consumeFromWhere`` (LAST: the queue's max offset; FIRST: 0; TIMESTAMP: the
first offset stored at or after ``consumeTimestamp``; a retry topic starts at 0 for LAST and
at its max for TIMESTAMP, as RocketMQ does). If anything needed for a topic cannot be fetched
this round, that topic's queues are left as they are and the next round tries again.

A freshly created queue reads from 0 even under LAST: the broker answers QUERY_CONSUMER_OFFSET
with 0 while a new queue's first message is still in memory (RocketMQ's rule), and a stored
offset always wins. The rebalancer does not pull; its owner does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Protocol

from rocketq import tasks
from rocketq.client import wire
from rocketq.client.allocation import AllocateStrategy
from rocketq.client.errors import ClientError, RouteError
from rocketq.client.instance import ClientInstance
from rocketq.client.offsetstores import OffsetStore
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ConsumeFromWhere, MessageModel
from rocketq.protocol.codes import RETRY_GROUP_TOPIC_PREFIX
from rocketq.protocol.subscription import SubscriptionData
from rocketq.remoting.errors import RemotingError
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)


class Assignment(Protocol):
    """What the rebalancer changes: the owner's set of queues being pulled."""

    def assigned(self) -> Collection[MessageQueue]: ...
    async def add_queue(self, mq: MessageQueue, offset: int) -> None: ...
    async def remove_queue(self, mq: MessageQueue) -> None: ...


async def initial_offset(
    mq: MessageQueue, *, instance: ClientInstance, offsets: OffsetStore,
    policy: ConsumeFromWhere, timestamp_ms: int,
) -> int:
    """Where to start pulling a queue just assigned (RocketMQ's ``computePullFromWhere``)."""
    stored = await offsets.read_from_store(mq)
    if stored is not None and stored >= 0:
        return stored
    is_retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    if policy is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET or (
            is_retry and policy is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET):
        return 0
    if policy is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET or is_retry:
        return await instance.call_current(
            mq.topic, lambda: instance.find_master(mq),
            lambda addr: wire.get_max_offset(instance.remoting, addr, mq, instance.api_timeout))
    return await instance.call_current(
        mq.topic, lambda: instance.find_master(mq),
        lambda addr: wire.search_offset(instance.remoting, addr, mq, timestamp_ms, instance.api_timeout))


class Rebalancer:
    def __init__(
        self, instance: ClientInstance, group: str, *, model: MessageModel, strategy: AllocateStrategy,
        subscriptions: Callable[[], Mapping[str, SubscriptionData]], assignment: Assignment,
        offsets: OffsetStore, policy: ConsumeFromWhere, timestamp_ms: int, interval_ms: int,
        claim: Callable[[MessageQueue], Awaitable[bool]] | None = None,
    ) -> None:
        """``claim(mq)``, if given, must succeed before a queue is added (orderly consumers
        lock the queue on its broker); a refused queue is tried again next round."""
        self._instance = instance
        self._group = group
        self._model = model
        self._strategy = strategy
        self._subscriptions = subscriptions
        self._assignment = assignment
        self._offsets = offsets
        self._policy = policy
        self._timestamp_ms = timestamp_ms
        self._interval = interval_ms / 1000
        self._claim = claim
        self._wake = asyncio.Event()
        self._task = OwnedTask(f"rebalance {self._group}", self._loop)

    def trigger(self) -> None:
        """Rebalance as soon as possible (group membership or subscriptions changed)."""
        self._wake.set()

    def start(self) -> None:
        if not self._task.running:
            self._wake.set()
        self._task.start()

    async def close(self) -> None:
        """Stop the loop and wait for it. Idempotent."""
        await self._task.stop()

    async def _loop(self) -> None:
        while True:
            await tasks.wait_event(self._wake, self._interval)
            self._wake.clear()
            try:
                await self.rebalance()
            except (ClientError, RemotingError) as exc:
                log.warning("%s: rebalance of %s failed: %s", self._instance.client_id, self._group, exc)

    async def rebalance(self) -> None:
        subscriptions = self._subscriptions()
        for topic in sorted(subscriptions):
            target = await self._target(topic)
            if target is not None:
                await self._apply(topic, target)
        for mq in [mq for mq in self._assignment.assigned() if mq.topic not in subscriptions]:
            await self._assignment.remove_queue(mq)

    async def _target(self, topic: str) -> set[MessageQueue] | None:
        """The queues of ``topic`` this consumer should own, or None when that is unknowable now."""
        try:
            route = self._instance.cached_route(topic) or await self._instance.update_route(topic)
        except ClientError as exc:
            log.warning("%s: no route for %s: %s", self._group, topic, exc)
            return None
        if route is None:
            log.warning("%s: topic %s has no route; its queues are not consumed", self._group, topic)
            return None
        queues = list(route.subscribe_queues(topic))
        if self._model is MessageModel.BROADCASTING:
            return set(queues)
        consumers = await self._consumer_ids(topic)
        if consumers is None:
            return None
        client_id = self._instance.client_id
        if client_id not in consumers:
            log.info("%s: %s not yet in the consumer list of %s %s", self._group, client_id, topic, consumers)
        return set(self._strategy(client_id, queues, sorted(consumers)))

    async def _consumer_ids(self, topic: str) -> list[str] | None:
        async def any_addr() -> str:
            addr = await self._instance.any_broker_addr(topic)
            if addr is None:
                raise RouteError(f"topic {topic} has no broker")
            return addr

        try:
            return await self._instance.call_current(
                topic, any_addr,
                lambda addr: wire.get_consumer_list(self._instance.remoting, addr, self._group,
                                                    self._instance.api_timeout))
        except (ClientError, RemotingError) as exc:
            log.warning("%s: consumer list for %s unavailable: %s", self._group, topic, exc)
            return None

    async def _apply(self, topic: str, target: set[MessageQueue]) -> None:
        current = {mq for mq in self._assignment.assigned() if mq.topic == topic}
        for mq in sorted(current - target):
            log.info("%s: rebalance drops %s", self._group, mq)
            await self._assignment.remove_queue(mq)
        for mq in sorted(target - current):
            if self._claim is not None and not await self._claim(mq):
                log.info("%s: %s is still locked by another member; not added this round", self._group, mq)
                continue
            self._offsets.remove(mq)
            try:
                offset = await initial_offset(mq, instance=self._instance, offsets=self._offsets,
                                              policy=self._policy, timestamp_ms=self._timestamp_ms)
            except (ClientError, RemotingError) as exc:
                log.warning("%s: cannot compute the start offset of %s, will retry: %s", self._group, mq, exc)
                continue
            log.info("%s: rebalance adds %s at offset %d", self._group, mq, offset)
            await self._assignment.add_queue(mq, offset)

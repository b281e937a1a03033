"""PullConsumer: the application asks for messages and keeps track of offsets itself.

    consumer = PullConsumer("pg2", namesrv_addr="127.0.0.1:9876")
    await consumer.start()
    for mq in await consumer.fetch_subscribe_queues("TopicTest"):
        offset = await consumer.query_offset(mq) or 0
        result = await consumer.pull(mq, "*", offset, max_nums=32)
        ...                                    # handle result.messages
        await consumer.update_offset(mq, result.next_begin_offset)
    await consumer.close()

Nothing runs behind the application's back except the client instance's route refresh and
heartbeat (which lets brokers list this group). There is no rebalancing and no automatic offset
commit: which queues to read and what to commit is the caller's business, as with RocketMQ's
``DefaultMQPullConsumer``. ``pull`` returns at once; ``pull_block_if_not_found`` lets the broker
hold the request until a message arrives (up to ``brokerSuspendMaxTimeMillis``). A request
that fails because its broker is gone or no longer the master refreshes the topic's route and,
when the route then names another address, is made once more there
(``ClientInstance.call_current``).
"""

from __future__ import annotations

from typing import Any

from rocketq.client import messageselectors, namechecks, pulling, wire
from rocketq.client.errors import ClientStateError, RouteError
from rocketq.client.heartbeats import ConsumerData, ConsumeType
from rocketq.client.instance import ClientInstance, ServiceState
from rocketq.client.pulling import PullResult
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ConsumeFromWhere, MessageModel, PullConsumerSettings, configure
from rocketq.protocol import subscription
from rocketq.protocol.codes import DEFAULT_CONSUMER_GROUP
from rocketq.protocol.subscription import SubscriptionData

MAX_PULL_NUMS = 1024
"""A sanity cap on ``max_nums``; the broker caps a pull by its own limits too."""


class PullConsumer:
    def __init__(self, group: str = DEFAULT_CONSUMER_GROUP, namesrv_addr: str | None = None, **options: Any) -> None:
        self.group = namechecks.check_group(group)
        self.settings = configure(PullConsumerSettings, {"namesrv_addr": namesrv_addr, **options})
        self._topics: set[str] = set()
        self._instance: ClientInstance | None = None
        self._state = ServiceState.CREATE_JUST

    async def __aenter__(self) -> PullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @property
    def client_id(self) -> str | None:
        return self._instance.client_id if self._instance else None

    async def start(self) -> None:
        if self._state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"pull consumer {self.group} is {self._state.value}, cannot start")
        self._instance = ClientInstance(self.settings, consumer_data=self._consumer_data)
        self._instance.start()
        self._state = ServiceState.RUNNING

    async def close(self) -> None:
        """Unregister from the brokers and close connections. Idempotent."""
        if self._state is not ServiceState.RUNNING:
            self._state = ServiceState.SHUTDOWN_ALREADY
            return
        self._state = ServiceState.SHUTDOWN_ALREADY
        assert self._instance is not None
        await self._instance.unregister(consumer_group=self.group)
        await self._instance.close()

    def _running(self) -> ClientInstance:
        if self._state is not ServiceState.RUNNING or self._instance is None:
            raise ClientStateError(f"pull consumer {self.group} is not running ({self._state.value})")
        return self._instance

    def _consumer_data(self) -> ConsumerData:
        subs = tuple(subscription.build(topic, subscription.SUB_ALL) for topic in sorted(self._topics))
        return ConsumerData(self.group, ConsumeType.CONSUME_ACTIVELY, MessageModel.CLUSTERING,
                            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, subs)

    async def _register(self, instance: ClientInstance, topic: str) -> None:
        if topic not in self._topics:
            self._topics.add(topic)
            await instance.heartbeat()

    # --- queues -----------------------------------------------------------------------------

    async def fetch_subscribe_queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of the topic, sorted; RouteError when the topic is unknown."""
        instance = self._running()
        namechecks.check_topic(topic)
        route = await instance.update_route(topic)
        if route is None:
            raise RouteError(f"Can not find Message Queue for this topic, {topic}")
        await self._register(instance, topic)
        return list(route.subscribe_queues(topic))

    # --- pulling ----------------------------------------------------------------------------

    async def pull(self, mq: MessageQueue, expression: messageselectors.Expression, offset: int, max_nums: int = 32, *,
                   timeout_ms: int | None = None) -> PullResult:
        """Pull once; answers at once (NO_NEW_MSG when there is nothing at ``offset``)."""
        timeout = self.settings.consumer_pull_timeout_millis if timeout_ms is None else timeout_ms
        return await self._pull(mq, expression, offset, max_nums, suspend=False, timeout_ms=timeout)

    async def pull_block_if_not_found(self, mq: MessageQueue, expression: messageselectors.Expression, offset: int,
                                      max_nums: int = 32) -> PullResult:
        """Pull, letting the broker hold the request until a message arrives or it times out."""
        return await self._pull(mq, expression, offset, max_nums, suspend=True,
                                timeout_ms=self.settings.consumer_timeout_millis_when_suspend)

    async def _pull(self, mq: MessageQueue, expression: messageselectors.Expression, offset: int, max_nums: int, *,
                    suspend: bool, timeout_ms: int) -> PullResult:
        instance = self._running()
        sub = self._subscription(mq.topic, expression)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ClientStateError(f"offset {offset!r} must be a non-negative integer")
        if isinstance(max_nums, bool) or not isinstance(max_nums, int) or not 0 < max_nums <= MAX_PULL_NUMS:
            raise ClientStateError(f"max_nums {max_nums!r} must be in 1..{MAX_PULL_NUMS}")
        if timeout_ms <= 0:
            raise ClientStateError(f"pull timeout must be positive, got {timeout_ms} ms")
        await self._register(instance, mq.topic)
        flag = pulling.sys_flag(commit_offset=False, suspend=suspend, subscription=True)
        header = pulling.request_header(
            self.group, mq, offset, max_nums, sub, flag=flag,
            suspend_timeout_ms=self.settings.broker_suspend_max_time_millis if suspend else 0)
        reply = await instance.call_current(mq.topic, lambda: instance.subscribe_master(mq),
                                            lambda addr: wire.pull(instance.remoting, addr, header, timeout_ms / 1000))
        return pulling.to_result(reply, sub)

    @staticmethod
    def _subscription(topic: str, expression: messageselectors.Expression) -> SubscriptionData:
        namechecks.check_topic(topic)
        return messageselectors.build(topic, expression)

    # --- offsets ----------------------------------------------------------------------------

    async def query_offset(self, mq: MessageQueue) -> int | None:
        """The group's committed offset of ``mq`` on its master (a slave while the master is gone),
        None if it has none."""
        instance = self._running()
        return await instance.call_current(
            mq.topic, lambda: instance.subscribe_master(mq),
            lambda addr: wire.query_consumer_offset(instance.remoting, addr, self.group, mq, instance.api_timeout))

    async def update_offset(self, mq: MessageQueue, offset: int) -> None:
        """Commit ``offset`` (the next offset to read) for the group, acknowledged by the master;
        while the route has no master, by a slave, which hands it to the master when it is back."""
        instance = self._running()
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ClientStateError(f"offset {offset!r} must be a non-negative integer")
        await instance.call_current(
            mq.topic, lambda: instance.subscribe_master(mq),
            lambda addr: wire.update_consumer_offset(instance.remoting, addr, self.group, mq, offset,
                                                     instance.api_timeout))

    async def max_offset(self, mq: MessageQueue) -> int:
        instance = self._running()
        return await instance.call_current(
            mq.topic, lambda: instance.find_master(mq),
            lambda addr: wire.get_max_offset(instance.remoting, addr, mq, instance.api_timeout))

    async def min_offset(self, mq: MessageQueue) -> int:
        instance = self._running()
        return await instance.call_current(
            mq.topic, lambda: instance.find_master(mq),
            lambda addr: wire.get_min_offset(instance.remoting, addr, mq, instance.api_timeout))

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        instance = self._running()
        return await instance.call_current(
            mq.topic, lambda: instance.find_master(mq),
            lambda addr: wire.search_offset(instance.remoting, addr, mq, timestamp_ms, instance.api_timeout))

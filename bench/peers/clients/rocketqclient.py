"""rocketq's side: a topic on the benchmark's local cluster, through rocketq's own SDK.

``address`` is the name server. The topic is created with 8 read and write queues (what
``rocketq admin updateTopic`` makes) and the client waits until the name server serves its
route, so a consumer can subscribe before the first message exists.

- ``send``: ``Producer.send`` (one SEND_MESSAGE_V2 and its answer);
- ``send_many``: ``Producer.send_async`` for each body, then waits for all the futures;
- ``send_batch``: ``Producer.send_batch`` (one SEND_BATCH_MESSAGE frame);
- ``consume``: the PushConsumer of ``rocketq bench consumer`` (``loadgen.start_push_consumer``:
  pulls of 32, listener batches of 32), from the first offset.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Final

from peers.clients.api import OnBodies
from rocketq.admin import cluster as cluster_ops
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.bench import loadgen
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.protocol.message import Message
from rocketq.protocol.messagetypes import MessageExt

CLUSTER: Final = "DefaultCluster"
"""The cluster name ``rocketq local up`` gives its brokers."""
QUEUES: Final = 8
SETUP_TIMEOUT_S: Final = 60.0
"""How long the route may take to appear and the consumer to be given its queues."""
POLL_S: Final = 0.05


class RocketqClient:
    def __init__(self, namesrv: str, topic: str, admin: AdminClient) -> None:
        self.namesrv, self.topic, self._admin = namesrv, topic, admin
        self._producer: Producer | None = None

    async def _started_producer(self) -> Producer:
        if self._producer is None:
            producer = Producer(f"{self.topic}_pg", namesrv_addr=self.namesrv)
            await producer.start()
            self._producer = producer
        return self._producer

    async def send(self, body: bytes) -> None:
        producer = self._producer or await self._started_producer()
        await producer.send(Message(self.topic, body))

    async def send_many(self, bodies: Sequence[bytes]) -> int:
        producer = self._producer or await self._started_producer()
        futures = [producer.send_async(Message(self.topic, body)) for body in bodies]
        results = await asyncio.gather(*futures, return_exceptions=True)
        return sum(1 for r in results if isinstance(r, BaseException))

    async def send_batch(self, bodies: Sequence[bytes]) -> None:
        producer = self._producer or await self._started_producer()
        await producer.send_batch([Message(self.topic, body) for body in bodies])

    async def consume(self, group: str, on_bodies: OnBodies, ready: Callable[[], None]) -> None:
        done = asyncio.Event()

        def listener(msgs: list[MessageExt], _ctx: ConsumeContext) -> ConsumeStatus:
            if on_bodies([m.body for m in msgs]):
                done.set()
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = await loadgen.start_push_consumer(self.namesrv, self.topic, group, listener, from_first=True)
        try:
            await self._owns_every_queue(consumer)
            ready()
            await done.wait()
        finally:
            await consumer.close()

    async def _owns_every_queue(self, consumer: PushConsumer) -> None:
        """Wait for the rebalance to give the consumer all the topic's queues (its group's
        %RETRY% queue is assigned too, and does not count)."""
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        while (owned := sum(1 for mq in consumer.assigned() if mq.topic == self.topic)) < QUEUES:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the consumer got {owned} of {QUEUES} queues of {self.topic}")
            await asyncio.sleep(POLL_S)

    async def delete(self) -> None:
        await cluster_ops.delete_topic(self._admin, self.topic, CLUSTER)

    async def close(self) -> None:
        if self._producer is not None:
            await self._producer.close()


async def _create_topic(admin: AdminClient, topic: str) -> None:
    await cluster_ops.create_topic(admin, TopicConfig(topic, QUEUES, QUEUES, 6), cluster=CLUSTER)
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    while True:  # the broker registers the new topic with the name server
        try:
            route = await admin.topic_route(topic)
            if route.queue_datas:
                return
        except AdminError:  # "topic not exist" until the registration lands
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(POLL_S)


@asynccontextmanager
async def connect(namesrv: str, topic: str) -> AsyncIterator[RocketqClient]:
    async with AdminClient(namesrv) as admin:
        await _create_topic(admin, topic)
        client = RocketqClient(namesrv, topic, admin)
        try:
            yield client
        finally:
            await client.close()

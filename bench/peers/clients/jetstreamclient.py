"""NATS JetStream's side: a file-store stream with one subject, through nats-py.

``address`` is the server's host:port. The stream keeps its messages on disk (``storage:
file``, one replica); every publish is a JetStream publish, answered once the server has
stored the message (a "PubAck"), which is what makes it comparable with a broker's send.

- ``send``: ``js.publish`` (a request, waits for the PubAck);
- ``send_many``: ``js.publish_async`` for each body, then waits for all the PubAck futures;
- ``send_batch``: JetStream (nats-server 2.9/2.10) has no batch publish (atomic batches came
  in 2.12 and nats-py has no call for them), so the nearest equivalent is the batch's
  messages published back to back with ``publish_async`` and their acks awaited together:
  the same as ``send_many``;
- ``consume``: a durable pull consumer (deliver all, ack policy "all") that fetches batches of
  ``FETCH_BATCH`` and acknowledges each batch by acking its last message.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Final

import nats
from nats.js import api
from nats.js.client import JetStreamContext

from peers.clients.api import OnBodies

FETCH_BATCH: Final = 256
"""Messages per pull request (the Redis client reads the same number per XREADGROUP)."""
FETCH_WAIT_S: Final = 1.0
"""How long one fetch waits for messages before asking again."""
MAX_ASYNC_PENDING: Final = 4000
"""nats-py's cap on un-acked ``publish_async`` calls; above every window the workloads use."""
API_TIMEOUT_S: Final = 30.0
"""Timeout of JetStream API calls and of a synchronous publish (a loaded machine is slow)."""


class JetStreamClient:
    def __init__(self, nc: nats.NATS, js: JetStreamContext, stream: str) -> None:
        self._nc, self._js, self.stream = nc, js, stream

    async def send(self, body: bytes) -> None:
        await self._js.publish(self.stream, body)

    async def send_many(self, bodies: Sequence[bytes]) -> int:
        publish = self._js.publish_async
        futures = [await publish(self.stream, body) for body in bodies]
        results = await asyncio.gather(*futures, return_exceptions=True)
        return sum(1 for r in results if isinstance(r, BaseException))

    async def send_batch(self, bodies: Sequence[bytes]) -> None:
        failed = await self.send_many(bodies)
        if failed:
            raise RuntimeError(f"{failed} of {len(bodies)} publishes of a batch failed")

    async def consume(self, group: str, on_bodies: OnBodies, ready: Callable[[], None]) -> None:
        config = api.ConsumerConfig(durable_name=group, deliver_policy=api.DeliverPolicy.ALL,
                                    ack_policy=api.AckPolicy.ALL)
        sub = await self._js.pull_subscribe(self.stream, durable=group, stream=self.stream, config=config)
        try:
            ready()
            while True:
                try:
                    msgs = await sub.fetch(FETCH_BATCH, timeout=FETCH_WAIT_S)
                except nats.errors.TimeoutError:
                    continue
                done = on_bodies([m.data for m in msgs])
                await msgs[-1].ack()  # ack policy "all": covers the whole batch
                if done:
                    return
        finally:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    async def delete(self) -> None:
        await self._js.delete_stream(self.stream)


@asynccontextmanager
async def connect(address: str, stream: str) -> AsyncIterator[JetStreamClient]:
    nc = await nats.connect(f"nats://{address}", allow_reconnect=False)
    try:
        js = nc.jetstream(timeout=API_TIMEOUT_S, publish_async_max_pending=MAX_ASYNC_PENDING)
        await js.add_stream(name=stream, subjects=[stream], storage=api.StorageType.FILE, num_replicas=1)
        yield JetStreamClient(nc, js, stream)
    finally:
        await nc.close()

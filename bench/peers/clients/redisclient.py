"""Redis Streams' side: one stream key, through redis-py's asyncio client with hiredis.

``address`` is the server's host:port. The server runs with the append-only file on
(``appendfsync everysec``, or ``always`` for the SYNC_FLUSH comparison), so an XADD is answered
once it is in the AOF (written, and under ``always`` fsynced, before the reply goes out).

- ``send``: one ``XADD`` (a round trip);
- ``send_many``: a pipeline of ``XADD`` commands (written together, replies read together);
- ``send_batch``: Redis has no batch append, so the nearest equivalent of one request with
  one acknowledgement is ``MULTI``, the batch's ``XADD``s and ``EXEC`` (a transaction: one
  round trip, applied all together);
- ``consume``: a consumer group created at id 0, ``XREADGROUP COUNT FETCH_BATCH BLOCK`` in a
  loop, and one ``XACK`` with every id of each batch read.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from peers.clients.api import OnBodies

FIELD: Final = b"b"
"""The one field of each stream entry, holding the message body."""
FETCH_BATCH: Final = 256
"""Entries per XREADGROUP (the JetStream client fetches the same number)."""
BLOCK_MS: Final = 1000
"""How long one XREADGROUP waits for new entries before asking again."""
MAX_CONNECTIONS: Final = 64
"""Connection pool cap: concurrent pipelines each hold a connection while they wait; past the
cap a pipeline waits for a free connection (a blocking pool), it does not fail."""


class RedisClient:
    def __init__(self, client: aioredis.Redis, key: str) -> None:
        self._redis, self.key = client, key

    async def send(self, body: bytes) -> None:
        await self._redis.xadd(self.key, {FIELD: body})

    async def send_many(self, bodies: Sequence[bytes]) -> int:
        return await self._pipeline(bodies, transaction=False)

    async def send_batch(self, bodies: Sequence[bytes]) -> None:
        failed = await self._pipeline(bodies, transaction=True)
        if failed:
            raise RuntimeError(f"{failed} of {len(bodies)} XADDs of a transaction failed")

    async def _pipeline(self, bodies: Sequence[bytes], *, transaction: bool) -> int:
        async with self._redis.pipeline(transaction=transaction) as pipe:
            for body in bodies:
                pipe.xadd(self.key, {FIELD: body})
            results = await pipe.execute(raise_on_error=False)
        return sum(1 for r in results if isinstance(r, Exception))

    async def consume(self, group: str, on_bodies: OnBodies, ready: Callable[[], None]) -> None:
        with contextlib.suppress(RedisError):  # BUSYGROUP: it exists already
            await self._redis.xgroup_create(self.key, group, id="0", mkstream=True)
        ready()
        while True:
            answer = await self._redis.xreadgroup(group, "c1", {self.key: ">"}, count=FETCH_BATCH, block=BLOCK_MS)
            if not answer:
                continue
            # RESP2's [[key, [(id, {field: value}), ...]]]: one stream asked, one answered
            entries: list[tuple[bytes, dict[bytes, bytes]]] = cast(list[Any], answer)[0][1]
            done = on_bodies([fields[FIELD] for _id, fields in entries])
            await self._redis.xack(self.key, group, *(entry_id for entry_id, _fields in entries))
            if done:
                return

    async def delete(self) -> None:
        await self._redis.delete(self.key)


@asynccontextmanager
async def connect(address: str, key: str) -> AsyncIterator[RedisClient]:
    host, _, port = address.rpartition(":")
    pool = aioredis.BlockingConnectionPool(host=host, port=int(port), max_connections=MAX_CONNECTIONS, timeout=None)
    client = aioredis.Redis(connection_pool=pool)
    try:
        await client.ping()
        yield RedisClient(client, key)
    finally:
        await client.aclose()
        await pool.aclose()  # a pool handed in is not closed with the client

"""What the workloads need from a system: the ``StreamClient`` protocol, and how to open one.

A *stream* is the system's unit that holds the messages of one measurement: a rocketq topic
(8 queues on the one broker), a JetStream stream on the file store with one subject, or a
Redis stream key. Every measurement uses a fresh stream and deletes it afterwards, so the
servers' memory reflects the load of the moment, not the whole run.

The four ways to send map onto each system's nearest primitive (docs/benchmarks.md lists
them): ``send`` waits for one acknowledgement; ``send_many`` puts several single messages in
flight at once and returns when all are acknowledged; ``send_batch`` is the system's batch
(one request, one acknowledgement, where the system has one). ``consume`` reads the stream
from its first message through one consumer group until the callback says it has enough.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Final, Protocol

SYSTEMS: Final = ("rocketq", "nats", "redis")
"""Every system the comparison knows, rocketq first (the one measured against the others)."""

OnBodies = Callable[[list[bytes]], bool]
"""Called with each delivered group of message bodies; returns True once it has enough."""


class StreamClient(Protocol):
    async def send(self, body: bytes) -> None:
        """Send one message and wait for the server's acknowledgement (raise if refused)."""

    async def send_many(self, bodies: Sequence[bytes]) -> int:
        """Put every body in flight as a single message; wait for all acks; return the failures."""

    async def send_batch(self, bodies: Sequence[bytes]) -> None:
        """Send the bodies as the system's batch and wait for its acknowledgement."""

    async def consume(self, group: str, on_bodies: OnBodies, ready: Callable[[], None]) -> None:
        """Deliver the stream's messages from its first to ``on_bodies`` until it returns True.
        ``ready`` is called once the group is set up, before anything has to be sent."""

    async def delete(self) -> None:
        """Remove the stream and what the server keeps for it (where the system can)."""


@asynccontextmanager
async def open_client(system: str, address: str, stream: str) -> AsyncIterator[StreamClient]:
    """A connected client of ``system`` whose stream ``stream`` exists (created if needed)."""
    # imported here: an agent process loads only the client library of its own system
    if system == "rocketq":
        from peers.clients import rocketqclient

        async with rocketqclient.connect(address, stream) as client:
            yield client
    elif system == "nats":
        from peers.clients import jetstreamclient

        async with jetstreamclient.connect(address, stream) as nats_client:
            yield nats_client
    elif system == "redis":
        from peers.clients import redisclient

        async with redisclient.connect(address, stream) as redis_client:
            yield redis_client
    else:
        raise ValueError(f"unknown system {system!r} (known: {', '.join(SYSTEMS)})")

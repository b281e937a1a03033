"""SimpleConsumer: RocketMQ 5's receive / ack / change-invisible-duration consumer, over remoting POP.

The same shape as the 5.x clients' ``SimpleConsumer`` (which speak gRPC to a proxy), here
speaking POP straight to the brokers a topic's route names::

    async with SimpleConsumer("cg", namesrv_addr="127.0.0.1:9876", subscriptions={"Orders": "*"}) as consumer:
        for message in await consumer.receive(16, invisible_duration_s=30):
            handle(message.message)
            await consumer.ack(message)

``receive`` pops one broker of one subscribed topic per call, round-robin (long polling up to
``await_duration_s`` when it has nothing), and never returns a message it must not: like the
gRPC proxy's receive filter, a message already reconsumed ``max_reconsume_times`` times is
forwarded to ``%DLQ%<group>`` and acked instead of returned. A message not acked within its
invisible duration comes back (reconsume times + 1); ``change_invisible_duration`` answers the
message with its new handle, and only that one acks it afterwards. No queue is assigned and no
offset is managed by the client: consumers of one group may come and go freely.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Final, Self

from rocketq.client import wire
from rocketq.client.errors import ClientStateError, RouteError
from rocketq.client.popclient import PopClient
from rocketq.protocol.codes import MASTER_ID
from rocketq.protocol.poprequests import PoppedMessage
from rocketq.remoting.client import RemotingClient

DEFAULT_AWAIT_S: Final = 20.0
DEFAULT_MAX_RECONSUME_TIMES: Final = 16
"""A group's ``retryMaxTimes`` default: 17 deliveries in all (the gRPC clients' max attempts)."""
ROUTE_TIMEOUT_S: Final = 3.0


class SimpleConsumer:
    def __init__(self, group: str, namesrv_addr: str, *, subscriptions: Mapping[str, str],
                 await_duration_s: float = DEFAULT_AWAIT_S,
                 max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES, timeout_s: float = ROUTE_TIMEOUT_S) -> None:
        if not subscriptions:
            raise ClientStateError("a SimpleConsumer needs at least one subscription")
        self.group = group
        self._namesrvs = [a.strip() for a in namesrv_addr.split(";") if a.strip()]
        self._subscriptions = dict(subscriptions)
        self._await_ms = int(await_duration_s * 1000)
        self.max_reconsume_times = max_reconsume_times
        self._rc = RemotingClient(name="simple-consumer")
        self._pops = PopClient(self._rc, timeout_s=timeout_s)
        self._cursor = itertools.count()
        self._brokers: dict[str, str] = {}
        """brokerName -> master address, from the routes seen so far."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._rc.close()

    async def _targets(self, topic: str) -> list[tuple[str, str]]:
        """(brokerName, master address) of every broker with readable queues of ``topic``."""
        for namesrv in self._namesrvs:
            route = await wire.get_route(self._rc, namesrv, topic, ROUTE_TIMEOUT_S)
            if route is None:
                continue
            readable = {qd.broker_name for qd in route.queue_datas if qd.readable}
            targets = []
            for data in route.broker_datas:
                addr = data.broker_addrs.get(MASTER_ID)
                if data.broker_name in readable and addr:
                    self._brokers[data.broker_name] = addr
                    targets.append((data.broker_name, addr))
            return sorted(targets)
        raise RouteError(f"no route of topic {topic}")

    async def receive(self, max_messages: int = 16, *, invisible_duration_s: float = 30.0) -> list[PoppedMessage]:
        """Up to ``max_messages`` (<= 32) of one subscribed topic on one broker; [] after the await time."""
        topics = sorted(self._subscriptions)
        turn = next(self._cursor)
        topic = topics[turn % len(topics)]
        targets = await self._targets(topic)
        if not targets:
            return []
        broker, addr = targets[(turn // len(topics)) % len(targets)]
        result = await self._pops.pop(addr, broker, self.group, topic, max_nums=max_messages,
                                      invisible_ms=int(invisible_duration_s * 1000), poll_ms=self._await_ms,
                                      expression=self._subscriptions[topic])
        out = []
        for message in result.messages:
            if message.message.reconsume_times >= self.max_reconsume_times:
                await self._pops.forward_to_dlq(addr, self.group, message, self.max_reconsume_times)
            else:
                out.append(message)
        return out

    def _addr(self, message: PoppedMessage) -> str:
        addr = self._brokers.get(message.extra_info.broker_name)
        if addr is None:
            raise ClientStateError(f"message from unknown broker {message.extra_info.broker_name}")
        return addr

    async def ack(self, message: PoppedMessage) -> None:
        await self._pops.ack(self._addr(message), self.group, message)

    async def change_invisible_duration(self, message: PoppedMessage, invisible_duration_s: float) -> PoppedMessage:
        """The message visible again after ``invisible_duration_s``; ack the returned message, not the old one."""
        return await self._pops.change_invisible_time(self._addr(message), self.group, message,
                                                      int(invisible_duration_s * 1000))

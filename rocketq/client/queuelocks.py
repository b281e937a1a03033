"""The client's half of queue locks: taking, renewing and releasing them on the brokers.

An orderly consumer in CLUSTERING mode consumes a queue only while it holds that queue's lock
on the queue's master broker (``rocketq.broker.locks``). This module (RocketMQ's
``RebalanceImpl.lock``/``lockAll``/``unlock``) does the talking:

- ``lock(mq)`` before a rebalance adds a queue: a queue whose lock is refused is not taken
  this round (its previous owner still holds it; the next rebalance tries again);
- ``lock_all`` every 20 s (``rocketmq.client.rebalance.lockInterval``), first 1 s after start,
  one LOCK_BATCH_MQ per broker for all owned queues: granted queues are marked locked and
  renewed, the others marked unlocked, which pauses their consumption until a lock succeeds;
- ``unlock`` when a queue is given away and, for all queues, on close.

Each request goes to the master only, with a 1 s timeout. A failed request changes nothing;
the broker's 60 s expiry covers a client that vanished without unlocking.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from rocketq.client import wire
from rocketq.client.errors import ClientError
from rocketq.client.instance import ClientInstance
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.queues import MessageQueue
from rocketq.remoting.errors import RemotingError
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

LOCK_INTERVAL: Final = 20.0
"""Seconds between renewals of every lock (``rocketmq.client.rebalance.lockInterval``)."""
FIRST_LOCK_DELAY: Final = 1.0
LOCK_TIMEOUT: Final = 1.0
"""Seconds a LOCK/UNLOCK request may take."""


class QueueLocker:
    def __init__(self, instance: ClientInstance, group: str,
                 owned: Callable[[], Mapping[MessageQueue, ProcessQueue]],
                 interval: float = LOCK_INTERVAL) -> None:
        """``owned()``: the queues this consumer holds now, with their process queues."""
        self._instance = instance
        self._group = group
        self._owned = owned
        self._interval = interval
        self._task = OwnedTask(f"lock renewal {group}", self._loop)

    def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.stop()

    async def _loop(self) -> None:
        await asyncio.sleep(FIRST_LOCK_DELAY)
        while True:
            await self.lock_all()
            await asyncio.sleep(self._interval)

    def _master(self, broker_name: str) -> str | None:
        return self._instance.master_addr(broker_name)

    async def lock(self, mq: MessageQueue) -> bool:
        """Lock one queue; True if granted (a refused or failed request is False)."""
        granted = await self._lock_on(mq.broker_name, [mq])
        pq = self._owned().get(mq)
        if pq is not None:
            pq.mark_locked(mq in granted)
        return mq in granted

    async def lock_all(self) -> None:
        """Renew the locks of every owned queue, one request per broker."""
        owned = dict(self._owned())
        for broker_name, mqs in _by_broker(owned).items():
            if self._master(broker_name) is None:
                continue
            try:
                granted = await self._request_lock(broker_name, mqs)
            except (ClientError, RemotingError) as exc:
                log.warning("%s: renewing locks on %s failed: %s", self._group, broker_name, exc)
                continue
            for mq in mqs:
                if mq not in granted and owned[mq].locked:
                    log.warning("%s: the lock of %s was lost; its consumption pauses", self._group, mq)
                owned[mq].mark_locked(mq in granted)

    async def _lock_on(self, broker_name: str, mqs: list[MessageQueue]) -> set[MessageQueue]:
        try:
            return await self._request_lock(broker_name, mqs)
        except (ClientError, RemotingError) as exc:
            log.warning("%s: locking %s on %s failed: %s", self._group, mqs, broker_name, exc)
            return set()

    async def _request_lock(self, broker_name: str, mqs: list[MessageQueue]) -> set[MessageQueue]:
        addr = self._master(broker_name)
        if addr is None:
            addr = await self._instance.find_master(mqs[0])
        return await wire.lock_batch_mq(self._instance.remoting, addr, self._group, self._instance.client_id, mqs,
                                        LOCK_TIMEOUT)

    async def unlock(self, mqs: Iterable[MessageQueue], *, oneway: bool) -> None:
        """Release this client's locks (failures are logged: the broker expires them anyway)."""
        for broker_name, batch in _by_broker(mqs).items():
            addr = self._master(broker_name)
            if addr is None:
                continue
            try:
                await wire.unlock_batch_mq(self._instance.remoting, addr, self._group, self._instance.client_id,
                                           batch, LOCK_TIMEOUT, oneway=oneway)
            except (ClientError, RemotingError) as exc:
                log.warning("%s: unlocking %s failed: %s", self._group, batch, exc)


def _by_broker(mqs: Iterable[MessageQueue]) -> dict[str, list[MessageQueue]]:
    grouped: dict[str, list[MessageQueue]] = defaultdict(list)
    for mq in sorted(mqs):
        grouped[mq.broker_name].append(mq)
    return dict(grouped)

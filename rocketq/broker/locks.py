"""Queue locks for orderly consumers: LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42).

An orderly consumer in CLUSTERING mode must be the only member of its group consuming a queue,
or two members could process messages of one key at the same time, out of order. Rebalancing
alone cannot promise that (members see membership changes at different moments), so the master
broker of a queue keeps a lock table, RocketMQ's ``RebalanceLockManager``:
group -> queue -> (client id, last renewal).

``try_lock`` grants, per queue, when the requester already holds it (a renewal), when nobody
does, or when the holder's lock expired (no renewal for ``rebalance.lockMaxLiveTime``, 60 s);
a queue held by another live client is not granted. The answer lists the granted queues only.
Clients renew every 20 s, so a lock outlives a crashed holder by at most 60 s, after which the
queue moves on. ``unlock`` releases only the requester's own locks. As in RocketMQ, a closed
connection does not release anything: the expiry does.

Bodies are RocketMQ's JSON: ``{"consumerGroup", "clientId", "mqSet": [{"topic", "brokerName",
"queueId"}]}`` in, ``{"lockOKMQSet": [...]}`` out. The table is in memory: after a broker restart
every lock is free, and clients take them again at their next renewal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from rocketq.protocol import sharedbodies
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.connection import Connection, Handler

LOCK_MAX_LIVE_TIME_MS: Final = 60_000
"""``rocketmq.broker.rebalance.lockMaxLiveTime``: a lock not renewed for this long is free."""
MAX_QUEUES_PER_REQUEST: Final = 10_000
"""Queues one LOCK/UNLOCK body may name; a larger body is refused before it is processed."""

Queue = tuple[str, str, int]
"""(topic, brokerName, queueId): a MessageQueue as the broker keys it."""


@dataclass(slots=True)
class _Holder:
    client_id: str
    renewed_ms: float


@dataclass(frozen=True, slots=True)
class LockRequest:
    group: str
    client_id: str
    queues: tuple[Queue, ...]


def parse_request(body: bytes) -> LockRequest:
    """A LockBatchRequestBody / UnlockBatchRequestBody; BodyError names what is wrong."""
    raw = sharedbodies.obj(sharedbodies.load_json(body, "lock body"), "lock body")
    group = sharedbodies.text(raw, "consumerGroup", "lock body")
    client_id = sharedbodies.text(raw, "clientId", "lock body")
    items = raw.get("mqSet")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise sharedbodies.BodyError("lock body: mqSet must be a JSON array")
    if len(items) > MAX_QUEUES_PER_REQUEST:
        raise sharedbodies.BodyError(f"lock body: {len(items)} queues, at most {MAX_QUEUES_PER_REQUEST}")
    queues = []
    for item in items:
        mq = sharedbodies.obj(item, "mqSet entry")
        queues.append((sharedbodies.text(mq, "topic", "mqSet entry"),
                       sharedbodies.text(mq, "brokerName", "mqSet entry"),
                       sharedbodies.non_negative_int32(mq, "queueId", "mqSet entry")))
    return LockRequest(group, client_id, tuple(dict.fromkeys(queues)))


def queue_json(queue: Queue) -> dict[str, Any]:
    return {"topic": queue[0], "brokerName": queue[1], "queueId": queue[2]}


class RebalanceLocks:
    """The lock table. ``clock`` returns milliseconds (monotonic); tests pass their own."""

    def __init__(self, max_live_ms: int = LOCK_MAX_LIVE_TIME_MS,
                 clock: Callable[[], float] = lambda: time.monotonic() * 1000) -> None:
        self._max_live_ms = max_live_ms
        self._clock = clock
        self._table: dict[str, dict[Queue, _Holder]] = {}

    def try_lock(self, group: str, client_id: str, queues: Iterable[Queue]) -> list[Queue]:
        """Lock or renew each queue for ``client_id``; the queues granted."""
        now = self._clock()
        held = self._table.setdefault(group, {})
        granted = []
        for queue in queues:
            holder = held.get(queue)
            if holder is None or holder.client_id == client_id or now - holder.renewed_ms > self._max_live_ms:
                held[queue] = _Holder(client_id, now)
                granted.append(queue)
        return granted

    def unlock(self, group: str, client_id: str, queues: Iterable[Queue]) -> None:
        held = self._table.get(group)
        if held is None:
            return
        for queue in queues:
            holder = held.get(queue)
            if holder is not None and holder.client_id == client_id:
                del held[queue]
        if not held:
            del self._table[group]

    def holder(self, group: str, queue: Queue) -> str | None:
        """The client holding an unexpired lock on ``queue``, or None."""
        holder = self._table.get(group, {}).get(queue)
        if holder is None or self._clock() - holder.renewed_ms > self._max_live_ms:
            return None
        return holder.client_id


class LockHandlers:
    def __init__(self, locks: RebalanceLocks) -> None:
        self.locks = locks

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.LOCK_BATCH_MQ: self.lock_batch, RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch}

    async def lock_batch(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            wanted = parse_request(request.body)
        except sharedbodies.BodyError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        granted = self.locks.try_lock(wanted.group, wanted.client_id, wanted.queues)
        body = orjson.dumps({"lockOKMQSet": [queue_json(q) for q in granted]})
        return request.response(ResponseCode.SUCCESS, body=body)

    async def unlock_batch(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            wanted = parse_request(request.body)
        except sharedbodies.BodyError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        self.locks.unlock(wanted.group, wanted.client_id, wanted.queues)
        return request.response(ResponseCode.SUCCESS)

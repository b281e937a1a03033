"""Revive: making POP messages that were never acked visible again (RocketMQ's PopReviveService).

Every non-orderly pop wrote a checkpoint into a revive queue, every ack an ack record
(``rocketq.broker.revivelog``). This service reads each revive queue in order, matches acks to
their checkpoints, and once a checkpoint's invisible time has passed (``popTime +
invisibleTime``), copies each message it names that was not acked into the POP retry topic
``%RETRY%<group>_<topic>`` queue 0 with ``reconsumeTimes + 1`` (properties kept, ``1ST_POP_TIME``
set on the first revive). Pops read that retry topic as well, so the message is delivered again,
to any consumer of the group, a moment after its invisible time.

Durability and exactness. The only state is the revive log itself plus one offset per revive
queue, kept as group ``CID_RMQ_SYS_REVIVE_GROUP``'s consumer offset: the position of the oldest
checkpoint not yet settled (fully acked or revived). Everything after it is read again after a
restart, which rebuilds the pending checkpoints and re-applies their acks, so a kill -9 neither
loses an un-acked message nor forgets an ack. Acks for checkpoints before that offset belong to
settled checkpoints and are rightly ignored. The offset is saved as soon as a revive moves it,
so a crash repeats at most the revives of one pass (at-least-once, as RocketMQ).

Where rocketq differs from RocketMQ: RocketMQ writes checkpoints and acks as timer messages due
at the invisible time and reads a revive queue only up to "now"; rocketq reads records as they
are written and holds pending checkpoints in memory (one small object per pop of a queue) until
they expire, so no timer wheel is needed and the revive offset can only stop at the oldest
pending checkpoint. DLQ is not decided here, as in RocketMQ: consumers (the gRPC proxy, the
SDK's ``SimpleConsumer``) forward a message past its maximum reconsume times.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final

from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.revivelog import (
    ACK_TAG,
    BATCH_ACK_TAG,
    CK_TAG,
    REVIVE_GROUP,
    AckRecord,
    CheckPoint,
    ReviveRecordError,
)
from rocketq.protocol import messageerrors, messageproperties, popinfo, storedrecords
from rocketq.protocol.messagetypes import MessageExt
from rocketq.ratelimit import LogLimiter
from rocketq.store.consumequeue import BLANK_UNIT_SIZE
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import PutRequest

log = logging.getLogger(__name__)

FIRST_POP_TIME: Final = "1ST_POP_TIME"
"""Property RocketMQ sets on a message's first revive: when it was first popped."""
READ_BATCH: Final = 256
"""Revive records read per queue per pass."""
RETRY_QUEUE_NUMS: Final = 1
MAX_PENDING_PER_QUEUE: Final = 1_000_000
"""Checkpoints one revive queue may hold in memory; past it reading pauses (pops go on)."""

EnsureTopic = Callable[[str], Awaitable[bool]]
"""Creates a retry topic if needed; False when it cannot be written."""


@dataclasses.dataclass(slots=True)
class _Queue:
    read_offset: int
    settled: int
    pending: dict[tuple[str, str, int, int, int, str], CheckPoint] = dataclasses.field(default_factory=dict)


class ReviveService:
    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        *,
        revive_topic: str,
        queue_nums: int,
        interval_s: float,
        retry_v2: bool,
        ensure_retry_topic: EnsureTopic,
        persist_offsets: Callable[[], Awaitable[None]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._offsets = offsets
        self.topic = revive_topic
        self.queue_nums = queue_nums
        self._interval = interval_s
        self._retry_v2 = retry_v2
        self._ensure_retry_topic = ensure_retry_topic
        self._persist_offsets = persist_offsets
        self._clock = clock
        self._queues: dict[int, _Queue] = {}
        self._bad = LogLimiter(log)
        self.revived = 0

    def load(self) -> None:
        """Read each revive queue from its saved settled offset (its first record if none).

        The pending checkpoints read here also restore the POP groups' offsets: consumer
        offsets are saved every few seconds, checkpoints at once, so after a crash a
        checkpoint may be newer than its group's saved offset. Without this the messages it
        names would be popped again as new while also being revived (delivered twice).
        """
        for qid in range(self.queue_nums):
            saved = self._offsets.query(REVIVE_GROUP, self.topic, qid)
            start = max(saved, self._store.get_min_offset(self.topic, qid))
            queue = self._queues[qid] = _Queue(start, start)
            self._read(qid, queue)
            for ck in queue.pending.values():
                if ck.offset_diffs:
                    end = ck.start_offset + max(ck.offset_diffs) + 1
                    if self._offsets.query(ck.group, ck.topic, ck.queue_id) < end:
                        self._offsets.commit(ck.group, ck.topic, ck.queue_id, end)

    async def run(self) -> None:
        """The owned task's body: a pass over every revive queue per interval."""
        while True:
            await self.revive_pass()
            await asyncio.sleep(self._interval)

    async def revive_pass(self) -> None:
        moved = False
        for qid, queue in self._queues.items():
            self._read(qid, queue)
            await self._revive_due(queue)
            settled = min((ck.revive_offset for ck in queue.pending.values()), default=queue.read_offset)
            if settled != queue.settled:
                queue.settled = settled
                self._offsets.commit(REVIVE_GROUP, self.topic, qid, settled)
                moved = True
        if moved:
            await self._persist_offsets()

    @property
    def pending_count(self) -> int:
        return sum(len(q.pending) for q in self._queues.values())

    # --- reading the log ------------------------------------------------------------------

    def _read(self, qid: int, queue: _Queue) -> None:
        while len(queue.pending) < MAX_PENDING_PER_QUEUE:
            units = self._store.queue_units(self.topic, qid, queue.read_offset, READ_BATCH)
            if not units:
                return
            for queue_offset, (phys, size, _tag) in enumerate(units, start=queue.read_offset):
                if size != BLANK_UNIT_SIZE:
                    self._apply(queue, queue_offset, phys)
            queue.read_offset += len(units)

    def _apply(self, queue: _Queue, queue_offset: int, phys: int) -> None:
        view = self._store.look_message_by_offset(phys)
        if view is None:
            return  # deleted by retention: whatever it said is older than any message still kept
        try:
            record = storedrecords.decode_stored_record(view)
            tag = record.tags
            if tag == CK_TAG:
                ck = CheckPoint.from_json(record.body)
                ck.revive_offset = queue_offset
                queue.pending[ck.key] = ck
            elif tag in (ACK_TAG, BATCH_ACK_TAG):
                ack = AckRecord.from_json(record.body)
                found = queue.pending.get(ack.key)
                if found is not None:
                    for offset in ack.offsets:
                        found.ack(offset)
        except (messageerrors.MessageFormatError, ReviveRecordError) as exc:
            self._bad.warning(self.topic, "unreadable revive record at %s queue offset %d: %s",
                              self.topic, queue_offset, exc)

    # --- reviving -------------------------------------------------------------------------

    async def _revive_due(self, queue: _Queue) -> None:
        now_ms = self._clock() * 1000
        for key, ck in list(queue.pending.items()):
            if ck.fully_acked or (now_ms >= ck.revive_time and await self._revive(ck)):
                del queue.pending[key]

    async def _revive(self, ck: CheckPoint) -> bool:
        """Copy every un-acked message of ``ck`` to the retry topic; False to try again later."""
        target = ck.topic if ck.topic.startswith(popinfo.RETRY_GROUP_TOPIC_PREFIX) else popinfo.pop_retry_topic(
            ck.topic, ck.group, v2=self._retry_v2)
        if not await self._ensure_retry_topic(target):
            return False
        for offset in ck.unacked_offsets():
            original = self._message(ck.topic, ck.queue_id, offset)
            if original is None:
                ck.ack(offset)  # gone (retention): nothing left to redeliver
                continue
            result = await self._store.put(retry_copy(original, target, ck.pop_time))
            if not result.ok:
                self._bad.warning(target, "revive of %s offset %d into %s failed: %s; retrying",
                                  ck.topic, offset, target, result.status.name)
                return False
            ck.ack(offset)  # revived: never copied twice by this process
            self.revived += 1
        return True

    def _message(self, topic: str, queue_id: int, offset: int) -> MessageExt | None:
        units = self._store.queue_units(topic, queue_id, offset, 1)
        if not units or units[0][1] == BLANK_UNIT_SIZE:
            return None
        view = self._store.look_message_by_offset(units[0][0])
        if view is None:
            return None
        try:
            return storedrecords.decode_stored_record(view, decompress=False)
        except messageerrors.MessageFormatError:
            return None


def retry_copy(original: MessageExt, retry_topic: str, pop_time: int) -> PutRequest:
    """The message a revive stores in the retry topic (RocketMQ's ``reviveRetry``)."""
    props = dict(original.properties)
    if original.reconsume_times == 0 or FIRST_POP_TIME not in props:
        props[FIRST_POP_TIME] = str(pop_time)
    props[messageproperties.WAIT] = "false"
    return PutRequest(retry_topic, 0, original.body, original.flag, props, original.sys_flag,
                      original.born_timestamp, original.born_host, original.reconsume_times + 1)

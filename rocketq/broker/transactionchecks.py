"""The transaction check loop: asking producers about half messages nobody finished.

A producer can die between storing its half message and sending END_TRANSACTION, or answer
UNKNOWN. Every ``transactionCheckInterval`` this loop (RocketMQ's
``TransactionalMessageCheckService``) reads the half queue from where it last stopped and, for
each half without an op message that is older than ``transactionTimeOut``:

1. appends a copy of the half to the half queue, with ``TRANSACTION_CHECK_TIMES`` counted up
   (the original is passed over; the copy is the one asked about and, if still unanswered,
   checked again on a later pass), then
2. sends CHECK_TRANSACTION_STATE (39), oneway, to one live producer connection of the half's
   ``PGROUP`` (round robin); the producer answers with END_TRANSACTION
   ``fromTransactionCheck=true`` naming the copy.

A half checked ``transactionCheckMax`` times, or older than ``fileReservedTime``, is discarded:
copied to ``TRANS_CHECK_MAX_TIME_TOPIC`` and passed over. How far the half queue and the op
queue were read is committed as the offsets of the internal group ``CID_RMQ_SYS_TRANS`` in
consumerOffset.json, so a restarted broker continues where it stopped and no half is lost.

Halves are checked in offset order, and a pass stops at the first half still younger than its
immunity window (``transactionTimeOut``, or the message's ``CHECK_IMMUNITY_TIME_IN_SECONDS``),
exactly as RocketMQ 4.9 does, so one long-immune half delays the checks of the halves after it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Final

from rocketq import tasks
from rocketq.broker.clienttable import ClientManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.transactions import HALF_TOPIC, OP_TOPIC, REMOVE_TAG, STORED_STATUSES, SYS_TRANS_GROUP, HalfLog
from rocketq.protocol import message
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.message import MessageExt
from rocketq.remoting.connection import Connection
from rocketq.store.results import GetStatus, PutRequest
from rocketq.store.settings import StoreSettings
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
"""Where halves checked too often go (1 queue, read-write)."""
OPS_PER_PULL: Final = 32
"""Op messages read at a time (RocketMQ's ``fillOpRemoveMap`` pulls 32)."""
MAX_PROCESS_TIME_MS: Final = 60_000
"""A pass over one half queue stops after this long; the next pass continues."""
YIELD_EVERY: Final = 64
"""Halves a pass looks at between two yields to the event loop."""
MS_PER_HOUR: Final = 3_600_000
MAX_CHECKS_IN_FLIGHT: Final = 2000
"""CHECK_TRANSACTION_STATE sends not yet written (RocketMQ's check pool queue); more are dropped
for this pass and asked again on the next."""


_END_OF_QUEUE: Final = frozenset({
    GetStatus.NO_MESSAGE_IN_QUEUE, GetStatus.OFFSET_OVERFLOW_ONE, GetStatus.OFFSET_OVERFLOW_BADLY,
})


@dataclass(frozen=True, slots=True)
class CheckSettings:
    timeout_ms: int
    """``transactionTimeOut``: a half younger than this is not checked."""
    interval_ms: int
    """``transactionCheckInterval``: time between passes."""
    check_max: int
    """``transactionCheckMax``: checks before a half is discarded."""
    file_reserved_ms: int
    """``fileReservedTime`` in ms: a half older than this is discarded unchecked."""

    @classmethod
    def of(cls, behaviour: BrokerBehaviour, store: StoreSettings) -> CheckSettings:
        return cls(behaviour.transaction_time_out, behaviour.transaction_check_interval,
                   behaviour.transaction_check_max, store.file_reserved_time * MS_PER_HOUR)


@dataclass(slots=True)
class _OpView:
    """What the op messages read so far say: finished halves and op offsets done with."""

    remove: dict[int, int] = field(default_factory=dict)
    """half queue offset -> offset of the op message that finished it"""
    done: set[int] = field(default_factory=set)
    next_offset: int = 0
    last_born_ms: int | None = None
    """Born time of the last op of the latest read, None when that read found none."""


class TransactionChecker:
    def __init__(self, halves: HalfLog, offsets: ConsumerOffsetManager, clients: ClientManager,
                 settings: CheckSettings) -> None:
        self._halves = halves
        self._store = halves.store
        self._offsets = offsets
        self._clients = clients
        self._settings = settings
        self._round_robin = itertools.count()
        self._sends: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._task = OwnedTask("broker-transaction-check", self._loop)

    def start(self) -> None:
        self._task.start()

    def wake(self) -> None:
        """Run a pass now instead of at the end of the interval."""
        self._wake.set()

    async def close(self) -> None:
        await self._task.stop()
        for send in list(self._sends):
            send.cancel()
        await asyncio.gather(*self._sends, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            await tasks.wait_event(self._wake, self._settings.interval_ms / 1000)
            self._wake.clear()
            try:
                await self.check()
            except Exception:
                log.exception("transaction check pass failed; the next pass retries")

    # --- one pass -----------------------------------------------------------------------------

    async def check(self) -> None:
        for queue_id in sorted(self._store.topic_queue_table().get(HALF_TOPIC, {})):
            await self._check_queue(queue_id)

    def _committed(self, topic: str, queue_id: int) -> int:
        offset = self._offsets.query(SYS_TRANS_GROUP, topic, queue_id)
        return offset if offset >= 0 else self._store.get_min_offset(topic, queue_id)

    async def _check_queue(self, queue_id: int) -> None:
        start_ms = _now_ms()
        half_offset = self._committed(HALF_TOPIC, queue_id)
        op_offset = self._committed(OP_TOPIC, queue_id)
        ops = _OpView(next_offset=op_offset)
        self._read_ops(ops, queue_id, half_offset)
        i = half_offset
        steps = 0
        while _now_ms() - start_ms < MAX_PROCESS_TIME_MS:
            steps += 1
            if steps % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # a long pass must not hold up the broker's requests
            if i in ops.remove:
                ops.done.add(ops.remove.pop(i))
                i += 1
                continue
            half, next_offset = self._read_half(queue_id, i)
            if half is None:
                if next_offset is None:
                    break
                i = next_offset
                continue
            verdict = await self._consider(half, ops, queue_id, start_ms)
            if verdict == "stop":
                break
            if verdict == "again":
                continue
            i += 1
        if i != half_offset:
            self._offsets.commit(SYS_TRANS_GROUP, HALF_TOPIC, queue_id, i)
        new_op_offset = _contiguous(op_offset, ops.done)
        if new_op_offset != op_offset:
            self._offsets.commit(SYS_TRANS_GROUP, OP_TOPIC, queue_id, new_op_offset)

    async def _consider(self, half: MessageExt, ops: _OpView, queue_id: int, start_ms: int) -> str:
        """What to do with one unfinished half: "next", "again" (same offset) or "stop"."""
        now = _now_ms()
        if self._needs_discard(half) or now - half.born_timestamp > self._settings.file_reserved_ms:
            await self._discard(half)
            return "next"
        if half.store_timestamp >= start_ms:
            return "stop"  # appended during this pass (our own copies among them)
        age = now - half.born_timestamp
        window = self._immunity_ms(half)
        if message.CHECK_IMMUNITY_TIME_IN_SECONDS in half.properties:
            if age < window:
                await self._check_prepared_offset(half, ops)
                return "next"
        elif 0 <= age < window:
            return "stop"
        # No op left to read: nothing can finish it any more. Ops still being read: check only
        # if they are newer than the pass (RocketMQ's rule).
        last_op = ops.last_born_ms
        needed = age > window if last_op is None else last_op - start_ms > self._settings.timeout_ms
        if needed or age <= -1:
            copy = await self._put_back(half)
            if copy is None:
                return "stop"  # the store refuses writes now: the next pass retries this half
            self._send_check(copy)
            return "next"
        if not self._read_ops(ops, queue_id, half.queue_offset):
            ops.last_born_ms = None
        return "again"

    # --- reading ------------------------------------------------------------------------------

    def _read_half(self, queue_id: int, offset: int) -> tuple[MessageExt | None, int | None]:
        """The half at ``offset``; else (None, where to go on), or (None, None) at the end."""
        got = self._store.get_messages(HALF_TOPIC, queue_id, offset, 1)
        if got.buffers:
            try:
                return message.decode_stored_record(got.buffers[0], decompress=False), None
            except message.MessageFormatError:
                log.error("half message at offset %d is unreadable; passing over it", offset)
                return None, offset + 1
        if got.status not in _END_OF_QUEUE and got.next_begin_offset > offset:
            return None, got.next_begin_offset  # expired or unreadable units: go past them
        return None, None

    def _read_ops(self, ops: _OpView, queue_id: int, half_offset: int) -> bool:
        """Read up to 32 more op messages into ``ops``; False when there were none."""
        got = self._store.get_messages(OP_TOPIC, queue_id, ops.next_offset, OPS_PER_PULL)
        if not got.buffers:
            ops.last_born_ms = None
            if got.status is GetStatus.OFFSET_TOO_SMALL:
                ops.next_offset = got.next_begin_offset
            return False
        ops.next_offset = got.next_begin_offset
        for view, op_offset in zip(got.buffers, got.queue_offsets, strict=True):
            try:
                op = message.decode_stored_record(view, decompress=False)
            except message.MessageFormatError:
                ops.done.add(op_offset)
                continue
            ops.last_born_ms = op.born_timestamp
            if op.tags != REMOVE_TAG:
                log.error("op message at offset %d has tag %r, not %r", op_offset, op.tags, REMOVE_TAG)
                continue
            finished = _half_offset_of(op.body)
            if finished < half_offset:
                ops.done.add(op_offset)
            else:
                ops.remove[finished] = op_offset
        return True

    # --- decisions ----------------------------------------------------------------------------

    def _needs_discard(self, half: MessageExt) -> bool:
        """Count this check in TRANSACTION_CHECK_TIMES; True once ``transactionCheckMax`` is reached."""
        text = half.properties.get(message.TRANSACTION_CHECK_TIMES)
        if text is None or not text.lstrip("-").isdigit():
            half.properties[message.TRANSACTION_CHECK_TIMES] = "1"
            return False
        times = int(text)
        if times >= self._settings.check_max:
            return True
        half.properties[message.TRANSACTION_CHECK_TIMES] = str(times + 1)
        return False

    def _immunity_ms(self, half: MessageExt) -> int:
        text = half.properties.get(message.CHECK_IMMUNITY_TIME_IN_SECONDS)
        if text is None or text == "-1":
            return self._settings.timeout_ms
        try:
            return int(text) * 1000
        except ValueError:
            return self._settings.timeout_ms

    async def _check_prepared_offset(self, half: MessageExt, ops: _OpView) -> None:
        """A half still immune: appended again, remembering the original's offset in
        TRAN_PREPARED_QUEUE_OFFSET, unless an op already finished that original."""
        prepared = half.properties.get(message.TRAN_PREPARED_QUEUE_OFFSET)
        if prepared is None:
            half.properties[message.TRAN_PREPARED_QUEUE_OFFSET] = str(half.queue_offset)
        elif prepared.isdigit() and int(prepared) in ops.remove:
            ops.done.add(ops.remove.pop(int(prepared)))
            return
        await self._put_back(half)

    # --- writing ------------------------------------------------------------------------------

    async def _put_back(self, half: MessageExt) -> MessageExt | None:
        """Append a copy of the half (with its updated properties); the copy, or None on failure."""
        result = await self._halves.put(PutRequest(
            half.topic, half.queue_id, half.body, half.flag, message.encode_properties(half.properties), half.sys_flag,
            half.born_timestamp, half.born_host, half.reconsume_times, 0,
        ))
        if result.status not in STORED_STATUSES:
            log.error("re-appending half %s failed: %s", half.msg_id, result.status.name)
            return None
        copy = self._halves.store.look_message_by_offset(result.wrote_offset)
        return message.decode_stored_record(copy, decompress=False) if copy is not None else None

    async def _discard(self, half: MessageExt) -> None:
        """Checked too often (or too old): keep it in TRANS_CHECK_MAX_TIME_TOPIC and move on."""
        self._halves.topics.ensure(CHECK_MAX_TIME_TOPIC, 1)
        result = await self._halves.put(PutRequest(
            CHECK_MAX_TIME_TOPIC, 0, half.body, half.flag, message.encode_properties(half.properties), half.sys_flag,
            half.born_timestamp, half.born_host, half.reconsume_times, 0,
        ))
        log.warning("transaction %s of group %s discarded after %s checks (%s)", half.msg_id,
                    half.properties.get(message.PGROUP), half.properties.get(message.TRANSACTION_CHECK_TIMES),
                    result.status.name)

    def _send_check(self, half: MessageExt) -> None:
        group = half.properties.get(message.PGROUP, "")
        conn = self._producer_connection(group)
        if conn is None:
            log.warning("no live producer of group %s to check transaction %s", group, half.msg_id)
            return
        if len(self._sends) >= MAX_CHECKS_IN_FLIGHT:
            log.warning("too many transaction checks in flight; %s is asked on the next pass", half.msg_id)
            return
        task = asyncio.get_running_loop().create_task(_send(conn, check_request(half)))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    def _producer_connection(self, group: str) -> Connection | None:
        live = [c for c in self._clients.producers.get(group, {}) if not c.closed]
        if not live:
            return None
        return live[next(self._round_robin) % len(live)]


def check_request(half: MessageExt) -> RemotingCommand:
    """CHECK_TRANSACTION_STATE about one (re-appended) half: header and the message as its
    producer sent it (real topic and queue)."""
    uniq = half.properties.get(message.UNIQ_KEY)
    header = CheckTransactionStateRequestHeader(
        tran_state_table_offset=half.queue_offset, commit_log_offset=half.commit_log_offset,
        msg_id=uniq, transaction_id=uniq, offset_msg_id=half.offset_msg_id,
    )
    body = message.encode_stored_record(
        topic=half.properties.get(message.REAL_TOPIC, half.topic),
        queue_id=int(half.properties.get(message.REAL_QID, "0")),
        body=half.body, flag=half.flag, properties=half.properties, sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp, born_host=half.born_host, store_timestamp=half.store_timestamp,
        store_host=half.store_host, reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.prepared_transaction_offset, queue_offset=half.queue_offset,
        physical_offset=half.commit_log_offset,
    )
    return RemotingCommand(code=RequestCode.CHECK_TRANSACTION_STATE, ext_fields=header.to_ext(), body=body)


async def _send(conn: Connection, request: RemotingCommand) -> None:
    try:
        await conn.invoke_oneway(request)
    except Exception as exc:  # a dead producer connection: the next pass asks another one
        log.info("CHECK_TRANSACTION_STATE to %s failed: %s", conn.remote_addr, exc)


def _half_offset_of(body: bytes) -> int:
    try:
        return int(body.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return -1  # as RocketMQ's getLong: below every half offset, so the op is simply done


def _contiguous(start: int, done: set[int]) -> int:
    """The op offset to commit: past the unbroken run of finished op offsets from ``start``."""
    offset = start
    while offset in done:
        offset += 1
    return offset


def _now_ms() -> int:
    return time.time_ns() // 1_000_000

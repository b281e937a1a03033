"""Delayed messages: SCHEDULE_TOPIC_XXXX, one delivery loop per delay level, delayOffset.json.

A message sent with the ``DELAY`` property ``n > 0`` (a *delay level*) is not stored in its
topic. The send path rewrites it (``to_schedule``, RocketMQ's ``CommitLog.asyncPutMessage``):
levels above the configured maximum are clamped to it, ``REAL_TOPIC``/``REAL_QID`` record
where it belongs, and it is stored in ``SCHEDULE_TOPIC_XXXX`` queue ``n - 1``. The store gives
that queue's units a tag code equal to the delivery time (store time + the level's delay from
``messageDelayLevel``), so all messages of one queue are due in the order they were stored.

``ScheduleService`` runs one owned task per level. Each reads its queue from the level's
*delay offset* (the next unit to deliver): while the unit at that offset is due, it re-puts a
copy of the message to ``REAL_TOPIC``/``REAL_QID`` through the store's normal put path and
moves the offset on; then it sleeps until the next unit is due, or until a new message arrives
in an empty queue. The copy keeps every property the scheduled message had (``DELAY``,
``REAL_TOPIC`` and ``REAL_QID`` included, as Apache RocketMQ's delivered messages do) and its
``UNIQ_KEY``, so the client's message id is unchanged.

Crash safety (at-least-once): the offsets are written to ``config/delayOffset.json`` every
``FLUSH_DELAY_OFFSET_INTERVAL_S`` and at shutdown, but only *after* the CommitLog has been
flushed past every re-put they count, so a persisted offset never covers a delivery that a
crash could still lose. After ``kill -9`` the loops resume from the persisted offsets: a
message delivered in the last interval may be delivered a second time, none is lost. Offsets
are clamped into the queue's [min, max] on load (RocketMQ's ``correctDelayOffset``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

import orjson

from rocketq.protocol import messageerrors, messageproperties, messagetypes, storedrecords
from rocketq.protocol.codes import SCHEDULE_TOPIC, TRANS_HALF_TOPIC, RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.messagetypes import MessageExt, MessageSysFlag
from rocketq.remoting.connection import Connection, Handler
from rocketq.store import configfiles
from rocketq.store.consumequeue import BLANK_UNIT_SIZE
from rocketq.store.messagestore import MessageStore, PutRequest, PutResult
from rocketq.tasks import OwnedTask, wait_event

log = logging.getLogger(__name__)

DELAY_OFFSET_FILE: Final = "delayOffset.json"
"""The delay offsets' file in the store's config directory (RocketMQ's name)."""
DEFAULT_MAX_DELAY_LEVEL: Final = 18
"""Levels in RocketMQ's default messageDelayLevel ("1s 5s ... 2h")."""
FIRST_DELIVERY_DELAY_S: Final = 1.0
"""RocketMQ starts each level's timer one second after the broker starts."""
RETRY_AFTER_FAILURE_S: Final = 0.1
"""A failed re-put is tried again (same offset) after this pause (RocketMQ 4.9.3+)."""
IDLE_RECHECK_S: Final = 1.0
"""An idle loop looks again at least this often: a missed wake-up costs at most this much."""
FLUSH_DELAY_OFFSET_INTERVAL_S: Final = 10.0
"""RocketMQ's flushDelayOffsetInterval: how often delayOffset.json is written."""
DELIVERY_BATCH: Final = 32
"""ConsumeQueue units read at a time; each due one is re-put before the next is looked at."""
_DELIVERABLE_TX = (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE)

Put = Callable[[PutRequest], Awaitable[PutResult]]


class DelayLevelError(messageerrors.MessageIllegalError):
    """A DELAY property that is not an integer; its text is the refusing remark."""


def delay_level(properties: dict[str, str]) -> int:
    """The message's delay level: 0 when DELAY is absent or not positive."""
    raw = properties.get(messageproperties.DELAY)
    if raw is None or raw == "":
        return 0
    try:
        return max(0, int(raw))
    except ValueError:
        raise DelayLevelError(f"DELAY={raw!r} is not a delay level (an integer)") from None


def to_schedule(topic: str, queue_id: int, properties: dict[str, str], sys_flag: int,
                max_level: int) -> tuple[str, int, dict[str, str]] | None:
    """Where a message with DELAY > 0 is stored instead: (SCHEDULE_TOPIC_XXXX, level - 1, props).

    None when the message is not delayed (no DELAY, DELAY <= 0, or a prepared/rolled-back
    transaction message, which RocketMQ never schedules). The level is clamped to ``max_level``
    and DELAY rewritten to match, as RocketMQ does.
    """
    level = delay_level(properties)
    if level <= 0 or messagetypes.transaction_type(sys_flag) not in _DELIVERABLE_TX:
        return None
    level = min(level, max_level)
    rewritten = {**properties, messageproperties.DELAY: str(level), messageproperties.REAL_TOPIC: topic,
                 messageproperties.REAL_QID: str(queue_id)}
    return SCHEDULE_TOPIC, level - 1, rewritten


def _decoded(view: memoryview) -> MessageExt:
    # compressed bodies stay compressed: the copy keeps the producer's sysFlag
    return storedrecords.decode_stored_record(view, decompress=False)


def delivered_copy(msg: MessageExt) -> PutRequest | None:
    """The message a due scheduled message becomes in its real topic (None: nowhere to go).

    Properties are kept as stored (RocketMQ builds the string before dropping DELAY), so the
    tag code is the hash of TAGS again and the unique key, and thus the msgId, is unchanged.
    """
    real_topic = msg.properties.get(messageproperties.REAL_TOPIC)
    real_qid = msg.properties.get(messageproperties.REAL_QID, "")
    if not real_topic or real_topic == TRANS_HALF_TOPIC or not real_qid.isdigit():
        return None
    return PutRequest(
        real_topic, int(real_qid), msg.body, msg.flag, messageproperties.encode_properties(msg.properties),
        msg.sys_flag, msg.born_timestamp, msg.born_host, msg.reconsume_times,
    )


# --- delayOffset.json -------------------------------------------------------------------------

_BARE_INT_KEY = re.compile(rb"([{,]\s*)(-?\d+)(\s*:)")
"""fastjson writes Integer map keys unquoted (``{1:5}``); JSON needs them quoted."""


def parse_delay_offsets(raw: bytes) -> dict[int, int]:
    """``{"offsetTable":{1:5,...}}`` as written by Apache RocketMQ or rocketq, as {level: offset}."""
    doc = orjson.loads(_BARE_INT_KEY.sub(rb'\1"\2"\3', raw))
    table = doc.get("offsetTable") if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise ValueError("no offsetTable object")
    offsets = {}
    for level, offset in table.items():
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise ValueError(f"offset of level {level} is {offset!r}, not an integer")
        offsets[int(level)] = offset
    return offsets


def render_delay_offsets(offsets: dict[int, int]) -> dict[str, dict[int, int]]:
    return {"offsetTable": dict(sorted(offsets.items()))}


def load_delay_offsets(path: Path) -> dict[int, int]:
    """The offsets in ``path`` (or its ``.bak``); empty when neither exists."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            return parse_delay_offsets(candidate.read_bytes())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            log.warning("delay offsets %s unreadable (%s)", candidate, exc)
    return {}


# --- the service -------------------------------------------------------------------------------


class ScheduleService:
    """Delivers due messages of SCHEDULE_TOPIC_XXXX, one owned task per delay level."""

    def __init__(self, store: MessageStore, delay_levels_ms: tuple[int, ...], path: Path, put: Put) -> None:
        self._store = store
        self._levels = delay_levels_ms
        self._path = path
        self._put = put
        self.offsets: dict[int, int] = {}
        """Level -> next ConsumeQueue offset to deliver."""
        self._arrived = {level: asyncio.Event() for level in self.levels}
        self._tasks = [OwnedTask(f"schedule-level-{level}", functools.partial(self._deliver_loop, level))
                       for level in self.levels]
        self._tasks.append(OwnedTask("schedule-offset-flush", self._persist_loop))
        self.delivered = 0
        """Messages moved to their real topic since start (a metric)."""
        self._started = False
        self._persisted: dict[int, int] | None = None
        """The offsets in delayOffset.json as this service last wrote them."""

    @property
    def levels(self) -> range:
        return range(1, len(self._levels) + 1)

    @property
    def max_level(self) -> int:
        return len(self._levels)

    def load(self) -> None:
        """Read delayOffset.json and clamp each offset into its queue's current range."""
        for level, offset in load_delay_offsets(self._path).items():
            if level in self._arrived:
                low = self._store.get_min_offset(SCHEDULE_TOPIC, level - 1)
                high = self._store.get_max_offset(SCHEDULE_TOPIC, level - 1)
                self.offsets[level] = min(max(offset, low), high)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._store.add_arrival_listener(self._on_arrival, topic=SCHEDULE_TOPIC)
        for task in self._tasks:
            task.start()

    async def close(self) -> None:
        """Stop the loops, then persist what is durable. Idempotent.

        A service never started (a slave's) writes nothing: its delayOffset.json is the
        master's copy, and the offsets loaded at start would be older.
        """
        for task in self._tasks:
            await task.stop()
        self._store.remove_arrival_listener(self._on_arrival)  # a demoted master keeps its store
        if not self._started:
            return
        self._started = False
        try:
            await self.persist()
        except OSError as exc:
            log.error("persisting delay offsets failed: %s", exc)

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.GET_ALL_DELAY_OFFSET: self.all_delay_offsets}

    async def all_delay_offsets(self, _conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_ALL_DELAY_OFFSET (45): delayOffset.json's content (a slave writes it verbatim)."""
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(self.to_json(), option=orjson.OPT_NON_STR_KEYS))

    def _on_arrival(self, topic: str, queue_id: int, _next_offset: int) -> None:
        if topic == SCHEDULE_TOPIC:
            event = self._arrived.get(queue_id + 1)
            if event is not None:
                event.set()

    def to_json(self) -> dict[str, dict[int, int]]:
        """The GET_ALL_DELAY_OFFSET answer and the file's content."""
        return render_delay_offsets(self.offsets)

    async def persist(self) -> None:
        """Write the offsets once the CommitLog holds every re-put they count (see module doc)."""
        snapshot = dict(self.offsets)
        if snapshot == self._persisted:
            return  # an idle broker does not fsync every interval for nothing
        await self._store.flush()
        await asyncio.to_thread(configfiles.write_json_atomic, self._path, render_delay_offsets(snapshot))
        self._persisted = snapshot

    async def _persist_loop(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_DELAY_OFFSET_INTERVAL_S)
            try:
                await self.persist()
            except OSError as exc:
                log.error("persisting delay offsets failed: %s", exc)

    async def _deliver_loop(self, level: int) -> None:
        await asyncio.sleep(FIRST_DELIVERY_DELAY_S)
        arrived = self._arrived[level]
        while True:
            arrived.clear()
            wait = await self.deliver_due(level)
            if wait > 0:
                await wait_event(arrived, wait)

    async def deliver_due(self, level: int) -> float:
        """Deliver every due message of ``level``; seconds until the loop should look again."""
        queue_id = level - 1
        offset = self._checked_offset(level)
        if offset >= self._store.get_max_offset(SCHEDULE_TOPIC, queue_id):
            return IDLE_RECHECK_S  # nothing scheduled: wait for an arrival
        units = self._store.queue_units(SCHEDULE_TOPIC, queue_id, offset, DELIVERY_BATCH)
        if not units:
            return RETRY_AFTER_FAILURE_S  # unreadable right now (a file being removed): look again soon
        limit_ms = self._levels[level - 1]
        for queue_offset, (phys, size, deliver_at) in enumerate(units, start=offset):
            if size != BLANK_UNIT_SIZE:
                now = time.time() * 1000
                if deliver_at > now + limit_ms:
                    deliver_at = int(now)  # the clock went back: never wait longer than the level's delay
                if deliver_at > now:
                    return min((deliver_at - now) / 1000, IDLE_RECHECK_S)
                view = self._store.look_message_by_offset(phys)
                # a message already deleted from the CommitLog (retention) is skipped, as in RocketMQ
                if view is not None and not await self._deliver(level, _decoded(view)):
                    return RETRY_AFTER_FAILURE_S
            self.offsets[level] = queue_offset + 1
        return 0.0

    def _checked_offset(self, level: int) -> int:
        """The level's offset, moved into its queue's range if it left it (files deleted)."""
        offset = self.offsets.get(level, 0)
        low = self._store.get_min_offset(SCHEDULE_TOPIC, level - 1)
        high = self._store.get_max_offset(SCHEDULE_TOPIC, level - 1)
        if not low <= offset <= high:
            corrected = min(max(offset, low), high)
            log.warning("delay level %d: offset %d outside [%d, %d], moving to %d", level, offset, low, high,
                        corrected)
            self.offsets[level] = offset = corrected
        return offset

    async def _deliver(self, level: int, msg: MessageExt) -> bool:
        copy = delivered_copy(msg)
        if copy is None:
            log.warning("delay level %d: message %s has no usable REAL_TOPIC/REAL_QID; skipped",
                        level, msg.offset_msg_id)
            return True
        result = await self._put(copy)
        if not result.appended:
            log.warning("delay level %d: re-put of %s to %s failed (%s); retrying", level,
                        msg.offset_msg_id, copy.topic, result.status.name)
            return False
        self.delivered += 1
        return True

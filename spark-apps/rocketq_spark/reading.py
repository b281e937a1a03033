"""Reading a topic's queues through rocketq's admin client: planning slices and pulling them.

A *slice* is a half-open offset range ``[begin, end)`` of one message queue (topic, brokerName,
queueId): the unit a Spark partition reads. Planning (on the driver) asks the name server for
the topic's route and each readable queue's min/max offsets (or the offsets nearest a time,
SEARCH_OFFSET_BY_TIMESTAMP), applies the requested start and end, and cuts each queue's range
into slices of at most ``max_per_slice`` messages. Reading (in a Python worker) opens its own
asyncio loop and ``AdminClient``, pulls the slice page by page with the tools group (nothing is
committed, no heartbeat is needed) and yields one row per message.

Offsets follow RocketMQ's meaning: a queue's min offset is its oldest kept message, its max
offset is one past the newest. Starting and ending specs are ``earliest``, ``latest`` or JSON
``{"brokerName": {"queueId": offset}}`` where -2 means earliest and -1 latest (Kafka's
convention); queues the JSON does not name take the default (earliest start, latest end).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Awaitable, Iterator
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from rocketq.admin import cluster
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.admin.routes import TopicRoute
from rocketq.admin.stats import MessageQueue
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import MessageExt
from rocketq.remoting.errors import RemotingError

EARLIEST: Final = -2
LATEST: Final = -1
PAGE: Final = 32
"""Messages per pull (RocketMQ's pullBatchSize default)."""
DEFAULT_MAX_PER_SLICE: Final = 100_000
DEFAULT_TIMEOUT: Final = 10.0

T = TypeVar("T")


class SourceError(ValueError):
    """Bad options, an unknown topic or an unreachable cluster: said plainly."""


OffsetSpec = int | dict[tuple[str, int], int]
"""EARLIEST, LATEST, or an offset per (brokerName, queueId) with -2/-1 allowed per entry."""


def parse_offsets(text: str | None, default: int, what: str) -> OffsetSpec:
    """``earliest``, ``latest`` or ``{"broker": {"queueId": offset}}``."""
    if text is None or text.strip() == "":
        return default
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        return EARLIEST if word == "earliest" else LATEST
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise TypeError("not an object")
        spec: dict[tuple[str, int], int] = {}
        for broker, queues in raw.items():
            if not isinstance(queues, dict):
                raise TypeError(f"{broker!r} does not map queue ids to offsets")
            for queue_id, offset in queues.items():
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                    raise TypeError(f"offset {offset!r} of {broker}/{queue_id}")
                spec[(str(broker), int(queue_id))] = offset
    except (ValueError, TypeError) as exc:
        raise SourceError(f"{what}: expected earliest, latest or JSON {{\"brokerName\": {{\"queueId\": offset}}}}"
                          f" ({exc})") from None
    return spec


def spec_for(spec: OffsetSpec, queue: MessageQueue, default: int) -> int:
    if isinstance(spec, int):
        return spec
    return spec.get((queue.broker_name, queue.queue_id), default)


def queue_key(broker_name: str, queue_id: int) -> str:
    """A queue's name in streaming offsets: ``brokerName/queueId``."""
    return f"{broker_name}/{queue_id}"


@dataclass(frozen=True, slots=True)
class QueueSlice:
    """One Spark partition's work: ``[begin, end)`` of one queue (picklable, carries no connection)."""

    namesrv: str
    topic: str
    broker_name: str
    queue_id: int
    begin: int
    end: int
    begin_ms: int | None = None
    end_ms: int | None = None
    """Drop messages stored before ``begin_ms`` or after ``end_ms``: a time-searched offset is a
    store's nearest guess, not a promise."""
    timeout: float = DEFAULT_TIMEOUT


async def guarded(namesrv: str, what: str, work: Awaitable[T]) -> T:
    """``work``, with transport failures and unknown topics turned into ``SourceError``."""
    try:
        return await work
    except AdminError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            raise SourceError(f"{what}: the topic does not exist (name server {namesrv})") from None
        raise SourceError(f"{what}: the server refused: {exc}") from None
    except (RemotingError, OSError) as exc:
        raise SourceError(f"{what}: name server or broker unreachable ({namesrv}): {exc}") from None


def run(namesrv: str, what: str, work: Any) -> Any:
    """Run a coroutine function ``work(admin)`` on a fresh loop with its own AdminClient."""

    async def main() -> Any:
        async with AdminClient(namesrv) as admin:
            return await guarded(namesrv, what, work(admin))

    return asyncio.run(main())


def _addr(route: TopicRoute, broker_name: str) -> str | None:
    broker = route.broker(broker_name)
    if broker is None:
        return None
    return broker.master_addr or broker.any_addr


async def queue_bounds(admin: AdminClient, topic: str) -> list[tuple[MessageQueue, str, int, int]]:
    """Every readable queue of the topic with its broker address, min offset and max offset."""
    route = await admin.topic_route(topic)
    out = []
    for queue in cluster.readable(route):
        addr = _addr(route, queue.broker_name)
        if addr is None:
            continue
        low = await admin.min_offset(addr, topic, queue.queue_id)
        high = await admin.max_offset(addr, topic, queue.queue_id)
        out.append((queue, addr, low, high))
    return out


async def plan(admin: AdminClient, namesrv: str, topic: str, *, starting: OffsetSpec = EARLIEST,
               ending: OffsetSpec = LATEST, begin_ms: int | None = None, end_ms: int | None = None,
               max_per_slice: int = DEFAULT_MAX_PER_SLICE, timeout: float = DEFAULT_TIMEOUT) -> list[QueueSlice]:
    """The slices of every readable queue between the requested start and end, empty ones left out."""
    slices = []
    for queue, addr, low, high in await queue_bounds(admin, topic):
        begin = resolve(spec_for(starting, queue, EARLIEST), low, high)
        end = resolve(spec_for(ending, queue, LATEST), low, high)
        if begin_ms is not None:
            begin = max(begin, await admin.search_offset(addr, topic, queue.queue_id, begin_ms))
        if end_ms is not None:
            # the first message stored after end_ms, or the queue's end: read up to it, then filter by time
            end = min(end, await admin.search_offset(addr, topic, queue.queue_id, end_ms + 1) + 1, high)
        for start in range(begin, end, max_per_slice):
            slices.append(QueueSlice(namesrv, topic, queue.broker_name, queue.queue_id, start,
                                     min(end, start + max_per_slice), begin_ms, end_ms, timeout))
    return slices


def resolve(offset: int, low: int, high: int) -> int:
    """A requested offset (or EARLIEST/LATEST) within a queue's ``[low, high]``."""
    if offset == EARLIEST:
        return low
    if offset == LATEST:
        return high
    return min(max(offset, low), high)


async def pull_slice(admin: AdminClient, piece: QueueSlice) -> AsyncGenerator[list[MessageExt], None]:
    """The slice's messages, a page at a time, in offset order."""
    route = await admin.topic_route(piece.topic)
    addr = _addr(route, piece.broker_name)
    if addr is None:
        raise SourceError(f"broker {piece.broker_name} of topic {piece.topic} is offline")
    queue = MessageQueue(piece.topic, piece.broker_name, piece.queue_id)
    offset = piece.begin
    while offset < piece.end:
        result = await admin.pull(addr, queue, offset, min(PAGE, piece.end - offset))
        if result.next_begin_offset <= offset:
            if offset < result.min_offset:  # the range start was deleted meanwhile: skip ahead
                offset = result.min_offset
                continue
            return
        yield [m for m in result.messages if m.queue_offset < piece.end
               and (piece.begin_ms is None or m.store_timestamp >= piece.begin_ms)
               and (piece.end_ms is None or m.store_timestamp <= piece.end_ms)]
        offset = result.next_begin_offset


def host(value: tuple[str, int]) -> str:
    return f"{value[0]}:{value[1]}"


def to_row(piece: QueueSlice, m: MessageExt) -> tuple[Any, ...]:
    """One message in the order of ``source.SCHEMA``."""
    return (m.topic, piece.broker_name, m.queue_id, m.queue_offset, m.commit_log_offset, m.msg_id,
            " ".join(m.keys), m.tags, dict(m.properties), m.born_timestamp, m.store_timestamp, host(m.born_host),
            m.reconsume_times, bytes(m.body))


def iter_rows(piece: QueueSlice | None) -> Iterator[tuple[Any, ...]]:
    """Rows of one slice; runs its own event loop and connection (a Python worker has neither)."""
    if piece is None:  # Spark's single empty partition when planning found nothing
        return
    loop = asyncio.new_event_loop()
    admin = AdminClient(piece.namesrv, timeout=piece.timeout)
    pages = pull_slice(admin, piece)
    what = f"reading {piece.topic} {piece.broker_name}/{piece.queue_id} [{piece.begin}, {piece.end})"
    try:
        while True:
            try:
                page = loop.run_until_complete(guarded(piece.namesrv, what, anext(pages)))
            except StopAsyncIteration:
                return
            for m in page:
                yield to_row(piece, m)
    finally:
        loop.run_until_complete(pages.aclose())
        loop.run_until_complete(admin.close())
        loop.close()

"""Finding, reading and sending single messages across a cluster, for mqadmin's message commands.

* By offset message id (``queryMsgById``): the id itself says which broker stored the message
  (store host:port) and where (CommitLog offset), so one VIEW_MESSAGE_BY_ID answers it.
* By key (``queryMsgByKey``) and by unique key (``queryMsgByUniqueKey``): every broker group of the
  topic's route is asked with QUERY_MESSAGE; each looks the key up in its IndexFile. A unique key
  (UNIQ_KEY, what a producer's SendResult calls msgId) is indexed like a key, so hash collisions
  are filtered out here by comparing the key itself.
* By scanning (``printMsg``): every readable queue of the topic is pulled from its start offset to
  its end offset (or the offsets nearest a time range) with the tools group, which never commits.
* A message's trace (``queryMsgTraceById``): the trace topic is queried by key for the msgId (trace
  messages are indexed under the msgIds they trace), and the records about that msgId decoded.
* Sending (``sendMessage``): one SEND_MESSAGE_V2 to a writable queue of the topic's route, or of
  TBW102's route when the topic does not exist yet and brokers may create it on first send, as a
  RocketMQ producer does.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

from rocketq.admin import cluster
from rocketq.admin.client import AdminClient, SendResult
from rocketq.admin.errors import AdminError, ArgumentError, UnavailableError
from rocketq.admin.routes import TopicRoute
from rocketq.admin.stats import MessageQueue
from rocketq.protocol import codes, msgid, traces
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import Message, MessageExt

PULL_BATCH: Final = 32
"""Messages per pull while scanning (RocketMQ's pullBatchSize default)."""
DEFAULT_TOPIC_QUEUE_NUMS: Final = 4
"""Queues a topic gets when a send creates it (the producer's defaultTopicQueueNums, as sent)."""


async def view_by_offset_id(admin: AdminClient, offset_msg_id: str) -> MessageExt:
    return await admin.view_message(*locate(offset_msg_id))


def locate(offset_msg_id: str) -> tuple[str, int]:
    """The broker address and CommitLog offset an offset message id names."""
    try:
        decoded = msgid.decode_offset_msg_id(offset_msg_id.strip().upper())
    except (msgid.MessageIdError, ValueError) as exc:
        raise ArgumentError(f"{offset_msg_id!r} is not an offset message id: {exc}") from None
    host, port = decoded.store_host
    if port <= 0 or host in ("0.0.0.0", "::"):
        raise ArgumentError(f"{offset_msg_id!r} names no broker address ({host}:{port})")
    return (f"[{host}]:{port}" if ":" in host else f"{host}:{port}"), decoded.commit_log_offset


async def query_by_key(admin: AdminClient, topic: str, key: str, *, max_num: int = 64, begin: int = 0,
                       end: int | None = None, unique: bool = False) -> list[MessageExt]:
    """Messages of a topic indexed under a key on any broker group, oldest first."""
    route = await admin.topic_route(topic)
    return await _query(admin, route, key, max_num=max_num, begin=begin, end=end, unique=unique)


async def _query(admin: AdminClient, route: TopicRoute, key: str, *, max_num: int = 64, begin: int = 0,
                 end: int | None = None, unique: bool = False) -> list[MessageExt]:
    found: dict[str, MessageExt] = {}
    for _, addr in route.read_addrs():
        for record in await admin.query_message(addr, route.topic, key, max_num=max_num, begin=begin, end=end,
                                                unique=unique):
            found.setdefault(record.offset_msg_id, record)
    records = sorted(found.values(), key=lambda r: (r.store_timestamp, r.offset_msg_id))
    if unique:
        return [r for r in records if r.uniq_key == key]
    return [r for r in records if key in r.keys]


async def query_by_unique_key(admin: AdminClient, topic: str, key: str) -> list[MessageExt]:
    """Messages whose UNIQ_KEY is ``key``; an offset message id given instead is looked up as one.

    More than one message can carry the same unique key when a producer retried a send. The
    offset-id reading is tried only when the id names a broker of the topic's route: a unique key
    also decodes as an offset id, one pointing at the producer's host.
    """
    route = await admin.topic_route(topic)
    records = await _query(admin, route, key, unique=True)
    if records:
        return records
    try:
        addr, offset = locate(key)
    except ArgumentError:
        return []
    if addr not in {a for b in route.broker_datas for _, a in b.addrs}:
        return []
    record = await admin.view_message(addr, offset)
    return [record] if record.topic == topic else []


async def query_trace(admin: AdminClient, msg_id: str, trace_topic: str = traces.DEFAULT_TRACE_TOPIC,
                      *, max_num: int = 64) -> list[traces.TraceRecord]:
    """Every trace record about ``msg_id`` in the trace topic, in time order (Pub first on ties)."""
    found = await query_by_key(admin, trace_topic, msg_id, max_num=max_num)
    records = [r for m in found for r in traces.decode(m.body, strict=False) if r.msg_id == msg_id]
    order = {t: i for i, t in enumerate(traces.TraceType)}
    return sorted(records, key=lambda r: (r.timestamp, order[r.type]))


@dataclass(frozen=True, slots=True)
class QueueRange:
    queue: MessageQueue
    addr: str
    begin: int
    end: int


async def scan_ranges(admin: AdminClient, topic: str, begin_ms: int | None = None,
                      end_ms: int | None = None) -> list[QueueRange]:
    """For every readable queue: where to read from and the offset to stop before."""
    route = await admin.topic_route(topic)
    out = []
    for queue in cluster.readable(route):
        broker = route.broker(queue.broker_name)
        addr = broker.any_addr if broker else None
        if addr is None:
            continue
        if begin_ms is None:
            begin = await admin.min_offset(addr, topic, queue.queue_id)
        else:
            begin = await admin.search_offset(addr, topic, queue.queue_id, begin_ms)
        if end_ms is None:
            end = await admin.max_offset(addr, topic, queue.queue_id)
        else:  # the first message stored after end_ms: one stored in end_ms itself is in the range
            end = await admin.search_offset(addr, topic, queue.queue_id, end_ms + 1)
        out.append(QueueRange(queue, addr, begin, end))
    return out


async def scan(admin: AdminClient, ranges: list[QueueRange], *, subscription: str = "*",
               end_ms: int | None = None) -> AsyncIterator[tuple[MessageQueue, MessageExt]]:
    """Every message in the ranges, queue by queue, in offset order.

    ``end_ms`` also drops messages stored after it, in case a queue's end offset was not found by
    time.
    """
    for r in ranges:
        offset = r.begin
        while offset < r.end:
            result = await admin.pull(r.addr, r.queue, offset, min(PULL_BATCH, r.end - offset),
                                      subscription=subscription)
            if result.next_begin_offset <= offset:
                break
            for record in result.messages:
                if record.queue_offset >= r.end or (end_ms is not None and record.store_timestamp > end_ms):
                    continue
                yield r.queue, record
            offset = result.next_begin_offset


async def send(admin: AdminClient, msg: Message, *, broker_name: str | None = None,
               queue_id: int | None = None) -> SendResult:
    """Send one message to a writable queue of the topic, optionally a chosen broker and/or queue."""
    route = await _publish_route(admin, msg.topic)
    candidates = [
        q for q in cluster.writable(route)
        if (broker_name is None or q.broker_name == broker_name) and (queue_id is None or q.queue_id == queue_id)
    ]
    if not candidates:
        where = f" on broker {broker_name}" if broker_name else ""
        which = f" with id {queue_id}" if queue_id is not None else ""
        raise UnavailableError(f"topic {msg.topic!r} has no writable queue{where}{which}")
    chosen = random.choice(candidates)
    broker = route.broker(chosen.broker_name)
    assert broker is not None and broker.master_addr is not None  # writable() only keeps such queues
    queue = MessageQueue(msg.topic, chosen.broker_name, chosen.queue_id)
    return await admin.send_message(broker.master_addr, queue, msg)


async def _publish_route(admin: AdminClient, topic: str) -> TopicRoute:
    try:
        return await admin.topic_route(topic)
    except AdminError as exc:
        if exc.code != ResponseCode.TOPIC_NOT_EXIST:
            raise
    try:
        default = await admin.topic_route(codes.AUTO_CREATE_TOPIC_KEY)
    except AdminError as exc:
        if exc.code != ResponseCode.TOPIC_NOT_EXIST:
            raise
        raise AdminError(ResponseCode.TOPIC_NOT_EXIST,
                         f"topic {topic} does not exist and no broker auto-creates topics") from None
    # a broker creates the topic with at most defaultTopicQueueNums queues; a producer caps its choice likewise
    capped = tuple(dataclasses.replace(q, read_queue_nums=min(q.read_queue_nums, DEFAULT_TOPIC_QUEUE_NUMS),
                                       write_queue_nums=min(q.write_queue_nums, DEFAULT_TOPIC_QUEUE_NUMS))
                   for q in default.queue_datas)
    return TopicRoute(capped, default.broker_datas, topic=topic)

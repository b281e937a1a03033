"""An in-process name server and brokers for the SDK's unit tests.

Real RemotingServers on 127.0.0.1 with handlers written here: they store messages as RocketMQ
records (the protocol codec), answer pulls by the reference's status table with long polling,
keep consumer offsets and group membership, and notify members when it changes. Tests can make
the next answers to a request code fail (``fail_next``). This is a test double for the client,
not a broker: no disk, no retention, no delay levels.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from rocketq.protocol import (
    batchbodies,
    headers,
    javahash,
    messageproperties,
    messagetypes,
    storedrecords,
    subscription,
)
from rocketq.protocol.codes import RequestCode, ResponseCode, retry_topic
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingServer

PULL_SUSPEND = 2
PULL_COMMIT_OFFSET = 1


@dataclass
class StoredQueue:
    records: list[bytes] = field(default_factory=list)
    tags: list[int] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    min_offset: int = 0


class FakeNameServer:
    def __init__(self) -> None:
        self.routes: dict[str, dict] = {}
        self.route_calls: list[str] = []
        self.server = RemotingServer({RequestCode.GET_ROUTEINFO_BY_TOPIC: self._route}, host="127.0.0.1")

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def _route(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        topic = headers.TopicHeader.from_ext(req.ext_fields).topic
        self.route_calls.append(topic)
        route = self.routes.get(topic)
        if route is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST, f"No topic route info for the topic: {topic}")
        return req.response(ResponseCode.SUCCESS, body=orjson.dumps(route))

    def set_route(self, topic: str, brokers: list[FakeBroker], queue_nums: int = 4, perm: int = 6) -> None:
        self.routes[topic] = {
            "queueDatas": [{"brokerName": b.name, "readQueueNums": queue_nums, "writeQueueNums": queue_nums,
                            "perm": perm, "topicSysFlag": 0} for b in brokers],
            "brokerDatas": [{"cluster": "DefaultCluster", "brokerName": b.name, "brokerAddrs": {"0": b.addr}}
                            for b in brokers],
        }


class FakeBroker:
    def __init__(self, name: str) -> None:
        self.name = name
        self.queues: dict[tuple[str, int], StoredQueue] = defaultdict(StoredQueue)
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.commitlog_offset = 0
        self.fail_next: dict[int, list[int]] = defaultdict(list)
        self.requests: list[tuple[int, dict[str, str]]] = []
        self.heartbeats: list[dict] = []
        self.members: dict[str, dict[str, Connection]] = defaultdict(dict)
        self.sent_back: list[headers.ConsumerSendMsgBackRequestHeader] = []
        self.end_remarks: list[str | None] = []
        self.unregistered: list[headers.UnregisterClientRequestHeader] = []
        self.send_code = ResponseCode.SUCCESS
        self.hang: set[int] = set()
        """Request codes this broker receives but never answers."""
        self._arrivals = asyncio.Condition()
        handlers = {
            RequestCode.SEND_MESSAGE_V2: self._send,
            RequestCode.SEND_BATCH_MESSAGE: self._send,
            RequestCode.PULL_MESSAGE: self._pull,
            RequestCode.QUERY_CONSUMER_OFFSET: self._query_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self._update_offset,
            RequestCode.GET_MAX_OFFSET: self._max_offset,
            RequestCode.GET_MIN_OFFSET: self._min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self._search_offset,
            RequestCode.HEART_BEAT: self._heartbeat,
            RequestCode.UNREGISTER_CLIENT: self._unregister,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self._consumer_list,
            RequestCode.CONSUMER_SEND_MSG_BACK: self._send_back,
            RequestCode.END_TRANSACTION: self._end_transaction,
        }
        self.server = RemotingServer({code: self._recording(code, h) for code, h in handlers.items()},
                                     host="127.0.0.1", on_connection_closed=self._closed)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def _recording(self, code, handler):
        async def run(conn: Connection, req: RemotingCommand) -> RemotingCommand | None:
            self.requests.append((code, dict(req.ext_fields)))
            if code in self.hang:
                await asyncio.Event().wait()
            failures = self.fail_next.get(code)
            if failures:
                return req.response(failures.pop(0), "injected failure")
            return await handler(conn, req)
        return run

    def codes(self) -> list[int]:
        return [code for code, _ in self.requests]

    # --- storing --------------------------------------------------------------------------

    def store(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str] | str = "",
              sys_flag: int = 0, flag: int = 0, reconsume_times: int = 0) -> tuple[int, str]:
        q = self.queues[(topic, queue_id)]
        offset = q.min_offset + len(q.records)
        record = storedrecords.encode_stored_record(
            topic=topic, queue_id=queue_id, body=body, flag=flag, properties=properties, sys_flag=sys_flag,
            born_timestamp=int(time.time() * 1000), store_timestamp=int(time.time() * 1000),
            store_host=("127.0.0.1", self.server.port), queue_offset=offset, physical_offset=self.commitlog_offset,
            reconsume_times=reconsume_times)
        ext = storedrecords.decode_stored_record(record, decompress=False)
        self.commitlog_offset += len(record)
        q.records.append(record)
        q.tags.append(javahash.tag_hash(ext.tags))
        q.times.append(ext.store_timestamp)
        self._wake()
        return offset, ext.offset_msg_id

    def _wake(self) -> None:
        async def notify() -> None:
            async with self._arrivals:
                self._arrivals.notify_all()
        asyncio.get_running_loop().create_task(notify())

    def truncate(self, topic: str, queue_id: int, count: int) -> None:
        """Forget the oldest ``count`` messages of a queue, as retention does."""
        q = self.queues[(topic, queue_id)]
        del q.records[:count], q.tags[:count], q.times[:count]
        q.min_offset += count

    def max_offset(self, topic: str, queue_id: int) -> int:
        q = self.queues[(topic, queue_id)]
        return q.min_offset + len(q.records)

    async def _send(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.send_header_from_v2(req.ext_fields)
        if h.batch:
            results = [self.store(h.topic, h.queue_id, item.body, item.encoded_properties, flag=item.flag)
                       for item in batchbodies.decode_batch_body(req.body)]
            offset, msg_id = results[0][0], ",".join(r[1] for r in results)
        else:
            offset, msg_id = self.store(h.topic, h.queue_id, req.body, h.properties or "", h.sys_flag, h.flag)
        reply = headers.SendMessageResponseHeader(msg_id=msg_id, queue_id=h.queue_id, queue_offset=offset)
        return req.response(self.send_code, ext_fields=reply.to_ext())

    # --- pulling --------------------------------------------------------------------------

    def _get(self, h: headers.PullMessageRequestHeader) -> tuple[int, int, list[bytes]]:
        q = self.queues[(h.topic, h.queue_id)]
        lo, hi = q.min_offset, q.min_offset + len(q.records)
        sub = subscription.build(h.topic, h.subscription, h.expression_type)
        if hi == 0:
            return (ResponseCode.PULL_NOT_FOUND if h.queue_offset == 0 else ResponseCode.PULL_OFFSET_MOVED), 0, []
        if h.queue_offset < lo:
            return ResponseCode.PULL_OFFSET_MOVED, lo, []
        if h.queue_offset == hi:
            return ResponseCode.PULL_NOT_FOUND, h.queue_offset, []
        if h.queue_offset > hi:
            return ResponseCode.PULL_OFFSET_MOVED, hi, []
        found: list[bytes] = []
        offset = h.queue_offset
        while offset < hi and len(found) < h.max_msg_nums:
            if sub.matches_tag_code(q.tags[offset - lo]):
                found.append(q.records[offset - lo])
            offset += 1
        return (ResponseCode.SUCCESS if found else ResponseCode.PULL_RETRY_IMMEDIATELY), offset, found

    async def _pull(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.PullMessageRequestHeader.from_ext(req.ext_fields)
        if h.sys_flag & PULL_COMMIT_OFFSET:
            self.offsets[(h.consumer_group, h.topic, h.queue_id)] = h.commit_offset
        code, next_offset, found = self._get(h)
        if code == ResponseCode.PULL_NOT_FOUND and h.sys_flag & PULL_SUSPEND:
            deadline = asyncio.get_running_loop().time() + h.suspend_timeout_millis / 1000
            while code == ResponseCode.PULL_NOT_FOUND:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                async with self._arrivals:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._arrivals.wait(), remaining)
                code, next_offset, found = self._get(h)
        q = self.queues[(h.topic, h.queue_id)]
        reply = headers.PullMessageResponseHeader(
            suggest_which_broker_id=0, next_begin_offset=next_offset, min_offset=q.min_offset,
            max_offset=q.min_offset + len(q.records))
        return req.response(code, ext_fields=reply.to_ext(), body=b"".join(found))

    # --- offsets --------------------------------------------------------------------------

    async def _query_offset(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.QueryConsumerOffsetRequestHeader.from_ext(req.ext_fields)
        offset = self.offsets.get((h.consumer_group, h.topic, h.queue_id))
        if offset is None:
            if self.queues[(h.topic, h.queue_id)].min_offset > 0:
                return req.response(ResponseCode.QUERY_NOT_FOUND, "Not found, maybe this group consumer boot first")
            offset = 0
        return req.response(ResponseCode.SUCCESS, ext_fields=headers.OffsetResponseHeader(offset=offset).to_ext())

    async def _update_offset(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.UpdateConsumerOffsetRequestHeader.from_ext(req.ext_fields)
        self.offsets[(h.consumer_group, h.topic, h.queue_id)] = h.commit_offset
        return req.response(ResponseCode.SUCCESS)

    async def _max_offset(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.TopicQueueRequestHeader.from_ext(req.ext_fields)
        offset = self.max_offset(h.topic, h.queue_id)
        return req.response(ResponseCode.SUCCESS, ext_fields=headers.OffsetResponseHeader(offset=offset).to_ext())

    async def _min_offset(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.TopicQueueRequestHeader.from_ext(req.ext_fields)
        offset = self.queues[(h.topic, h.queue_id)].min_offset
        return req.response(ResponseCode.SUCCESS, ext_fields=headers.OffsetResponseHeader(offset=offset).to_ext())

    async def _search_offset(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.SearchOffsetRequestHeader.from_ext(req.ext_fields)
        q = self.queues[(h.topic, h.queue_id)]
        index = next((i for i, t in enumerate(q.times) if t >= h.timestamp), len(q.times))
        offset = q.min_offset + index
        return req.response(ResponseCode.SUCCESS, ext_fields=headers.OffsetResponseHeader(offset=offset).to_ext())

    # --- membership -----------------------------------------------------------------------

    async def _heartbeat(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        data = orjson.loads(req.body)
        self.heartbeats.append(data)
        for consumer in data["consumerDataSet"]:
            group = consumer["groupName"]
            joined = data["clientID"] not in self.members[group]
            self.members[group][data["clientID"]] = conn
            if joined:
                await self._notify(group)
        return req.response(ResponseCode.SUCCESS)

    async def _unregister(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.UnregisterClientRequestHeader.from_ext(req.ext_fields)
        self.unregistered.append(h)
        if h.consumer_group and self.members[h.consumer_group].pop(h.client_id, None) is not None:
            await self._notify(h.consumer_group)
        return req.response(ResponseCode.SUCCESS)

    def _closed(self, conn: Connection) -> None:
        for group, members in self.members.items():
            gone = [cid for cid, c in members.items() if c is conn]
            for cid in gone:
                del members[cid]
            if gone:
                asyncio.get_running_loop().create_task(self._notify(group))

    async def _notify(self, group: str) -> None:
        for conn in list(self.members[group].values()):
            request = RemotingCommand(code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                                      ext_fields=headers.ConsumerGroupHeader(consumer_group=group).to_ext())
            if not conn.closed:
                await conn.invoke_oneway(request)

    async def _consumer_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        group = headers.ConsumerGroupHeader.from_ext(req.ext_fields).consumer_group
        ids = sorted(self.members[group])
        if not ids:
            return req.response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return req.response(ResponseCode.SUCCESS, body=orjson.dumps({"consumerIdList": ids}))

    async def _end_transaction(self, conn: Connection, req: RemotingCommand) -> RemotingCommand | None:
        """Recorded (see ``requests`` and ``end_remarks``); sent oneway, so nothing to answer."""
        self.end_remarks.append(req.remark)
        return None

    async def _send_back(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = headers.ConsumerSendMsgBackRequestHeader.from_ext(req.ext_fields)
        self.sent_back.append(h)
        original = self._find(h.offset)
        if original is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        props = dict(original.properties)
        props.setdefault(messageproperties.RETRY_TOPIC, original.topic)
        self.store(retry_topic(h.group), 0, original.body, props, flag=original.flag,
                   reconsume_times=original.reconsume_times + 1)
        return req.response(ResponseCode.SUCCESS)

    def _find(self, commit_log_offset: int) -> messagetypes.MessageExt | None:
        for q in self.queues.values():
            for record in q.records:
                ext = storedrecords.decode_stored_record(record)
                if ext.commit_log_offset == commit_log_offset:
                    return ext
        return None


class FakeCluster:
    """A name server and brokers, started and stopped together."""

    def __init__(self, *broker_names: str) -> None:
        self.namesrv = FakeNameServer()
        self.brokers = [FakeBroker(name) for name in broker_names]

    async def start(self) -> None:
        await self.namesrv.server.start()
        for broker in self.brokers:
            await broker.server.start()

    async def close(self) -> None:
        for broker in self.brokers:
            await broker.server.close()
        await self.namesrv.server.close()

    def topic(self, topic: str, queue_nums: int = 4, perm: int = 6) -> None:
        self.namesrv.set_route(topic, self.brokers, queue_nums, perm)


async def wait_until(predicate: Callable[[], bool], limit: float = 10.0) -> None:
    """Poll until ``predicate`` holds; the limit only turns a hang into a failure."""
    for _ in range(int(limit / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


class KeepingTransport:
    """A client connection's socket whose peer never answers by itself: keeps what is written
    (a test decodes it and hands the connection the answers it chooses)."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 10911) if name in ("peername", "sockname") else default

    def writelines(self, chunks: list[bytes]) -> None:
        self.written.extend(bytes(chunk) for chunk in chunks)

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return False

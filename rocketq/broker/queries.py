"""Offsets and lookups: max/min/time-searched offsets of a queue, and messages by key or id.

Answers come straight from the store's ConsumeQueue and IndexFile; a message body is the stored
record as written (VIEW_MESSAGE_BY_ID and QUERY_MESSAGE return what a pull would).
"""

from __future__ import annotations

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    EarliestMsgStoretimeResponseHeader,
    OffsetResponseHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    SearchOffsetRequestHeader,
    TopicQueueRequestHeader,
    ViewMessageRequestHeader,
)
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import MessageStore

MAX_QUERY_NUM = 64
"""Messages one QUERY_MESSAGE may return (RocketMQ's defaultQueryMaxNum is 32; clients ask up to 64)."""


class QueryHandlers:
    def __init__(self, store: MessageStore) -> None:
        self._store = store

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.GET_MAX_OFFSET: self.max_offset,
            RequestCode.GET_MIN_OFFSET: self.min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.earliest_store_time,
            RequestCode.QUERY_MESSAGE: self.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message,
        }

    async def max_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = TopicQueueRequestHeader.from_ext(request.ext_fields)
        offset = self._store.get_max_offset(header.topic, header.queue_id)
        return request.response(ResponseCode.SUCCESS, None, OffsetResponseHeader(offset=offset).to_ext())

    async def min_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = TopicQueueRequestHeader.from_ext(request.ext_fields)
        offset = self._store.get_min_offset(header.topic, header.queue_id)
        return request.response(ResponseCode.SUCCESS, None, OffsetResponseHeader(offset=offset).to_ext())

    async def search_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = SearchOffsetRequestHeader.from_ext(request.ext_fields)
        offset = self._store.get_offset_by_time(header.topic, header.queue_id, header.timestamp)
        return request.response(ResponseCode.SUCCESS, None, OffsetResponseHeader(offset=offset).to_ext())

    async def earliest_store_time(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = TopicQueueRequestHeader.from_ext(request.ext_fields)
        ts = self._store.get_earliest_store_time(header.topic, header.queue_id)
        return request.response(ResponseCode.SUCCESS, None, EarliestMsgStoretimeResponseHeader(timestamp=ts).to_ext())

    async def query_message(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = QueryMessageRequestHeader.from_ext(request.ext_fields)
        max_num = max(1, min(header.max_num, MAX_QUERY_NUM))
        result = self._store.query_message(
            header.topic, header.key, max_num, header.begin_timestamp, header.end_timestamp
        )
        ext = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        ).to_ext()
        if not result.buffers:
            return request.response(
                ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", ext
            )
        return request.response(ResponseCode.SUCCESS, None, ext, b"".join(result.buffers))

    async def view_message(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = ViewMessageRequestHeader.from_ext(request.ext_fields)
        record = self._store.look_message_by_offset(header.offset)
        if record is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {header.offset}")
        return request.response(ResponseCode.SUCCESS, body=bytes(record))

"""The sends of one read handled as a group: each still gets exactly the answer it would alone.

A real ``MessageStore`` in a temporary directory and the broker's ``SendHandlers`` behind a
``Connection`` whose transport only collects what is written, fed reads that hold several
frames (as a pipelining producer's socket delivers them).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.broker.send import BrokerAddress, ReplicaWait, SendHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfig, TopicConfigManager
from rocketq.client import sending, wire
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ProducerSettings
from rocketq.protocol import codes, frames, msgid, storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import ONEWAY_FLAG, RemotingCommand
from rocketq.protocol.messagetypes import Message
from rocketq.remoting import grouping
from rocketq.remoting.connection import Connection
from rocketq.store.messagestore import MessageStore, PutRequest, PutResult, PutStatus
from rocketq.store.results import BatchPutRequest
from rocketq.store.settings import FlushDiskType, StoreSettings

TOPIC = "GroupTopic"
PEEK = 999
"""A non-send request: its handler notes how many messages the store holds when it runs."""


class Transport:
    """Stands in for a socket: keeps what is written, and how many writes it took."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.writes = 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("10.0.0.9", 40000) if name in ("peername", "sockname") else default

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.data += data

    def writelines(self, chunks: list[bytes]) -> None:
        self.writes += 1
        for chunk in chunks:
            self.data += chunk

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        raise AssertionError("the connection was aborted")

    def close(self) -> None:
        raise AssertionError("the connection was closed")

    def answers(self) -> dict[int, RemotingCommand]:
        """Every response written so far, by opaque (each must be answered once)."""
        out: dict[int, RemotingCommand] = {}
        for cmd in frames.FrameDecoder().feed(bytes(self.data)):
            assert cmd.opaque not in out, f"opaque {cmd.opaque} answered twice"
            out[cmd.opaque] = cmd
        return out


class Broker:
    def __init__(self, root: Path, flush: FlushDiskType = FlushDiskType.ASYNC_FLUSH,
                 replication: ReplicaWait | None = None, **store: Any) -> None:
        self.fsyncs = 0
        settings = StoreSettings(store_path_root_dir=str(root), flush_disk_type=flush,
                                 **{"mapped_file_size_commit_log": 1 << 24, **store})
        self.store = MessageStore(settings, ("127.0.0.1", 10911), fsync=self._fsync)
        self.topics = TopicConfigManager(root / "topics.json")
        self.topics.upsert(TopicConfig(TOPIC, 4, 4))
        self.topics.upsert(TopicConfig(codes.AUTO_CREATE_TOPIC_KEY, 4, 4,
                                       perm=codes.PERM_READ_WRITE | codes.Perm.INHERIT))
        self.send = SendHandlers(self.store, self.topics, BrokerBehaviour(max_message_size=4096),
                                 BrokerAddress("DefaultCluster", "broker-a", "127.0.0.1", 10911, True),
                                 on_topic_created=self._created, replication=replication)
        self.seen_at_peek: list[int] = []
        self.conn = Connection({**self.send.handlers(), PEEK: self._peek}, name="test")
        self.transport = Transport()
        self.conn.connection_made(self.transport)  # type: ignore[arg-type]

    def _fsync(self, _fd: int) -> None:
        self.fsyncs += 1

    async def _created(self) -> None:
        await asyncio.sleep(0.01)  # as registering with the name servers would

    async def _peek(self, _conn: Connection, request: RemotingCommand) -> RemotingCommand:
        self.seen_at_peek.append(self.stored_count())
        return request.response(ResponseCode.SUCCESS)

    def stored_count(self) -> int:
        return self.store.commitlog.max_offset and len(self.stored_bodies())

    def stored_bodies(self) -> list[bytes]:
        """Bodies of every record in the CommitLog, in the order they were appended."""
        bodies = []
        offset = self.store.commitlog.min_offset
        while offset < self.store.commitlog.max_offset:
            view = self.store.commitlog.read_record(offset)
            assert view is not None
            ext = storedrecords.decode_stored_record(bytes(view))
            bodies.append(ext.body)
            offset += len(view)
        return bodies

    async def answered(self, count: int) -> dict[int, RemotingCommand]:
        for _ in range(500):
            answers = self.transport.answers()
            if len(answers) >= count:
                return answers
            await asyncio.sleep(0.01)
        raise AssertionError(f"{len(self.transport.answers())} of {count} requests answered")


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    b = Broker(tmp_path)
    b.store.open()
    await b.store.start()
    try:
        yield b
    finally:
        await b.store.close()


def send_frame(opaque: int, body: bytes, *, topic: str = TOPIC, queue_id: int = 0, oneway: bool = False) -> bytes:
    producer = ProducerSettings()
    out = sending.prepare(Message(topic, body), producer)
    header = sending.header(out, "pg", MessageQueue(topic, "broker-a", queue_id), producer)
    request = wire.send_request(header, out.body, batch=False)
    request.opaque = opaque
    if oneway:
        request.flag |= ONEWAY_FLAG
    return request.encode()


def other_frame(opaque: int) -> bytes:
    return RemotingCommand(code=PEEK, opaque=opaque).encode()


async def test_a_read_of_many_sends_answers_each_with_its_own_place(broker: Broker) -> None:
    count = 2 * grouping.MAX_GROUP + 3
    broker.conn.data_received(b"".join(send_frame(i, b"m%d" % i, queue_id=i % 2) for i in range(count)))
    answers = await broker.answered(count)
    assert all(a.code == ResponseCode.SUCCESS for a in answers.values())
    assert broker.stored_bodies() == [b"m%d" % i for i in range(count)]  # the order they came in
    for queue in (0, 1):
        mine = [answers[i] for i in range(count) if i % 2 == queue]
        assert [int(a.ext_fields["queueOffset"]) for a in mine] == list(range(len(mine)))
        assert {a.ext_fields["queueId"] for a in mine} == {str(queue)}
    offsets = [msgid.decode_offset_msg_id(answers[i].ext_fields["msgId"]).commit_log_offset for i in range(count)]
    assert offsets == sorted(set(offsets))
    # a group's answers leave in one write: three groups, three writes
    assert broker.transport.writes == 3


async def test_another_request_in_the_read_sees_the_sends_before_it_and_none_after(broker: Broker) -> None:
    data = [send_frame(0, b"a"), send_frame(1, b"b"), other_frame(2), send_frame(3, b"c"), other_frame(4)]
    broker.conn.data_received(b"".join(data))
    answers = await broker.answered(5)
    assert {a.code for a in answers.values()} == {ResponseCode.SUCCESS}
    assert broker.seen_at_peek == [2, 3]


async def test_a_failing_send_in_the_middle_fails_alone(broker: Broker) -> None:
    bad_header = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, opaque=1, ext_fields={"a": "pg"}, body=b"x")
    too_large = random.Random(1).randbytes(5000)  # over maxMessageSize, and not compressible below it
    data = [send_frame(0, b"first"), bad_header.encode(), send_frame(2, too_large),
            send_frame(3, b"bad queue", queue_id=99), send_frame(4, b"last")]
    broker.conn.data_received(b"".join(data))
    answers = await broker.answered(5)
    assert answers[0].code == answers[4].code == ResponseCode.SUCCESS
    assert answers[1].code == ResponseCode.SYSTEM_ERROR
    assert answers[2].code == ResponseCode.MESSAGE_ILLEGAL
    assert answers[3].code == ResponseCode.SYSTEM_ERROR and "queueId[99] is illegal" in (answers[3].remark or "")
    assert broker.stored_bodies() == [b"first", b"last"]
    assert int(answers[4].ext_fields["queueOffset"]) == 1


async def test_a_send_that_creates_its_topic_keeps_the_order(broker: Broker) -> None:
    data = [send_frame(0, b"1"), send_frame(1, b"2", topic="NewTopic"), send_frame(2, b"3"),
            send_frame(3, b"4", topic="NewTopic")]
    broker.conn.data_received(b"".join(data))
    answers = await broker.answered(4)
    assert {a.code for a in answers.values()} == {ResponseCode.SUCCESS}
    assert broker.stored_bodies() == [b"1", b"2", b"3", b"4"]


async def test_oneway_sends_are_stored_and_not_answered(broker: Broker) -> None:
    data = [send_frame(0, b"a", oneway=True), send_frame(1, b"b"), send_frame(2, b"c", oneway=True)]
    broker.conn.data_received(b"".join(data))
    answers = await broker.answered(1)
    await asyncio.sleep(0.05)
    assert list(broker.transport.answers()) == [1] and answers[1].code == ResponseCode.SUCCESS
    assert broker.stored_bodies() == [b"a", b"b", b"c"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=1, max_value=2000), max_size=6))
def test_frames_split_across_reads_are_each_answered_once(tmp_path_factory: pytest.TempPathFactory,
                                                          cuts: list[int]) -> None:
    async def run() -> None:
        broker = Broker(tmp_path_factory.mktemp("split"))
        broker.store.open()
        await broker.store.start()
        try:
            data = b"".join(send_frame(i, b"%d" % i + b"x" * 200) if i % 3 else other_frame(i) for i in range(8))
            points = sorted({min(c, len(data)) for c in cuts})
            for start, end in zip([0, *points], [*points, len(data)], strict=True):
                broker.conn.data_received(data[start:end])
            answers = await broker.answered(8)
            assert sorted(answers) == list(range(8))
            assert [b[:1] for b in broker.stored_bodies()] == [b"1", b"2", b"4", b"5", b"7"]
        finally:
            await broker.store.close()
    asyncio.run(run())


async def test_sync_flush_group_waits_once_for_all(tmp_path: Path) -> None:
    broker = Broker(tmp_path, FlushDiskType.SYNC_FLUSH)
    broker.store.open()
    await broker.store.start()
    try:
        before = broker.store.flusher.fsync_calls
        broker.conn.data_received(b"".join(send_frame(i, b"d%d" % i) for i in range(grouping.MAX_GROUP)))
        answers = await broker.answered(grouping.MAX_GROUP)
        assert {a.code for a in answers.values()} == {ResponseCode.SUCCESS}
        assert broker.store.flusher.fsync_calls - before == 1  # one group commit for the whole group
        assert broker.store.commitlog.flushed_offset == broker.store.commitlog.max_offset
    finally:
        await broker.store.close()


class GatheringSlave:
    """A slave that acknowledges only once ``expected`` sends wait for it at the same time;
    a send still waiting after a while is answered FLUSH_SLAVE_TIMEOUT."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.waiting = 0
        self.all_waiting = asyncio.Event()

    async def wait_for_slave(self, requests: list[PutRequest] | BatchPutRequest, result: PutResult) -> PutResult:
        self.waiting += 1
        if self.waiting == self.expected:
            self.all_waiting.set()
        try:
            await asyncio.wait_for(self.all_waiting.wait(), 2.0)
        except TimeoutError:
            return dataclasses.replace(result, status=PutStatus.FLUSH_SLAVE_TIMEOUT)
        return result


async def test_a_group_waits_for_the_slave_once_not_once_per_send(tmp_path: Path) -> None:
    # one after another, a slave that stops answering would hold a group for a timeout per send
    slave = GatheringSlave(4)
    broker = Broker(tmp_path, replication=slave)
    broker.store.open()
    await broker.store.start()
    try:
        broker.conn.data_received(b"".join(send_frame(i, b"r%d" % i) for i in range(4)))
        answers = await broker.answered(4)
        assert [answers[i].code for i in range(4)] == [ResponseCode.SUCCESS] * 4
    finally:
        await broker.store.close()

"""CPU cost of the hot paths, in microseconds of process CPU time per message.

    .venv/bin/python bench/hotpath.py [--messages N] [--only NAME ...] [--calls] [--slow-host]

Whole-system numbers (``rocketq bench``) on a shared 2-core machine move with whatever else
runs; CPU time per message moves less (the best of several runs is reported), and the number
of function calls per message (``--calls``, counted by cProfile) does not move at all. Every
case drives the real code with real bytes, in one process, without sockets:

* ``broker-send-*``: SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE frames (``-sync``: 8 per read,
  ``-single``: one per read, as a producer sending one at a time delivers them), encoded by the producer's own
  code, fed to a broker ``Connection`` (the frame decoder, dispatch, ``SendHandlers``, a real
  ``MessageStore`` in a temporary directory under ASYNC_FLUSH, the response encoding) through
  a transport that only collects the bytes written.
* ``broker-pull``: PULL_MESSAGE frames of 32 messages against that store.
  ``broker-pull-1``: one message per pull (end to end at 5 000 msg/s a pull answers one or
  two), one pull per read, over an eighth of ``--messages``.
  ``broker-pull-woken``: the end-to-end round: a pull held at the queue's end, then one
  single send to that queue, which wakes it (the send's answer and the woken pull's answer
  both written), over an eighth of ``--messages``; per message, the send included.
* ``store-put-single``: ``MessageStore.put_group_now`` of one message at a time (ASYNC_FLUSH,
  TAGS, KEYS and UNIQ_KEY as a producer's single send has them): the store's share of a lone send.
* ``store-sync-flush``: ``MessageStore.put`` under SYNC_FLUSH from 32 concurrent writers, the
  group commit's fsync replaced by a no-op: what waiting for the flush costs apart from the disk.
* ``consumer-decode``: a consumer decoding pull answers of 32 stored records (1 KiB bodies,
  four properties) into ``MessageExt``s.
* ``consumer-path``: what a push consumer does with such answers after the socket: the pull
  result (decode, queue bounds), the process queue, the concurrent consume service's listener
  call (a listener that only counts) and the offset it then commits.
* ``consumer-pulls``: a push consumer's whole client side of a drain, less the kernel and the
  broker: 8 ``PullTask``s (as a ``PushConsumer`` runs them, its settings of ``rocketq bench
  consumer``) pulling through a real client ``Connection`` whose transport answers each pull
  written, in the next loop turn, with a FOUND answer of 32 records encoded beforehand, handed
  over in reads of ``PULL_READ_SIZE`` bytes as a socket would (the answers' framing is not counted).
  ``consumer-pulls-1``: the same with one record per answer (end to end at 5 000 msg/s a pull
  answers one or two messages), over an eighth of ``--messages``.
* ``producer-*``: the producer's per-send work without the network: validation, unique key,
  header and frame encoding, then decoding the broker's answer into a ``SendResult``.
* ``producer-send``: a started ``Producer``'s ``send``, one at a time, awaited, through its real
  client ``Connection`` whose transport answers each write in the next loop turn (the answers
  encoded beforehand): the whole client side of a sync send (queue choice, request, the
  coroutines, the loop turns, answer dispatch, result), less the kernel and the broker.
* ``producer-pipelined``: a started ``Producer``'s ``send_async`` with a callback, 1 000 in
  flight, through its real client ``Connection`` (whose transport only collects the frames),
  the broker's answers fed back to that connection as one read per window: the whole client
  side of a pipelined single-message send (queue choice, request, answer dispatch, fault
  tolerance, result, callback), less the answers' encoding, which is the broker's.

It measures; it asserts nothing. Numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from rocketq.broker.clienttable import ClientManager
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.pull import PullHandlers
from rocketq.broker.send import BrokerAddress, SendHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfig, TopicConfigManager
from rocketq.client import producer as producer_module
from rocketq.client import pulling, sending, wire
from rocketq.client.consuming import ConcurrentConsumeService, ConsumeStatus
from rocketq.client.instance import ClientInstance
from rocketq.client.offsetstores import RemoteBrokerOffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.producer import Producer
from rocketq.client.pulltasks import PullTask
from rocketq.client.queues import MessageQueue
from rocketq.client.routes import TopicRoute
from rocketq.client.settings import ProducerSettings, PushConsumerSettings, configure
from rocketq.protocol import frames, headers, requests, storedrecords, subscription
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.messagetypes import Message
from rocketq.protocol.routedata import BrokerData, QueueData
from rocketq.remoting.connection import COALESCE_FRAMES, ClientConnection, Connection
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import PutRequest
from rocketq.store.settings import FlushDiskType, StoreSettings

TOPIC = "HotPathTopic"
GROUP = "hotpath_group"
BODY_SIZE = 1024
BATCH = 32
SUSPENDED_PULL = 4 | 2 | 1
"""A push consumer's pull: subscription, suspend (held until a message comes), commit offset."""
FRAMES_PER_READ = 8
"""How many request frames one socket read hands the broker (a busy connection's pipelining)."""


class CollectingTransport:
    """Stands in for a socket: counts what the broker writes."""

    def __init__(self) -> None:
        self.frames_written = 0
        self.bytes_written = 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default

    def write(self, data: bytes) -> None:
        self.frames_written += 1
        self.bytes_written += len(data)

    def writelines(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            self.write(chunk)

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        """Nothing to tear down."""

    def close(self) -> None:
        """Nothing to tear down."""


class Broker:
    """A store and the send/pull handlers wired as ``BrokerServer`` wires them."""

    def __init__(self, root: Path) -> None:
        behaviour = BrokerBehaviour()
        settings = StoreSettings(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 30)
        self.store = MessageStore(settings, ("127.0.0.1", 10911))
        self.topics = TopicConfigManager(root / "topics.json")
        self.topics.upsert(TopicConfig(TOPIC, 8, 8))
        self.send = SendHandlers(self.store, self.topics, behaviour,
                                 BrokerAddress("DefaultCluster", "broker-a", "127.0.0.1", 10911, True),
                                 on_topic_created=_nothing)
        self.pull = PullHandlers(self.store, self.topics, SubscriptionGroupManager(root / "groups.json"),
                                 ConsumerOffsetManager(root / "offsets.json"), ClientManager(lambda g, c: None),
                                 behaviour, is_master=True)
        self.handlers = {**self.send.handlers(), **self.pull.handlers()}

    async def __aenter__(self) -> Broker:
        self.store.open()
        await self.store.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.store.close()

    def connection(self) -> tuple[Connection, CollectingTransport]:
        conn = Connection(self.handlers, name="hotpath")
        transport = CollectingTransport()
        conn.connection_made(transport)  # type: ignore[arg-type]
        return conn, transport


async def _nothing() -> None:
    return None


def _producer_frame(settings: ProducerSettings, batch: bool, queue_id: int) -> bytes:
    mq = MessageQueue(TOPIC, "broker-a", queue_id)
    body = b"x" * BODY_SIZE
    if batch:
        out = sending.prepare_batch([Message(TOPIC, body) for _ in range(BATCH)], settings)
    else:
        out = sending.prepare(Message(TOPIC, body, properties={"TAGS": "TagA", "KEYS": "k1"}), settings)
    request = wire.send_request(sending.header(out, "hotpath_producer", mq, settings), out.body, batch=batch)
    request.opaque = queue_id
    return _framed(request)


def _framed(cmd: frames.RemotingCommand) -> bytes:
    return cmd.encode()


def _pull_frame(offset: int, queue_id: int, max_nums: int = BATCH, sys_flag: int = 4 | 1) -> bytes:
    header = headers.PullMessageRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=queue_id, queue_offset=offset, max_msg_nums=max_nums,
        sys_flag=sys_flag, commit_offset=offset, suspend_timeout_millis=15000, subscription="*",
        sub_version=1, expression_type="TAG")
    return _framed(frames.RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=offset, ext_fields=header.to_ext()))


def _chunks(data: list[bytes], size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield b"".join(data[i:i + size])


SLOW_HOST = False
"""Set by ``--slow-host``: see ``_hotpath_producer``."""

PROFILER: cProfile.Profile | None = None
"""Set by ``--calls``: the measured part of each case runs under it."""


async def _feed(conn: Connection, transport: CollectingTransport, reads: list[bytes], expected: int) -> float:
    """CPU seconds to hand the broker ``reads`` and let it write ``expected`` responses."""
    started = time.process_time()
    if PROFILER is not None:
        PROFILER.enable()
    for read in reads:
        conn.data_received(read)
        await asyncio.sleep(0)
    while transport.frames_written < expected:
        await asyncio.sleep(0)
    if PROFILER is not None:
        PROFILER.disable()
    return time.process_time() - started


async def broker_send(root: Path, messages: int, batch: bool, per_read: int = FRAMES_PER_READ) -> float:
    async with Broker(root) as broker:
        settings = ProducerSettings()
        per_frame = BATCH if batch else 1
        count = max(1, messages // per_frame)
        frames_ = [_producer_frame(settings, batch, i % 8) for i in range(count)]
        conn, transport = broker.connection()
        await _feed(conn, transport, list(_chunks(frames_[:50], 1 if batch else per_read)), 50)  # warm-up
        transport.frames_written = 0
        reads = list(_chunks(frames_, 1 if batch else per_read))
        seconds = await _feed(conn, transport, reads, len(frames_))
        return seconds / (count * per_frame) * 1e6


async def broker_pull(root: Path, messages: int) -> float:
    async with Broker(root) as broker:
        settings = ProducerSettings()
        conn, transport = broker.connection()
        batches = max(1, messages // BATCH)
        frames_ = [_producer_frame(settings, True, 0) for _ in range(batches)]
        await _feed(conn, transport, frames_, len(frames_))
        transport.frames_written = 0
        pulls = [_pull_frame(i * BATCH, 0) for i in range(batches)]
        seconds = await _feed(conn, transport, list(_chunks(pulls, FRAMES_PER_READ)), len(pulls))
        return seconds / (batches * BATCH) * 1e6


async def broker_pull_one(root: Path, messages: int) -> float:
    """One-message pulls, one per read."""
    async with Broker(root) as broker:
        settings = ProducerSettings()
        conn, transport = broker.connection()
        sends = [_producer_frame(settings, False, 0) for _ in range(messages)]
        await _feed(conn, transport, list(_chunks(sends, FRAMES_PER_READ)), len(sends))
        await _feed(conn, transport, [_pull_frame(i, 0, 1) for i in range(100)], len(sends) + 100)  # warm-up
        transport.frames_written = 0
        pulls = [_pull_frame(i, 0, 1) for i in range(100, messages)]
        seconds = await _feed(conn, transport, pulls, len(pulls))
        return seconds / len(pulls) * 1e6


async def broker_pull_woken(root: Path, messages: int) -> float:
    """Rounds of a pull held at the queue's end and the single send that wakes it."""
    async with Broker(root) as broker:
        settings = ProducerSettings()
        consumer, _consumer_out = broker.connection()
        producer, producer_out = broker.connection()
        send = _producer_frame(settings, False, 0)
        pulls = [_pull_frame(i, 0, BATCH, SUSPENDED_PULL) for i in range(messages + 100)]

        async def rounds(first: int, count: int) -> float:
            started = time.process_time()
            if PROFILER is not None:
                PROFILER.enable()
            for i in range(first, first + count):
                consumer.data_received(pulls[i])
                producer.data_received(send)
                # the woken answer is written as the send's arrival releases the held pull
                while broker.pull.held_count or producer_out.frames_written <= i:
                    await asyncio.sleep(0)
            if PROFILER is not None:
                PROFILER.disable()
            return time.process_time() - started

        await rounds(0, 100)  # warm-up
        return await rounds(100, messages) / messages * 1e6


async def store_sync_flush(root: Path, messages: int) -> float:
    settings = StoreSettings(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 30,
                             flush_disk_type=FlushDiskType.SYNC_FLUSH)
    store = MessageStore(settings, ("127.0.0.1", 10911), fsync=lambda fd: None)
    store.open()
    await store.start()
    writers = 32
    request = PutRequest(TOPIC, 0, b"x" * BODY_SIZE, properties="TAGS\x01TagA\x02", tags_code=0)

    async def writer(count: int) -> None:
        for _ in range(count):
            result = await store.put(request)
            assert result.ok, result

    try:
        started = time.process_time()
        if PROFILER is not None:
            PROFILER.enable()
        await asyncio.gather(*(writer(messages // writers) for _ in range(writers)))
        if PROFILER is not None:
            PROFILER.disable()
        return (time.process_time() - started) / (messages // writers * writers) * 1e6
    finally:
        await store.close()


async def store_put_single(root: Path, messages: int) -> float:
    """``MessageStore.put_group_now`` of one one-message put at a time (ASYNC_FLUSH), with the
    properties a producer's single send carries (two index keys): the store's share of a lone send."""
    settings = StoreSettings(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 30)
    store = MessageStore(settings, ("127.0.0.1", 10911))
    store.open()
    await store.start()
    props = "TAGS\x01TagA\x02KEYS\x01k1\x02UNIQ_KEY\x017F0000010F2A18B4AAC2000000000000\x02WAIT\x01true\x02"
    puts = [[PutRequest(TOPIC, i % 8, b"x" * BODY_SIZE, properties=props, tags_code=0)] for i in range(messages)]
    try:
        for put in puts[:50]:  # warm-up
            store.put_group_now([put])
        started = time.process_time()
        if PROFILER is not None:
            PROFILER.enable()
        for put in puts:
            store.put_group_now([put])
        if PROFILER is not None:
            PROFILER.disable()
        return (time.process_time() - started) / messages * 1e6
    finally:
        await store.close()


def consumer_decode(root: Path, messages: int) -> float:
    """Decode pull answer bodies of 32 stored records into ``MessageExt``s, as a consumer does."""
    props = ("TAGS\x01TagA\x02KEYS\x01k1\x02UNIQ_KEY\x017F0000010F2A18B4AAC2000000000000\x02"
             "CLUSTER\x01DefaultCluster\x02")
    record = storedrecords.encode_stored_record(topic=TOPIC, queue_id=0, body=b"x" * BODY_SIZE, properties=props,
                                                born_host=("127.0.0.1", 50000), store_host=("127.0.0.1", 10911))
    body = record * BATCH
    pulls = max(1, messages // BATCH)
    started = time.process_time()
    if PROFILER is not None:
        PROFILER.enable()
    for _ in range(pulls):
        requests.decode_records(body)
    if PROFILER is not None:
        PROFILER.disable()
    return (time.process_time() - started) / (pulls * BATCH) * 1e6


async def consumer_path(messages: int) -> float:
    """Pull answers of 32 records through ``to_result``, a ``ProcessQueue`` and a
    ``ConcurrentConsumeService`` (listener calls, commit point), as a push consumer's loop."""
    props = "UNIQ_KEY\x017F0000010F2A18B4AAC2000000000000\x02WAIT\x01true\x02"
    pulls = max(1, messages // BATCH)
    bodies = [b"".join(storedrecords.encode_stored_record(
        topic=TOPIC, queue_id=0, body=b"x" * BODY_SIZE, properties=props, born_host=("127.0.0.1", 50000),
        store_host=("127.0.0.1", 10911), queue_offset=p * BATCH + i) for i in range(BATCH)) for p in range(pulls)]
    counted = 0

    def listener(msgs: list[Any], _ctx: Any) -> ConsumeStatus:
        nonlocal counted
        counted += len(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    settings = configure(PushConsumerSettings, {"consume_message_batch_max_size": BATCH})
    offsets = RemoteBrokerOffsetStore(None, GROUP)  # type: ignore[arg-type]  # only its memory table is used
    service = ConcurrentConsumeService(GROUP, settings, listener, None, offsets)  # type: ignore[arg-type]
    pq, sub, mq = ProcessQueue(), subscription.build(TOPIC, "*"), MessageQueue(TOPIC, "broker-a", 0)
    started = time.process_time()
    if PROFILER is not None:
        PROFILER.enable()
    for p, body in enumerate(bodies):
        header = headers.PullMessageResponseHeader(suggest_which_broker_id=0, next_begin_offset=(p + 1) * BATCH,
                                                   min_offset=0, max_offset=pulls * BATCH)
        result = pulling.to_result(wire.PullReply(ResponseCode.SUCCESS, header, body), sub)
        pq.put(result.messages)
        service.submit(result.messages, pq, mq)
        await asyncio.sleep(0)
    while service.in_flight:
        await asyncio.sleep(0)
    if PROFILER is not None:
        PROFILER.disable()
    assert counted == pulls * BATCH and offsets.read_memory(mq) == pulls * BATCH
    return (time.process_time() - started) / (pulls * BATCH) * 1e6


def producer_path(messages: int, batch: bool) -> float:
    """Prepare, encode and decode the answer, as the producer does around each send."""
    settings = ProducerSettings()
    mq = MessageQueue(TOPIC, "broker-a", 0)
    answer = frames.RemotingCommand(code=0, flag=frames.RESPONSE_FLAG, ext_fields={
        "msgId": "7F00000100002A9F0000000000000000", "queueId": "0", "queueOffset": "1",
        "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}).encode()
    per_call = BATCH if batch else 1
    calls = max(1, messages // per_call)
    body = b"x" * BODY_SIZE
    started = time.process_time()
    if PROFILER is not None:
        PROFILER.enable()
    for _ in range(calls):
        msgs = [Message(TOPIC, body) for _ in range(per_call)]
        out = sending.prepare_batch(msgs, settings) if batch else sending.prepare(msgs[0], settings)
        request = wire.send_request(sending.header(out, "hotpath_producer", mq, settings), out.body, batch=batch)
        request.encode()
        response = frames.decode_frame(memoryview(answer)[4:])
        reply = wire.SendReply(0, headers.SendMessageResponseHeader.from_ext(response.ext_fields))  # type: ignore[arg-type]
        sending.to_result(reply, out, mq)
    if PROFILER is not None:
        PROFILER.disable()
    return (time.process_time() - started) / (calls * per_call) * 1e6


SEED_QUEUES = 8
"""Queues of the producer cases' topic (a one-digit queue id: ``_answers_by_queue``)."""
PIPELINE_WINDOW = 1000
"""Sends in flight in ``producer-pipelined`` (the benchmarks' pipelined workload)."""
BROKER_ADDR = "127.0.0.1:10911"


def _answer_frames(opaques: list[int], queues: list[int] | None = None) -> bytes:
    """The broker's SEND_MESSAGE_V2 answers to the requests ``opaques`` (sent to ``queues``,
    queue 0 if not given), as one read. A broker answers with the queue the request named."""
    return b"".join(frames.RemotingCommand(code=0, flag=frames.RESPONSE_FLAG, opaque=opaque, ext_fields={
        "msgId": "7F00000100002A9F0000000000000000", "queueId": str(queue), "queueOffset": str(opaque),
        "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}).encode()
        for opaque, queue in zip(opaques, queues or [0] * len(opaques), strict=True))


def _requested_queues(conn: Connection) -> list[int]:
    """The queue each pending request of ``conn`` was sent to (a send in flight knows its
    queue; anything else, a heartbeat, says 0), in ``_pending``'s order."""
    return [getattr(getattr(entry[0], "_mq", None), "queue_id", 0) for entry in conn._pending.values()]


def _answers_by_queue(opaques: range) -> dict[int, tuple[bytes, ...]]:
    """Each opaque's answer for every queue of the seeded route (one digit of queue 0's answer
    replaced), encoded beforehand: ``AnsweringTransport`` picks the request's."""
    table = {}
    for opaque in opaques:
        frame = _answer_frames([opaque])
        at = frame.index(b'"queueId":"0"') + len(b'"queueId":"')
        table[opaque] = tuple(frame[:at] + str(queue).encode() + frame[at + 1:] for queue in range(SEED_QUEUES))
    return table


def _seed_producer(producer: Producer) -> Connection:
    """A route of 8 queues on one broker, and an open connection to it, as after a first send."""
    instance = producer._instance
    assert instance is not None
    route = TopicRoute((QueueData("broker-a", SEED_QUEUES, SEED_QUEUES, 6),),
                       (BrokerData("DefaultCluster", "broker-a", ((0, BROKER_ADDR),)),))
    instance._store_route(TOPIC, route)
    producer._publish_cache[TOPIC] = (route, route.publish_queues(TOPIC))
    conn = ClientConnection({}, name="hotpath-client", flush_after_frames=COALESCE_FRAMES)  # as RemotingClient
    conn.connection_made(CollectingTransport())  # type: ignore[arg-type]
    instance.remoting._connections[BROKER_ADDR] = conn
    return conn


class AnsweringTransport(CollectingTransport):
    """A client connection's transport whose "broker" answers every request written, in the
    next loop turn, with an answer encoded beforehand (``answers``: opaque -> its frame for
    each queue; the request's queue is read off the send in flight)."""

    def __init__(self, answers: dict[int, tuple[bytes, ...]]) -> None:
        super().__init__()
        self.answers = answers
        self.conn: Connection | None = None

    def writelines(self, chunks: list[bytes]) -> None:
        super().writelines(chunks)
        asyncio.get_running_loop().call_soon(self._answer)

    def _answer(self) -> None:
        conn = self.conn
        assert conn is not None
        # a request the table lacks (a heartbeat of the producer's own timer) is answered too
        answers, read = self.answers, []
        for opaque, entry in conn._pending.items():  # kept lean: this runs inside the measured time
            mq = getattr(entry[0], "_mq", None)
            read.append(answers[opaque][mq.queue_id] if mq is not None and opaque in answers
                        else _answer_frames([opaque]))
        if read:
            conn.data_received(read[0] if len(read) == 1 else b"".join(read))

    def close(self) -> None:
        if self.conn is not None:
            asyncio.get_running_loop().call_soon(self.conn.connection_lost, None)


SLOW_HOST_TIMEOUT_MS: Final = 600_000
"""``--slow-host``: the sends' timeout, far above any answer's delay under valgrind."""


def _hotpath_producer() -> Producer:
    """The producer cases' producer (latency fault tolerance on, as by default in the bench
    client). With ``--slow-host`` (callgrind: answers ~50x slower) its sends never time out
    and no answer's latency marks the broker slow, so that runs of one tree take one path."""
    if not SLOW_HOST:
        return Producer("hotpath_producer", namesrv_addr="127.0.0.1:1", send_latency_fault_enable=True)
    # the threshold the producer's success path reads (a Final of the SDK; this tool alone moves it)
    producer_module.FIRST_PENALIZED_LATENCY = SLOW_HOST_TIMEOUT_MS  # type: ignore[misc]
    return Producer("hotpath_producer", namesrv_addr="127.0.0.1:1", send_latency_fault_enable=True,
                    send_msg_timeout=SLOW_HOST_TIMEOUT_MS)


async def producer_send(messages: int) -> float:
    """``Producer.send`` awaited one at a time, answered in the next loop turn."""
    producer = _hotpath_producer()
    await producer.start()
    try:
        conn = _seed_producer(producer)
        first = next(conn.opaques)
        answers = _answers_by_queue(range(first + 1, first + messages + 2))
        transport = AnsweringTransport(answers)
        transport.conn = conn
        conn.connection_made(transport)  # type: ignore[arg-type]
        body = b"x" * BODY_SIZE
        await producer.send(Message(TOPIC, body))  # warm-up
        if PROFILER is not None:
            PROFILER.enable()
        started = time.process_time()
        for _ in range(messages):
            await producer.send(Message(TOPIC, body))
        spent = time.process_time() - started
        if PROFILER is not None:
            PROFILER.disable()
        assert producer._instance is not None
        producer._instance.forget_route(TOPIC)
        producer._instance.remoting._connections.pop(BROKER_ADDR, None)
        conn.connection_lost(None)
        return spent / messages * 1e6
    finally:
        await producer.close()


async def producer_pipelined(messages: int) -> float:
    """``send_async`` with up to ``PIPELINE_WINDOW`` in flight; CPU of everything but the answers' encoding."""
    producer = _hotpath_producer()
    await producer.start()
    try:
        conn = _seed_producer(producer)
        body = b"x" * BODY_SIZE
        answered = 0

        def done(result: object, error: BaseException | None) -> None:
            nonlocal answered
            answered += 1
            if error is not None:
                raise error

        spent = 0.0
        windows = max(1, messages // PIPELINE_WINDOW)
        for _ in range(windows):
            if PROFILER is not None:
                PROFILER.enable()
            started = time.process_time()
            for _ in range(PIPELINE_WINDOW):
                producer.send_async(Message(TOPIC, body), done)
            await asyncio.sleep(0)  # the loop turn's flush
            spent += time.process_time() - started
            if PROFILER is not None:
                PROFILER.disable()
            answers = _answer_frames(list(conn._pending), _requested_queues(conn))
            if PROFILER is not None:
                PROFILER.enable()
            started = time.process_time()
            conn.data_received(answers)
            await asyncio.sleep(0)  # the futures' done callbacks
            spent += time.process_time() - started
            if PROFILER is not None:
                PROFILER.disable()
        assert answered == windows * PIPELINE_WINDOW, answered
        # the broker is not real: nothing to unregister from, and the connection ends here
        assert producer._instance is not None
        producer._instance.forget_route(TOPIC)
        producer._instance.remoting._connections.pop(BROKER_ADDR, None)
        conn.connection_lost(None)
        return spent / (windows * PIPELINE_WINDOW) * 1e6
    finally:
        await producer.close()


PULL_QUEUES = 8
PULL_READ_SIZE = 100_000
"""Bytes per read the consumer-pulls transport hands over (a real drain's reads averaged ~100 KB)."""
_QUEUE_OFFSET = struct.Struct(">q")
_QUEUE_OFFSET_POS = 20
"""A stored record's QUEUEOFFSET field (``storedrecords``)."""


def _pull_bodies(pulls: int, per_pull: int = BATCH) -> dict[tuple[int, int], bytes]:
    """FOUND answer bodies by (queue, offset): one encoded record per queue, its queue offset
    patched for every position (a cheap setup, so that callgrind counts little of it)."""
    props = "UNIQ_KEY\x017F0000010F2A18B4AAC2000000000000\x02WAIT\x01true\x02"
    out = {}
    for q in range(PULL_QUEUES):
        record = storedrecords.encode_stored_record(
            topic=TOPIC, queue_id=q, body=b"x" * BODY_SIZE, properties=props, born_host=("127.0.0.1", 40123),
            store_host=("127.0.0.1", 10911))
        for p in range(pulls):
            run = bytearray(record * per_pull)
            for i in range(per_pull):
                _QUEUE_OFFSET.pack_into(run, i * len(record) + _QUEUE_OFFSET_POS, p * per_pull + i)
            out[(q, p * per_pull)] = bytes(run)
    return out


class PullAnsweringTransport(CollectingTransport):
    """A consumer connection's transport: answers each pull written, in the next loop turn, with
    the FOUND answer for its queue and offset (pulls past the last offset are held, as a broker
    holds them), in reads of ``PULL_READ_SIZE``. ``spent``: its own CPU time, not counted."""

    def __init__(self, bodies: dict[tuple[int, int], bytes], last: int, per_pull: int = BATCH) -> None:
        super().__init__()
        self.bodies, self.last, self.per_pull = bodies, last, per_pull
        self.conn: Connection | None = None
        self.written: list[bytes] = []
        self.scheduled = False
        self.spent = 0.0

    def writelines(self, chunks: list[bytes]) -> None:
        self.written.extend(chunks)
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._answer)

    def write(self, data: bytes) -> None:
        self.writelines([data])

    def _answer(self) -> None:
        started = time.process_time()
        self.scheduled = False
        data, self.written = b"".join(self.written), []
        answers = []
        for request in frames.FrameDecoder().feed(data):
            q, offset = int(request.ext_fields["queueId"]), int(request.ext_fields["queueOffset"])
            body = self.bodies.get((q, offset))
            if body is not None:
                answers.append(request.response(ResponseCode.SUCCESS, None, {
                    "suggestWhichBrokerId": "0", "nextBeginOffset": str(offset + self.per_pull), "minOffset": "0",
                    "maxOffset": str(self.last)}, body).encode())
        read = b"".join(answers)
        reads = [read[i:i + PULL_READ_SIZE] for i in range(0, len(read), PULL_READ_SIZE)]
        self.spent += time.process_time() - started
        assert self.conn is not None
        for chunk in reads:
            self.conn.data_received(chunk)


async def consumer_pulls(messages: int, per_pull: int = BATCH) -> float:
    pulls = max(1, messages // per_pull // PULL_QUEUES)
    total = pulls * per_pull * PULL_QUEUES
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    counted = 0

    def listener(msgs: list[Any], _ctx: Any) -> ConsumeStatus:
        nonlocal counted
        counted += len(msgs)
        if counted >= total and not done.done():
            done.set_result(None)
        return ConsumeStatus.CONSUME_SUCCESS

    settings = configure(PushConsumerSettings, {"namesrv_addr": "127.0.0.1:1", "client_ip": "127.0.0.1",
                                                "consume_message_batch_max_size": BATCH, "consume_thread_max": 64})
    instance = ClientInstance(settings)  # never started: no name server, no heartbeats
    instance._store_route(TOPIC, TopicRoute((QueueData("broker-a", PULL_QUEUES, PULL_QUEUES, 6),),
                                            (BrokerData("DefaultCluster", "broker-a", ((0, BROKER_ADDR),)),)))
    conn = ClientConnection({}, name="hotpath-consumer", flush_after_frames=COALESCE_FRAMES)  # as RemotingClient
    transport = PullAnsweringTransport(_pull_bodies(pulls, per_pull), pulls * per_pull, per_pull)
    transport.conn = conn
    conn.connection_made(transport)  # type: ignore[arg-type]
    instance.remoting._connections[BROKER_ADDR] = conn
    offsets = RemoteBrokerOffsetStore(instance, GROUP)
    service = ConcurrentConsumeService(GROUP, settings, listener, instance, offsets)
    sub = subscription.build(TOPIC, "*")
    tasks = [PullTask(MessageQueue(TOPIC, "broker-a", q), 0, group=GROUP, settings=settings, instance=instance,
                      offsets=offsets, consume=service, subscription=lambda _topic: sub) for q in range(PULL_QUEUES)]
    started = time.process_time()
    if PROFILER is not None:
        PROFILER.enable()
    for task in tasks:
        task.start()
    await done
    spent = time.process_time() - started - transport.spent
    if PROFILER is not None:
        PROFILER.disable()
    for task in tasks:
        await task.stop()
    await service.close()
    conn.connection_lost(None)
    assert counted == total
    return spent / total * 1e6


CASES: dict[str, Callable[[Path, int], Any]] = {
    "broker-send-sync": lambda root, n: broker_send(root, n, batch=False),
    "broker-send-single": lambda root, n: broker_send(root, n, batch=False, per_read=1),
    "broker-send-batch": lambda root, n: broker_send(root, n, batch=True),
    "broker-pull": broker_pull,
    "broker-pull-1": lambda root, n: broker_pull_one(root, n // 8),
    "broker-pull-woken": lambda root, n: broker_pull_woken(root, n // 8),
    "store-sync-flush": store_sync_flush,
    "store-put-single": store_put_single,
    "consumer-decode": consumer_decode,
    "consumer-path": lambda root, n: consumer_path(n),
    "consumer-pulls": lambda root, n: consumer_pulls(n),
    "consumer-pulls-1": lambda root, n: consumer_pulls(n // 8, per_pull=1),
    "producer-sync": lambda root, n: producer_path(n, batch=False),
    "producer-batch": lambda root, n: producer_path(n, batch=True),
    "producer-send": lambda root, n: producer_send(n),
    "producer-pipelined": lambda root, n: producer_pipelined(n),
}


async def _run_case(name: str, messages: int) -> float:
    with tempfile.TemporaryDirectory(prefix="rocketq-hotpath-") as tmp:
        result = CASES[name](Path(tmp), messages)
        return float(await result) if asyncio.iscoroutine(result) else float(result)


def main() -> None:
    global BODY_SIZE, SLOW_HOST
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=64_000)
    parser.add_argument("--repeat", type=int, default=5, help="runs per case (best and median are reported)")
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), help="cases to run (default: all)")
    parser.add_argument("--body-size", type=int, default=BODY_SIZE, help="message body bytes")
    parser.add_argument("--calls", action="store_true",
                        help="count function calls per message instead of timing (one run per case)")
    parser.add_argument("--slow-host", action="store_true",
                        help="producer cases: no send timeout or latency mark (for runs under valgrind)")
    args = parser.parse_args()
    BODY_SIZE = args.body_size
    SLOW_HOST = args.slow_host
    for name in args.only or list(CASES):
        if args.calls:
            print(f"{name:<20} {_count_calls(name, args.messages)}")
            continue
        runs = sorted(_run(name, args.messages) for _ in range(max(1, args.repeat)))
        print(f"{name:<20} best {runs[0]:7.2f}  median {runs[len(runs) // 2]:7.2f} us CPU per message")


def _count_calls(name: str, messages: int) -> str:
    """Calls per message in the measured part: all, and those of Python functions."""
    global PROFILER
    PROFILER = cProfile.Profile()
    try:
        _run(name, messages)
        stats = pstats.Stats(PROFILER).stats  # type: ignore[attr-defined]
    finally:
        PROFILER = None
    if name.endswith(("-sync", "-single", "-flush", "-send")):
        per_message = messages
    elif name in ("broker-pull-1", "broker-pull-woken"):
        per_message = messages // 8 - (100 if name == "broker-pull-1" else 0)
    elif name == "consumer-pulls-1":
        per_message = messages // 8 // PULL_QUEUES * PULL_QUEUES
    else:
        per_call = PIPELINE_WINDOW if name.endswith("-pipelined") else BATCH
        per_message = max(1, messages // per_call) * per_call
    total = sum(row[1] for row in stats.values())
    python = sum(row[1] for (path, _line, _fn), row in stats.items() if path != "~")
    return f"{total / per_message:7.1f} calls per message, {python / per_message:6.1f} of Python functions"


def _run(name: str, messages: int) -> float:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_run_case(name, messages))
    return uvloop.run(_run_case(name, messages))


if __name__ == "__main__":
    main()

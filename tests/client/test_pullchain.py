"""A push consumer's pulls chained by their answers (``PullTask._answered``): on an open
connection a FOUND answer's messages reach the consume service, and the next pull is written,
inside the read that brings the answer; everything that has to wait (flow control, an error's
back-off, OFFSET_ILLEGAL's offset correction) goes back to the task as after a single pull, and
stopping the task withdraws the pull that is out. The broker here is a transport that keeps what
is written; the test hands the client's connection the answers it chooses."""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

import pytest
from client_fakes import KeepingTransport

from rocketq.client import pulltasks, wire
from rocketq.client.instance import ClientInstance
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.pulltasks import PullTask
from rocketq.client.queues import MessageQueue
from rocketq.client.routes import TopicRoute
from rocketq.client.settings import PushConsumerSettings, configure
from rocketq.protocol import nativecodecs, storedrecords, subscription
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import FrameDecoder, RemotingCommand
from rocketq.protocol.message import MessageExt
from rocketq.protocol.routedata import BrokerData, QueueData
from rocketq.remoting.connection import ClientConnection
from rocketq.remoting.errors import RemotingSendError

_BROKER = "127.0.0.1:10911"
_WAIT_TURNS = 200
"""Steps a test waits for something the task does (it needs a handful)."""
_DELAY_STEP = 0.005
"""Seconds per step while the task sleeps a (shortened) delay."""


class _Consume:
    def __init__(self) -> None:
        self.batches: list[list[int]] = []

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        self.batches.append([m.queue_offset for m in msgs])


class _Offsets:
    """An offset store's memory table (no broker behind it)."""

    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}
        self.persisted: list[MessageQueue] = []

    def read_memory(self, mq: MessageQueue) -> int | None:
        return self.table.get(mq)

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        if not increase_only or offset > self.table.get(mq, -1):
            self.table[mq] = offset

    async def persist(self, mq: MessageQueue) -> None:
        self.persisted.append(mq)


class _Rig:
    def __init__(self, **settings: Any) -> None:
        self.settings = configure(PushConsumerSettings, {"namesrv_addr": "127.0.0.1:1", "client_ip": "127.0.0.1",
                                                         **settings})
        self.instance = ClientInstance(self.settings)  # never started: no name server, no heartbeats
        self.instance._store_route("T", TopicRoute((QueueData("broker-a", 1, 1, 6),),
                                                   (BrokerData("DefaultCluster", "broker-a", ((0, _BROKER),)),)))
        self.conn = ClientConnection({}, name="test-consumer")
        self.transport = KeepingTransport()
        self.conn.connection_made(self.transport)  # type: ignore[arg-type]
        self.instance.remoting._connections[_BROKER] = self.conn
        self.consume, self.offsets = _Consume(), _Offsets()
        self.mq = MessageQueue("T", "broker-a", 0)
        sub = subscription.build("T", "*")
        self.task = PullTask(self.mq, 0, group="G", settings=self.settings, instance=self.instance,
                             offsets=self.offsets, consume=self.consume,  # type: ignore[arg-type]
                             subscription=lambda _topic: sub)

    def pulls(self) -> list[RemotingCommand]:
        """The pull requests written since the last call."""
        data, self.transport.written = b"".join(self.transport.written), []
        requests = list(FrameDecoder().feed(data))
        assert all(r.code == RequestCode.PULL_MESSAGE for r in requests)
        return requests

    async def next_pull(self, step: float = 0.0) -> RemotingCommand:
        """The one pull the task writes next (waiting in sleeps of ``step`` s: a delay of the
        task's own, or loop turns)."""
        for _ in range(_WAIT_TURNS):
            if self.transport.written:
                break
            await asyncio.sleep(step)
        [request] = self.pulls()
        return request

    def answer(self, request: RemotingCommand, code: int, offsets: range, next_begin: int, *, suggest: int = 0,
               sys_flag: int = 0, tags: str | None = None) -> None:
        body = b"".join(storedrecords.encode_stored_record(
            topic="T", queue_id=0, body=zlib.compress(b"m%d" % o) if sys_flag & 1 else b"m%d" % o,
            queue_offset=o, sys_flag=sys_flag, properties={"TAGS": tags} if tags else {}) for o in offsets)
        ext = {"suggestWhichBrokerId": str(suggest), "nextBeginOffset": str(next_begin), "minOffset": "0",
               "maxOffset": "100"}
        self.conn.data_received(request.response(code, None, ext, body).encode())


async def test_a_found_answer_sends_the_next_pull_from_its_read() -> None:
    rig = _Rig()
    rig.task.start()
    try:
        first = await rig.next_pull()
        assert first.ext_fields["queueOffset"] == "0"
        rig.answer(first, ResponseCode.SUCCESS, range(0, 3), 3)
        # inside the read: the messages handed on and the next pull queued for this turn's write
        assert rig.consume.batches == [[0, 1, 2]] and rig.task.next_offset == 3
        assert len(rig.conn._pending) == 1
        second = await rig.next_pull()
        assert second.ext_fields["queueOffset"] == "3"
        rig.answer(second, ResponseCode.PULL_NOT_FOUND, range(0), 3)  # nothing new: pull again
        third = await rig.next_pull()
        assert third.ext_fields["queueOffset"] == "3" and rig.consume.batches == [[0, 1, 2]]
    finally:
        await rig.task.stop()
    assert not rig.conn._pending  # the held third pull withdrawn


async def test_flow_control_hands_the_chain_back_to_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulltasks, "FLOW_CONTROL_DELAY", 0.01)
    rig = _Rig(pull_threshold_for_queue=2)
    rig.task.start()
    try:
        first = await rig.next_pull()
        rig.answer(first, ResponseCode.SUCCESS, range(0, 3), 3)  # 3 cached > 2: pause
        for _ in range(_WAIT_TURNS):
            await asyncio.sleep(0)
        assert not rig.transport.written and not rig.conn._pending and rig.task._flow_controlled >= 1
        rig.task.pq.remove(rig.task.pq.first(3))  # consumed: the task pulls again after its delay
        assert (await rig.next_pull(_DELAY_STEP)).ext_fields["queueOffset"] == "3"
    finally:
        await rig.task.stop()


async def test_an_error_answer_backs_off_and_retries_the_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulltasks, "ERROR_DELAY", 0.01)
    rig = _Rig()
    rig.task.start()
    try:
        first = await rig.next_pull()
        rig.answer(first, ResponseCode.SUCCESS, range(0, 2), 2)
        second = await rig.next_pull()
        rig.answer(second, ResponseCode.SYSTEM_ERROR, range(0), 0)
        assert not rig.conn._pending and not rig.transport.written  # no pull until the back-off ends
        assert (await rig.next_pull(_DELAY_STEP)).ext_fields["queueOffset"] == "2"
    finally:
        await rig.task.stop()


async def test_an_illegal_offset_moves_the_queue_with_a_fresh_cache() -> None:
    rig = _Rig()
    rig.task.start()
    try:
        first = await rig.next_pull()
        old_pq = rig.task.pq
        rig.answer(first, ResponseCode.PULL_OFFSET_MOVED, range(0), 40)
        second = await rig.next_pull()
        assert second.ext_fields["queueOffset"] == "40"
        assert old_pq.dropped and rig.task.pq is not old_pq
        assert rig.offsets.table[rig.mq] == 40 and rig.offsets.persisted == [rig.mq]
    finally:
        await rig.task.stop()


async def test_a_dropped_queue_takes_no_late_answer() -> None:
    rig = _Rig()
    rig.task.start()
    first = await rig.next_pull()
    await rig.task.stop()
    assert not rig.conn._pending
    rig.answer(first, ResponseCode.SUCCESS, range(0, 2), 2)  # arrives after the stop: dropped
    assert rig.consume.batches == [] and not rig.transport.written


@pytest.mark.skipif(nativecodecs.native is None, reason="the in-place reading needs the native codecs")
async def test_a_plain_found_answer_is_read_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection offers the FOUND answer's frame to the task (``PullTask.found``): no
    command, no ``wire.pull_header``; the suggested broker and the tag filter as before."""
    def general(*_args: object) -> None:
        raise AssertionError("the general path read a plain FOUND answer")

    monkeypatch.setattr(wire, "pull_header", general)
    rig = _Rig()
    sub = subscription.build("T", "TagA")
    rig.task._subscription = lambda _topic: sub
    rig.task.start()
    try:
        first = await rig.next_pull()
        rig.answer(first, ResponseCode.SUCCESS, range(0, 3), 3, tags="TagA")
        assert rig.consume.batches == [[0, 1, 2]] and rig.task.next_offset == 3 and len(rig.conn._pending) == 1
        second = await rig.next_pull()
        rig.answer(second, ResponseCode.SUCCESS, range(3, 5), 5, suggest=1, tags="TagB")  # filtered out
        assert rig.consume.batches == [[0, 1, 2]] and rig.task.next_offset == 5
        assert rig.task._suggested_broker == 1
    finally:
        await rig.task.stop()


async def test_a_found_answer_not_read_in_place_takes_the_general_path() -> None:
    """A compressed record (the C decoder leaves it to the pure one): the same outcome."""
    rig = _Rig()
    rig.task.start()
    try:
        first = await rig.next_pull()
        rig.answer(first, ResponseCode.SUCCESS, range(0, 2), 2, sys_flag=1)
        assert rig.consume.batches == [[0, 1]] and rig.task.next_offset == 2 and len(rig.conn._pending) == 1
        assert (await rig.next_pull()).ext_fields["queueOffset"] == "2"
    finally:
        await rig.task.stop()


async def test_a_failure_while_taking_an_answer_in_place_ends_the_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulltasks, "ERROR_DELAY", 0.01)
    rig = _Rig()
    failures = [RemotingSendError("connection closed")]  # as sending the next pull may raise

    def submit(msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if failures:
            raise failures.pop()
        rig.consume.batches.append([m.queue_offset for m in msgs])

    rig.task._consume = type("_Failing", (), {"submit": staticmethod(submit)})()
    rig.task.start()
    try:
        first = await rig.next_pull()
        rig.answer(first, ResponseCode.SUCCESS, range(0, 2), 2)  # the chain ends with the error, logged
        assert not rig.conn._pending and not rig.transport.written
        retry = await rig.next_pull(_DELAY_STEP)  # after the back-off
        rig.answer(retry, ResponseCode.SUCCESS, range(2, 3), 3)
        assert rig.consume.batches == [[2]]
    finally:
        await rig.task.stop()


async def test_an_answer_for_a_queue_dropped_meanwhile_ends_the_chain() -> None:
    rig = _Rig()
    rig.task.start()
    try:
        first = await rig.next_pull()
        rig.task.pq.dropped = True  # a rebalance gave the queue away while its pull was out
        rig.answer(first, ResponseCode.SUCCESS, range(0, 2), 2)
        assert rig.consume.batches == [] and not rig.conn._pending and not rig.transport.written
    finally:
        await rig.task.stop()


async def test_a_pull_interval_ends_the_chain_after_an_answer_read_in_place() -> None:
    """With ``pull_interval`` the answer's messages are handed on in the read, but the next pull
    waits for the interval in the task (the in-place read's short way is for no interval)."""
    rig = _Rig(pull_interval=20)
    rig.task.start()
    try:
        first = await rig.next_pull()
        rig.answer(first, ResponseCode.SUCCESS, range(0, 2), 2)
        assert rig.consume.batches == [[0, 1]] and rig.task.next_offset == 2
        assert not rig.conn._pending and not rig.transport.written  # no pull sent from the read
        assert (await rig.next_pull(_DELAY_STEP)).ext_fields["queueOffset"] == "2"
    finally:
        await rig.task.stop()


async def test_a_subscription_dropped_while_a_pull_was_out_ends_the_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer that comes after the topic was unsubscribed sends no next pull: the task waits
    ``NO_SUBSCRIPTION_DELAY`` and asks again."""
    monkeypatch.setattr(pulltasks, "NO_SUBSCRIPTION_DELAY", 0.01)
    rig = _Rig()
    sub: list[subscription.SubscriptionData] = [subscription.build("T", "*")]
    rig.task._subscription = lambda _topic: sub[0] if sub else None
    rig.task.start()
    try:
        first = await rig.next_pull()
        sub.clear()
        rig.answer(first, ResponseCode.SUCCESS, range(0, 2), 2)
        assert rig.consume.batches == [[0, 1]] and not rig.conn._pending and not rig.transport.written
        sub.append(subscription.build("T", "*"))
        assert (await rig.next_pull(_DELAY_STEP)).ext_fields["queueOffset"] == "2"
    finally:
        await rig.task.stop()

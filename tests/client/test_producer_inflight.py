"""send_async without a task per send: the first attempt written at once, resolved by callbacks.

Every test first sends once with ``send`` so that the route, the brokers' addresses and the
connections are known: the sends after that take the task-free path (their futures are not
tasks). What must hold is what held with a task per send: each future ends exactly once —
with a result, the error, a timeout, or cancelled — and nothing stays behind in the
producer or on the connections.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from client_fakes import FakeCluster

from rocketq.client.errors import BrokerError
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.sending import SendResult, SendStatus
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.errors import RemotingError, RemotingTimeoutError

SEND = RequestCode.SEND_MESSAGE_V2
Outcome = tuple[SendResult | None, BaseException | None]


@pytest.fixture
async def producer(cluster: FakeCluster) -> AsyncIterator[Producer]:
    cluster.topic("TopicTest")
    p = Producer("pg", namesrv_addr=cluster.namesrv.addr, send_msg_timeout=5000)
    await p.start()
    await p.send(Message("TopicTest", b"warm-up"))  # route, addresses, connection to one broker
    await p.send(Message("TopicTest", b"warm-up"))  # round robin: both brokers' connections
    try:
        yield p
    finally:
        await p.close()


def pending_requests(producer: Producer) -> int:
    """Requests the producer's broker connections still wait for (a timed-out send also starts a
    route refresh, a request to the name server the send does not wait for)."""
    assert producer._instance is not None
    namesrvs = set(producer.settings.namesrv_list())
    return sum(len(conn._pending) for addr, conn in producer._instance.remoting._connections.items()
               if addr not in namesrvs)


def collect(outcomes: list[Outcome]):  # type: ignore[no-untyped-def]
    def callback(result: SendResult | None, error: BaseException | None) -> None:
        outcomes.append((result, error))
    return callback


async def settle(futures: list[asyncio.Future[SendResult]]) -> None:
    await asyncio.wait(futures, timeout=30)
    await asyncio.sleep(0)  # the callbacks of the last ones


async def test_many_sends_take_no_task_and_all_succeed(cluster: FakeCluster, producer: Producer) -> None:
    outcomes: list[Outcome] = []
    futures = [producer.send_async(Message("TopicTest", f"m{i}".encode()), collect(outcomes)) for i in range(200)]
    assert not any(isinstance(f, asyncio.Task) for f in futures)
    await settle(futures)
    assert all(f.result().status is SendStatus.SEND_OK for f in futures)
    assert len(outcomes) == 200 and all(error is None for _result, error in outcomes)
    placed = {(f.result().message_queue, f.result().queue_offset) for f in futures}
    assert len(placed) == 200  # each its own queue offset
    assert not producer._async_sends and pending_requests(producer) == 0


async def test_a_retriable_answer_continues_on_the_other_broker(cluster: FakeCluster, producer: Producer) -> None:
    cluster.brokers[0].fail_next[SEND] = [ResponseCode.SYSTEM_BUSY] * 100
    futures = [producer.send_async(Message("TopicTest", b"x")) for _ in range(8)]
    await settle(futures)
    assert {f.result().message_queue.broker_name for f in futures} == {"broker-b"}
    assert cluster.brokers[0].codes().count(SEND) >= 1  # round robin met broker-a; those were retried
    assert not producer._async_sends and pending_requests(producer) == 0


async def test_a_final_answer_fails_the_future_and_the_callback(cluster: FakeCluster, producer: Producer) -> None:
    for broker in cluster.brokers:
        broker.fail_next[SEND] = [ResponseCode.MESSAGE_ILLEGAL]
    outcomes: list[Outcome] = []
    future = producer.send_async(Message("TopicTest", b"x"), collect(outcomes))
    await settle([future])
    assert isinstance(future.exception(), BrokerError)
    assert outcomes == [(None, future.exception())]
    before = sum(b.codes().count(SEND) for b in cluster.brokers)
    assert before == 3  # two warm-ups and this one: not retried


async def test_retries_exhausted_name_every_attempt(cluster: FakeCluster, producer: Producer) -> None:
    for broker in cluster.brokers:
        broker.fail_next[SEND] = [ResponseCode.SYSTEM_ERROR] * 5
    future = producer.send_async(Message("TopicTest", b"x"))
    await settle([future])
    error = future.exception()
    assert isinstance(error, BrokerError)
    assert any("3 attempt(s)" in note for note in error.__notes__)  # 1 + retryTimesWhenSendAsyncFailed (2)


def hung_sends(cluster: FakeCluster, producer: Producer, count: int,
               timeout_ms: int = 5000) -> tuple[list[asyncio.Future[SendResult]], list[Outcome]]:
    """``count`` sends to brokers that never answer them."""
    for broker in cluster.brokers:
        broker.hang.add(SEND)
    outcomes: list[Outcome] = []
    return [producer.send_async(Message("TopicTest", b"x"), collect(outcomes), timeout_ms=timeout_ms)
            for _ in range(count)], outcomes


async def test_timeouts_end_every_future_and_leave_nothing_pending(cluster: FakeCluster, producer: Producer) -> None:
    futures, outcomes = hung_sends(cluster, producer, 20, timeout_ms=300)
    await settle(futures)
    assert all(isinstance(f.exception(), RemotingTimeoutError) for f in futures)
    assert len(outcomes) == 20
    assert not producer._async_sends and pending_requests(producer) == 0


async def test_cancelling_forgets_the_request(cluster: FakeCluster, producer: Producer) -> None:
    futures, outcomes = hung_sends(cluster, producer, 10)
    await asyncio.sleep(0.05)
    assert pending_requests(producer) == 10
    for f in futures:
        f.cancel()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert all(f.cancelled() for f in futures)
    assert len(outcomes) == 10 and all(isinstance(e, asyncio.CancelledError) for _r, e in outcomes)
    assert not producer._async_sends and pending_requests(producer) == 0


async def test_connection_loss_ends_every_future(cluster: FakeCluster, producer: Producer) -> None:
    futures, outcomes = hung_sends(cluster, producer, 20)
    await asyncio.sleep(0.05)
    for broker in cluster.brokers:
        await broker.server.close()  # answers nothing, closes every connection
    await settle(futures)
    assert all(f.done() for f in futures)
    assert all(isinstance(f.exception(), RemotingError) for f in futures)
    assert len(outcomes) == 20
    assert not producer._async_sends and pending_requests(producer) == 0


async def test_a_sync_send_retries_on_the_other_broker(cluster: FakeCluster, producer: Producer) -> None:
    """``send`` takes the same path (its first attempt an ``_InFlight``): retries as before."""
    cluster.brokers[0].fail_next[SEND] = [ResponseCode.SYSTEM_BUSY] * 100
    results = [await producer.send(Message("TopicTest", b"x")) for _ in range(4)]
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}
    assert pending_requests(producer) == 0 and not producer._async_sends


async def test_a_cancelled_sync_send_forgets_its_request(cluster: FakeCluster, producer: Producer) -> None:
    for broker in cluster.brokers:
        broker.hang.add(SEND)
    sends = [asyncio.ensure_future(producer.send(Message("TopicTest", b"x"))) for _ in range(4)]
    await asyncio.sleep(0.05)
    assert pending_requests(producer) == 4
    for send in sends:
        send.cancel()
    await asyncio.gather(*sends, return_exceptions=True)
    assert all(send.cancelled() for send in sends)
    assert pending_requests(producer) == 0


async def test_a_sync_send_times_out_within_its_timeout(cluster: FakeCluster, producer: Producer) -> None:
    for broker in cluster.brokers:
        broker.hang.add(SEND)
    with pytest.raises(RemotingTimeoutError):
        await producer.send(Message("TopicTest", b"x"), timeout_ms=300)
    assert pending_requests(producer) == 0


SPREAD = 8
"""Sends enough that round robin puts some on each broker (the topic's queues are 4 per broker)."""


def retry_tasks() -> list[asyncio.Task[object]]:
    """Tasks running a send's remaining attempts (``_InFlight._retry``)."""
    return [t for t in asyncio.all_tasks() if not t.done() and t.get_coro().__qualname__ == "Producer._send_default"]


async def test_cancelling_a_sync_send_during_its_retry_cancels_the_retry(cluster: FakeCluster,
                                                                         producer: Producer) -> None:
    """broker-a answers busy (a retry on broker-b), broker-b never answers: each send waits on
    broker-b, those that went to broker-a first in a retry task; a cancel ends the send, its
    retry and its request."""
    cluster.brokers[0].fail_next[SEND] = [ResponseCode.SYSTEM_BUSY] * 100
    cluster.brokers[1].hang.add(SEND)
    sends = [asyncio.ensure_future(producer.send(Message("TopicTest", b"x"))) for _ in range(SPREAD)]
    await asyncio.sleep(0.2)
    assert retry_tasks() and pending_requests(producer) == SPREAD
    for send in sends:
        send.cancel()
    await asyncio.gather(*sends, return_exceptions=True)
    await asyncio.sleep(0)
    assert all(send.cancelled() for send in sends)
    assert not retry_tasks() and pending_requests(producer) == 0


async def test_cancelling_an_async_send_during_its_retry_cancels_the_retry(cluster: FakeCluster,
                                                                           producer: Producer) -> None:
    cluster.brokers[0].fail_next[SEND] = [ResponseCode.SYSTEM_BUSY] * 100
    cluster.brokers[1].hang.add(SEND)
    outcomes: list[Outcome] = []
    futures = [producer.send_async(Message("TopicTest", b"x"), collect(outcomes)) for _ in range(SPREAD)]
    await asyncio.sleep(0.2)
    assert retry_tasks() and pending_requests(producer) == SPREAD
    for future in futures:
        future.cancel()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(outcomes) == SPREAD and all(isinstance(e, asyncio.CancelledError) for _r, e in outcomes)
    assert not retry_tasks() and pending_requests(producer) == 0 and not producer._async_sends


async def test_a_fast_success_clears_the_brokers_mark(cluster: FakeCluster, producer: Producer) -> None:
    """A success is recorded without a call while no broker is marked; with a mark, a fast
    success on the marked broker still clears it (latency fault tolerance)."""
    faults = producer._faults
    await producer.send(Message("TopicTest", b"x"))
    assert not faults.marks
    faults.update("broker-a", 600, isolation=False)  # a slow answer: avoided for 30 s
    assert set(faults.marks) == {"broker-a"}
    faults._clock = lambda: 1 << 62  # the avoidance has run out: round robin picks broker-a again
    results = [await producer.send(Message("TopicTest", b"x")) for _ in range(8)]
    assert "broker-a" in {r.message_queue.broker_name for r in results}
    assert not faults.marks

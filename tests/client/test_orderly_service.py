"""The orderly consume service without a broker: order, local retry, the DLQ step, locks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from rocketq.client import orderly
from rocketq.client.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus, OrderlyConsumeService
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import MessageModel, PushConsumerSettings
from rocketq.protocol import message
from rocketq.protocol.message import MessageExt

MQ = MessageQueue("T", "broker-a", 0)
SUSPEND = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT


def ext(offset: int, reconsume_times: int = 0) -> MessageExt:
    record = message.encode_stored_record(topic="T", queue_id=0, body=f"m{offset}".encode(), queue_offset=offset,
                                          reconsume_times=reconsume_times, properties={message.UNIQ_KEY: f"U{offset}"})
    return message.decode_stored_record(record)


class Offsets:
    def __init__(self) -> None:
        self.updates: list[tuple[int, bool]] = []

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        self.updates.append((offset, increase_only))


class Harness:
    def __init__(self, answer: Callable[[list[MessageExt]], Any], *, clustering: bool = True,
                 locked: bool = True, send_back_ok: bool = True, **settings: Any) -> None:
        model = MessageModel.CLUSTERING if clustering else MessageModel.BROADCASTING
        self.settings = PushConsumerSettings(namesrv_addr="127.0.0.1:9876", message_model=model,
                                             suspend_current_queue_time_millis=10, **settings)
        self.calls: list[list[tuple[int, int]]] = []
        self.sent_back: list[int] = []
        self.lock_requests = 0
        self.grant = True
        self.offsets = Offsets()
        self.pq = ProcessQueue()
        self.pq.mark_locked(locked)
        self._answer = answer
        self._send_back_ok = send_back_ok
        self.service = OrderlyConsumeService("cg", self.settings, self._listener, self.offsets,  # type: ignore[arg-type]
                                             lock=self._lock, send_back=self._send_back)

    def _listener(self, msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> Any:
        self.calls.append([(m.queue_offset, m.reconsume_times) for m in msgs])
        return self._answer(msgs)

    async def _lock(self, mq: MessageQueue) -> bool:
        self.lock_requests += 1
        self.pq.mark_locked(self.grant)
        return self.grant

    async def _send_back(self, msg: MessageExt, mq: MessageQueue) -> bool:
        self.sent_back.append(msg.queue_offset)
        return self._send_back_ok

    async def feed(self, *offsets: int) -> None:
        msgs = [ext(o) for o in offsets]
        self.pq.put(msgs)
        self.service.submit(msgs, self.pq, MQ)

    async def settle(self, until: Callable[[], bool]) -> None:
        for _ in range(300):
            if until():
                break
            await asyncio.sleep(0.01)
        await self.service.close()


async def test_messages_are_consumed_one_batch_at_a_time_in_offset_order() -> None:
    h = Harness(lambda msgs: ConsumeOrderlyStatus.SUCCESS, consume_message_batch_max_size=2)
    await h.feed(3, 1, 2)
    await h.feed(4, 5)  # arrives while the worker runs: no second worker
    await h.settle(lambda: h.pq.msg_count == 0)
    assert h.calls == [[(1, 0), (2, 0)], [(3, 0), (4, 0)], [(5, 0)]]
    assert h.offsets.updates == [(3, False), (5, False), (6, False)]


async def test_suspend_retries_the_same_message_locally_counting_reconsume_times() -> None:
    answers = iter([SUSPEND, SUSPEND, ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.SUCCESS])
    h = Harness(lambda msgs: next(answers))
    await h.feed(0, 1)
    await h.settle(lambda: h.pq.msg_count == 0)
    assert h.calls == [[(0, 0)], [(0, 1)], [(0, 2)], [(1, 0)]]
    assert h.sent_back == []
    assert h.offsets.updates == [(1, False), (2, False)]


async def test_an_exception_or_a_wrong_answer_suspends() -> None:
    def answer(msgs: list[MessageExt]) -> Any:
        if len(h.calls) == 1:
            raise RuntimeError("boom")
        return "done" if len(h.calls) == 2 else ConsumeOrderlyStatus.SUCCESS

    h = Harness(answer)
    await h.feed(7)
    await h.settle(lambda: h.pq.msg_count == 0)
    assert [c[0][1] for c in h.calls] == [0, 1, 2]


async def test_past_max_reconsume_times_a_message_goes_to_the_dlq_and_the_queue_moves_on() -> None:
    h = Harness(lambda msgs: SUSPEND if msgs[0].queue_offset == 0 else ConsumeOrderlyStatus.SUCCESS,
                max_reconsume_times=2)
    await h.feed(0, 1)
    await h.settle(lambda: h.pq.msg_count == 0)
    assert h.calls == [[(0, 0)], [(0, 1)], [(0, 2)], [(1, 0)]]
    assert h.sent_back == [0]
    assert h.offsets.updates == [(1, False), (2, False)]


async def test_a_failed_dlq_send_keeps_the_message_in_local_retry() -> None:
    h = Harness(lambda msgs: SUSPEND, max_reconsume_times=0, send_back_ok=False)
    await h.feed(0)
    await h.settle(lambda: len(h.calls) >= 3)
    assert [c[0][1] for c in h.calls[:3]] == [0, 1, 2]
    assert h.sent_back[:2] == [0, 0]
    assert h.offsets.updates == []


async def test_an_unlocked_queue_is_locked_before_it_is_consumed() -> None:
    h = Harness(lambda msgs: ConsumeOrderlyStatus.SUCCESS, locked=False)
    await h.feed(0)
    await h.settle(lambda: h.pq.msg_count == 0)
    assert h.lock_requests == 1 and h.calls == [[(0, 0)]]


async def test_a_refused_lock_means_no_consumption() -> None:
    h = Harness(lambda msgs: ConsumeOrderlyStatus.SUCCESS, locked=False)
    h.grant = False
    await h.feed(0)
    await h.settle(lambda: h.lock_requests >= 1)
    assert h.calls == [] and h.offsets.updates == []


async def test_broadcasting_needs_no_lock() -> None:
    h = Harness(lambda msgs: ConsumeOrderlyStatus.SUCCESS, clustering=False, locked=False)
    await h.feed(0)
    await h.settle(lambda: h.pq.msg_count == 0)
    assert h.lock_requests == 0 and h.calls == [[(0, 0)]]


async def test_a_dropped_queue_commits_nothing_more() -> None:
    h = Harness(lambda msgs: ConsumeOrderlyStatus.SUCCESS)
    h.pq.dropped = True
    await h.feed(0)
    await h.settle(lambda: False)
    assert h.calls == [] and h.offsets.updates == []


@pytest.mark.parametrize("ms, seconds", [(-1, 1.0), (0, 0.01), (5, 0.01), (2500, 2.5), (99_000, 30.0)])
def test_suspend_time_comes_from_the_context_or_the_consumer_and_is_clamped(ms: int, seconds: float) -> None:
    assert orderly.suspend_seconds(ConsumeOrderlyContext(MQ, suspend_current_queue_time_millis=ms), 1000) == seconds


def test_the_dlq_send_is_rocketmqs_retry_send() -> None:
    msg = ext(5, reconsume_times=4)
    header, body = orderly.retry_send(msg, "cg", 4)
    props = message.decode_properties(header.properties or "")
    assert (header.topic, header.producer_group, body) == ("%RETRY%cg", "CLIENT_INNER_PRODUCER", b"m5")
    assert (header.reconsume_times, header.max_reconsume_times) == (4, 4)
    assert props[message.DELAY] == "7"
    assert props[message.RETRY_TOPIC] == "T"
    assert props[message.ORIGIN_MESSAGE_ID] == "U5"
    assert props[message.UNIQ_KEY] == "U5"


async def test_a_queue_given_away_stops_its_waiting_worker_at_once() -> None:
    h = Harness(lambda msgs: SUSPEND)
    h.pq.mark_locked(False)
    h.grant = False
    await h.feed(0)
    await asyncio.sleep(0.05)
    h.pq.dropped = True
    assert await h.service.wait_idle(h.pq, timeout=1.0)
    assert h.service.in_flight == 0
    await h.service.close()


async def test_a_queue_given_away_waits_for_the_listener_call_in_flight() -> None:
    release = asyncio.Event()

    async def slow(msgs: list[MessageExt]) -> ConsumeOrderlyStatus:
        await release.wait()
        return ConsumeOrderlyStatus.SUCCESS

    h = Harness(slow)
    await h.feed(0)
    await asyncio.sleep(0.05)
    h.pq.dropped = True
    assert not await h.service.wait_idle(h.pq, timeout=0.05)  # still in the listener
    release.set()
    assert await h.service.wait_idle(h.pq, timeout=1.0)
    assert h.offsets.updates == []  # dropped: its result is not committed
    await h.service.close()

"""Delay levels, retry topics and the DLQ with real `rocketq namesrv` + `rocketq broker` processes
and the SDK. The broker runs with short levels (messageDelayLevel "1s 2s 3s 1s ...") so the
scenarios take seconds; "no earlier than" is measured from before the send (the broker's store
time, which the delay counts from, is later)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from typing import Any

import orjson
import pytest
from test_broker_metrics import _scrape as scrape
from test_sdk_push import FAST, wait_until

from rocketq.admin.client import AdminClient
from rocketq.admin.stats import MessageQueue
from rocketq.broker import schedule
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.selectors import hash_by_key
from rocketq.local.ports import free_port
from rocketq.protocol import codes
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.headers import SendMessageRequestHeader, send_header_to_v2
from rocketq.protocol.messageproperties import encode_properties
from rocketq.protocol.messagetypes import MessageExt

TOPIC = "DelayIT"
GROUP = "delay-cg"
SHORT_LEVELS = {"messageDelayLevel": "1s 2s 3s 1s 1s 1s 1s 1s"}


class Recorder:
    """A listener that remembers each delivery with its arrival time and fails while told to."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.seen: list[tuple[float, MessageExt]] = []

    async def __call__(self, msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        now = time.time()
        self.seen.extend((now, m) for m in msgs)
        if self.failures > 0:
            self.failures -= 1
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    def bodies(self) -> list[bytes]:
        return [m.body for _, m in self.seen]


def consumer(namesrv: str, listener: Any, **options: Any) -> PushConsumer:
    push = PushConsumer(GROUP, namesrv_addr=namesrv, **{**FAST, **options})
    push.subscribe(TOPIC, "*")
    push.register_listener(listener)
    return push


async def test_delayed_messages_arrive_no_earlier_than_their_level(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config=SHORT_LEVELS)
    recorder = Recorder()
    async with Producer("delay-pg", namesrv_addr=ns.address) as producer, consumer(ns.address, recorder):
        before = time.time()
        late = await producer.send(Message(TOPIC, b"level-2", delay_level=2))
        clamped = await producer.send(Message(TOPIC, b"level-99", delay_level=99))  # clamped to 8 (1 s)
        await producer.send(Message(TOPIC, b"now"))
        await wait_until(lambda: len(recorder.seen) >= 3)
    arrival = {m.body: (at, m) for at, m in recorder.seen}
    assert arrival[b"level-2"][0] - before >= 2.0
    assert arrival[b"level-99"][0] - before >= 1.0
    assert arrival[b"now"][0] < arrival[b"level-2"][0]
    delivered = arrival[b"level-2"][1]
    assert (delivered.topic, delivered.msg_id) == (TOPIC, late.msg_id)
    assert arrival[b"level-99"][1].msg_id == clamped.msg_id
    assert late.message_queue.topic == TOPIC


async def test_delayed_messages_survive_a_broker_kill9(processes: Any, tmp_path: Any) -> None:
    ns = processes.namesrv()
    store = tmp_path / "broker-store"
    broker = processes.broker(ns.address, store=store, config=SHORT_LEVELS)
    port = int(broker.address.rsplit(":", 1)[1])
    sent = [f"d{i}".encode() for i in range(5)]
    async with Producer("delay-pg", namesrv_addr=ns.address) as producer:
        before = time.time()
        for body in sent:
            await producer.send(Message(TOPIC, body, delay_level=3))
    broker.kill9()  # before any of them was due
    processes.broker(ns.address, store=store, port=port, config=SHORT_LEVELS)
    recorder = Recorder()
    async with consumer(ns.address, recorder):
        await wait_until(lambda: set(recorder.bodies()) >= set(sent))
    assert min(at for at, _ in recorder.seen) - before >= 3.0


async def test_a_message_failing_twice_comes_back_through_the_retry_topic(processes: Any) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=SHORT_LEVELS)
    recorder = Recorder(failures=2)
    async with Producer("delay-pg", namesrv_addr=ns.address) as producer:
        result = await producer.send(Message(TOPIC, b"flaky"))
        async with consumer(ns.address, recorder):
            await wait_until(lambda: len(recorder.seen) >= 3)
    times = [at for at, _ in recorder.seen]
    msgs = [m for _, m in recorder.seen]
    assert [m.reconsume_times for m in msgs] == [0, 1, 2]
    assert {m.topic for m in msgs} == {TOPIC} and {m.msg_id for m in msgs} == {result.msg_id}
    # retry 1 waits level 3 (3 s here), retry 2 level 4 (1 s)
    assert times[1] - times[0] >= 3.0 and times[2] - times[1] >= 1.0
    async with AdminClient(ns.address) as admin:
        assert await admin.max_offset(broker.address, codes.retry_topic(GROUP), 0) == 2


async def test_a_message_failing_past_the_maximum_lands_in_the_dlq(processes: Any) -> None:
    ns = processes.namesrv()
    metrics_port = free_port()
    broker = processes.broker(ns.address, config=SHORT_LEVELS, extra=("--metrics-port", str(metrics_port)))
    recorder = Recorder(failures=1000)
    async with Producer("delay-pg", namesrv_addr=ns.address) as producer:
        await producer.send(Message(TOPIC, b"poison"))
        async with AdminClient(ns.address) as admin, consumer(ns.address, recorder, max_reconsume_times=1):
            dlq = codes.dlq_topic(GROUP)
            for _ in range(300):
                if dlq in await admin.all_topic_config(broker.address) and \
                        await admin.max_offset(broker.address, dlq, 0) == 1:
                    break
                await asyncio.sleep(0.05)
            else:
                pytest.fail("the message never reached the DLQ")
    assert [m.reconsume_times for _, m in recorder.seen] == [0, 1]
    metrics = scrape(metrics_port)
    ident = {"cluster": "DefaultCluster", "broker": "broker-a"}
    assert ({**ident, "group": GROUP}, 1.0) in metrics["rocketmq_group_dlqdiff"]
    assert (ident, 1.0) in metrics["rocketq_sendback_dlq_messages_total"]
    assert (ident, 1.0) in metrics["rocketq_sendback_retry_messages_total"]
    assert (ident, 1.0) in metrics["rocketq_delay_delivered_messages_total"]
    listed = orjson.loads(await asyncio.to_thread(admin_cli, "dlqList", "-n", ns.address, "-g", GROUP, "--json"))
    assert [(d["body"], d["reconsumeTimes"], d["topic"]) for d in listed] == [("poison", 2, dlq)]
    assert listed[0]["properties"]["RETRY_TOPIC"] == TOPIC
    await asyncio.to_thread(admin_cli, "dlqResend", "-n", ns.address, "-g", GROUP, "-i", listed[0]["msgId"])
    healthy = Recorder()
    async with consumer(ns.address, healthy):
        await wait_until(lambda: len(healthy.seen) >= 1)
    again = healthy.seen[0][1]
    assert (again.body, again.topic, again.reconsume_times, again.msg_id) == (b"poison", TOPIC, 0, listed[0]["msgId"])


def admin_cli(*args: str) -> bytes:
    done = subprocess.run([sys.executable, "-m", "rocketq", "admin", *args], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


async def test_a_producer_send_into_the_retry_topic_past_the_maximum_is_dead_lettered(processes: Any) -> None:
    # what a Java client does when send-back fails, and how orderly consumers dead-letter
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config=SHORT_LEVELS)
    async with AdminClient(ns.address) as admin:
        for reconsume_times, body in ((16, b"dead"), (2, b"retry")):
            header = SendMessageRequestHeader(
                producer_group="CLIENT_INNER_PRODUCER", topic=codes.retry_topic(GROUP), queue_id=0,
                properties=encode_properties({"DELAY": "1", "RETRY_TOPIC": TOPIC}), reconsume_times=reconsume_times)
            await admin.call(broker.address, RequestCode.SEND_MESSAGE_V2, send_header_to_v2(header), body)
        dead = await admin.pull(broker.address, MessageQueue(codes.dlq_topic(GROUP), "broker-a", 0), 0)
        assert [(m.body, m.reconsume_times) for m in dead.messages] == [(b"dead", 16)]
    recorder = Recorder()
    async with consumer(ns.address, recorder):  # the other one waits 1 s (level 1), then arrives
        await wait_until(lambda: len(recorder.seen) >= 1)
    assert [(m.body, m.topic, m.reconsume_times) for _, m in recorder.seen] == [(b"retry", TOPIC, 2)]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
async def test_delivered_messages_are_not_lost_or_re_put_after_a_restart(processes: Any, tmp_path: Any,
                                                                         stop: int) -> None:
    ns = processes.namesrv()
    store = tmp_path / "broker-store"
    broker = processes.broker(ns.address, store=store, config=SHORT_LEVELS)
    port = int(broker.address.rsplit(":", 1)[1])
    async with Producer("delay-pg", namesrv_addr=ns.address) as producer, AdminClient(ns.address) as admin:
        queue = (await producer.send(Message(TOPIC, b"first", delay_level=1), selector=hash_by_key("k"))).message_queue
        for body in (b"second", b"third"):
            await producer.send(Message(TOPIC, body, delay_level=1), selector=hash_by_key("k"))
        await wait_until_async(lambda: admin.max_offset(broker.address, TOPIC, queue.queue_id), 3)
    broker.stop(stop)
    if stop == signal.SIGTERM:  # a clean stop persists the offsets after a flush
        assert schedule.load_delay_offsets(store / "config" / "delayOffset.json") == {1: 3}
    broker = processes.broker(ns.address, store=store, port=port, config=SHORT_LEVELS)
    # fresh clients: the old ones' connections died with the broker
    async with Producer("delay-pg", namesrv_addr=ns.address) as producer, AdminClient(ns.address) as admin:
        await producer.send(Message(TOPIC, b"fourth", delay_level=1), selector=hash_by_key("k"))
        # level 1 delivers in order: "fourth" arrives after any re-put of the first three
        mq = MessageQueue(TOPIC, "broker-a", queue.queue_id)
        result = await admin.pull(broker.address, mq, 0)
        for _ in range(300):
            if b"fourth" in [m.body for m in result.messages]:
                break
            await asyncio.sleep(0.05)
            result = await admin.pull(broker.address, mq, 0)
    got = [m.body for m in result.messages]
    assert got[:3] == [b"first", b"second", b"third"] and got[-1] == b"fourth"
    if stop == signal.SIGTERM:
        assert len(got) == 4  # nothing delivered twice
    else:
        assert set(got) == {b"first", b"second", b"third", b"fourth"}  # at-least-once: maybe some twice


async def wait_until_async(read: Any, wanted: int, limit: float = 30.0) -> None:
    for _ in range(int(limit / 0.05)):
        if await read() >= wanted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")

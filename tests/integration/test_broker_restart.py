"""A broker restarting under load: clients never meet a half-started broker, SDK sends all succeed.

The broker listens only once its store has recovered and every handler is installed, so a
client connecting during start-up is refused (and retries) instead of being answered
REQUEST_CODE_NOT_SUPPORTED, which no client retries.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter

from clusterprocs import Processes

from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.client.producer import Producer
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.messagetypes import Message
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.errors import RemotingError

TOPIC = "RestartIT"
SENDERS = 8
SENDS_AFTER_RESTART = 50
"""Successful sends seen after the restart before the hammering stops."""
RESTART_DEADLINE_S = 60.0
"""Bounds a hang; nothing is measured."""


def send_request() -> RemotingCommand:
    fields = {"a": "restart-pg", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}
    return RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields=fields, body=b"hammer")


async def hammer(addr: str, codes: Counter[int], restarted: asyncio.Event) -> None:
    """Send as fast as possible; a refused or dropped connection is simply tried again."""
    client = RemotingClient()
    after = 0
    try:
        while after < SENDS_AFTER_RESTART:
            try:
                response = await client.invoke(addr, send_request(), 5)
            except RemotingError:
                await asyncio.sleep(0.001)
                continue
            codes[response.code] += 1
            if restarted.is_set() and response.code == ResponseCode.SUCCESS:
                after += 1
    finally:
        await client.close()


async def test_a_client_hammering_a_restarting_broker_never_sees_a_half_started_one(processes: Processes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address)
    port = int(broker.address.rsplit(":", 1)[1])
    codes: Counter[int] = Counter()
    restarted = asyncio.Event()
    hammers = [asyncio.ensure_future(hammer(broker.address, codes, restarted)) for _ in range(SENDERS)]
    try:
        while codes[ResponseCode.SUCCESS] < 20:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(broker.stop)
        await asyncio.to_thread(processes.broker, ns.address, store=processes.tmp / "broker-a-store", port=port)
        restarted.set()
        await asyncio.wait_for(asyncio.gather(*hammers), 60)
    finally:
        for task in hammers:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*hammers, return_exceptions=True)
    assert ResponseCode.REQUEST_CODE_NOT_SUPPORTED not in codes, codes
    assert set(codes) == {ResponseCode.SUCCESS}, codes


async def test_sdk_sends_across_a_broker_restart_all_succeed(processes: Processes) -> None:
    ns = processes.namesrv()
    broker_a = processes.broker(ns.address, "broker-a")
    broker_b = processes.broker(ns.address, "broker-b")
    port_a = int(broker_a.address.rsplit(":", 1)[1])
    sent: list[str] = []
    failures: list[BaseException] = []
    stop = asyncio.Event()

    async def sender(producer: Producer) -> None:
        while not stop.is_set():
            try:
                result = await producer.send(Message(TOPIC, b"across a restart"))
            except Exception as exc:  # every failure is collected and reported by the assertion
                failures.append(exc)
            else:
                sent.append(result.message_queue.broker_name)

    async with AdminClient(ns.address) as admin:
        for broker in (broker_a, broker_b):
            await admin.create_topic(broker.address, TopicConfig(TOPIC, 4, 4))
        while {"broker-a", "broker-b"} - {data.broker_name for data in (await admin.topic_route(TOPIC)).broker_datas}:
            await asyncio.sleep(0.1)
    # The producer's route keeps broker-a through the restart (it refreshes every 30 s), as a real
    # application's would; without latency fault tolerance (RocketMQ's default) it keeps choosing
    # broker-a round robin, so its sends meet every moment of broker-a's stop and start.
    async with Producer("restart-pg", namesrv_addr=ns.address, send_latency_fault_enable=False) as producer:
        senders = [asyncio.ensure_future(sender(producer)) for _ in range(SENDERS)]
        try:
            while {"broker-a", "broker-b"} - set(sent):  # the producer's route holds both brokers now
                await asyncio.sleep(0.01)
            await asyncio.to_thread(broker_a.stop)
            await asyncio.to_thread(processes.broker, ns.address, "broker-a",
                                    store=processes.tmp / "broker-a-store", port=port_a)
            before = sent.count("broker-a")
            deadline = asyncio.get_running_loop().time() + RESTART_DEADLINE_S
            while sent.count("broker-a") < before + SENDS_AFTER_RESTART and not failures:
                assert asyncio.get_running_loop().time() < deadline, "the restarted broker-a got no sends"
                await asyncio.sleep(0.05)
        finally:
            stop.set()
            await asyncio.gather(*senders)
    assert not failures, failures[:3]
    assert sent.count("broker-b") > 0 and sent.count("broker-a") > SENDS_AFTER_RESTART

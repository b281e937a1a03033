"""After a failover a producer finds the new master within seconds, not at its next route refresh.

A master/slave pair; a producer with the default ``pollNameServerInterval`` (30 s: its route
timer first fires 30 s after it starts) sends continuously. The master is killed (or demoted at
runtime with ``changeToSlave``) and the slave promoted with ``rocketq admin electMaster``. The
producer's sends to the old master fail (connection refused, or NO_PERMISSION from the demoted
master), which makes it ask the name server for the topic's route at once and retry on the new
master. Without that it kept failing until its route timer fired, 30 s after it started.

``RESUME_LIMIT`` is a correctness bound, not a performance claim: well under the route timer,
generous for a loaded machine.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from clusterprocs import Processes
from haprocs import admin_cli, runtime, start_pair, wait_replicated

from rocketq.admin.client import AdminClient
from rocketq.client.producer import Producer
from rocketq.client.sending import SendStatus
from rocketq.protocol.messagetypes import Message

TOPIC = "FailoverRouteIT"
ROUTE_TIMER_MS = 30_000
"""The SDK's default pollNameServerInterval, which the producer keeps."""
RESUME_LIMIT = 15.0
"""Seconds from the promotion to the first acknowledged send."""
SETTLE_LIMIT = 30.0


async def until(check, limit: float = SETTLE_LIMIT) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.1)


def acked_after(acked: list[float], since: float):  # type: ignore[no-untyped-def]
    async def check() -> bool:
        return bool(acked) and acked[-1] > since
    return check


async def keep_sending(producer: Producer, acked: list[float], stop: asyncio.Event) -> None:
    """Send until ``stop``; the time of every SEND_OK goes in ``acked``."""
    i = 0
    while not stop.is_set():
        i += 1
        try:
            result = await producer.send(Message(TOPIC, f"m{i}".encode()))
        except Exception:  # every failure is a non-ack; the test only looks at acks
            await asyncio.sleep(0.05)
            continue
        if result.status is SendStatus.SEND_OK:
            acked.append(time.monotonic())


@pytest.mark.slow
@pytest.mark.parametrize("old_master", ["killed", "demoted"])
async def test_a_producer_resumes_on_the_promoted_slave_long_before_its_route_timer(
        procs: Processes, old_master: str) -> None:
    ns = procs.namesrv()
    master, slave = start_pair(procs, ns.address)
    async with Producer("failover-warmup", namesrv_addr=ns.address) as warmup:
        await warmup.send(Message(TOPIC, b"create the topic"))
    await wait_replicated(master, slave)
    async with AdminClient(ns.address) as admin:
        async def slave_knows_topic() -> bool:
            return TOPIC in await admin.all_topic_config(slave.address)

        await until(slave_knows_topic)  # the new master must own the topic's queues

    producer = Producer("failover-pg", namesrv_addr=ns.address)
    assert producer.settings.poll_name_server_interval == ROUTE_TIMER_MS
    acked: list[float] = []
    stop = asyncio.Event()
    async with producer:
        sender = asyncio.create_task(keep_sending(producer, acked, stop))
        try:
            await until(acked_after(acked, 0.0))  # the old master's route is cached
            if old_master == "killed":
                master.proc.kill9()
            out = await asyncio.to_thread(admin_cli, ns.address, "electMaster", "-b", slave.address)
            assert "ASYNC_MASTER" in out
            if old_master == "demoted":
                new_ha = (await runtime(slave.address))["haListenAddr"]
                await asyncio.to_thread(admin_cli, ns.address, "changeToSlave", "-b", master.address,
                                        "-i", "1", "--master", new_ha)
            promoted = time.monotonic()
            await until(acked_after(acked, promoted), RESUME_LIMIT + 20)
        finally:
            stop.set()
            await sender
    resumed = next(t for t in acked if t > promoted) - promoted
    print(f"{old_master}: resumed {resumed:.2f} s after the promotion")
    assert resumed < RESUME_LIMIT, f"first acknowledged send {resumed:.1f} s after the promotion"

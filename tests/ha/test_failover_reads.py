"""Master gone: a push consumer keeps reading from the slave, commits its offsets there, and the
slave hands them to the master when it comes back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from clusterprocs import Processes
from haprocs import restart, start_pair, wait_replicated

from rocketq.admin.client import AdminClient
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.settings import ConsumeFromWhere
from rocketq.protocol.messagetypes import MessageExt

TOPIC = "FailoverIT"
GROUP = "failover-cg"
COUNT = 200
FAST: dict[str, Any] = {
    "rebalance_interval": 1000, "persist_consumer_offset_interval": 200, "poll_name_server_interval": 500,
    "heartbeat_broker_interval": 1000, "broker_suspend_max_time_millis": 1000,
    "consumer_timeout_millis_when_suspend": 5000, "pull_batch_size": 8,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
}



async def until(predicate: Callable[[], Any], limit: float = 40.0) -> None:
    for _ in range(int(limit / 0.1)):
        if await predicate() if asyncio.iscoroutinefunction(predicate) else predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not reached")


@pytest.mark.slow
async def test_consumers_read_from_the_slave_and_the_master_gets_their_offsets_back(procs: Processes) -> None:
    ns = procs.namesrv()
    master, slave = start_pair(procs, ns.address)
    async with Producer("failover-pg", namesrv_addr=ns.address) as producer:
        for i in range(COUNT):
            await producer.send(Message(TOPIC, b"%05d" % i))
    await wait_replicated(master, slave)
    admin = AdminClient(ns.address)

    async def slave_knows_topic() -> bool:
        return TOPIC in await admin.all_topic_config(slave.address)

    got: list[bytes] = []
    consumed_once = asyncio.Event()

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        got.extend(m.body for m in msgs)
        if len(got) >= COUNT // 4:
            consumed_once.set()
            await asyncio.sleep(0.05)  # slow enough that the master dies mid-way
        return ConsumeStatus.CONSUME_SUCCESS

    try:
        await until(slave_knows_topic)
        consumer = PushConsumer(GROUP, namesrv_addr=ns.address, **FAST)
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(listener)
        async with consumer:
            await asyncio.wait_for(consumed_once.wait(), 30)
            master.proc.kill9()
            await until(lambda: len(set(got)) == COUNT)
            await asyncio.sleep(1)  # the last offsets reach the slave
        assert set(got) == {b"%05d" % i for i in range(COUNT)}
        assert len(got) - COUNT <= COUNT // 2, "redelivered far more than the messages in flight at the kill"
        on_slave = (await admin.all_consumer_offsets(slave.address))[(TOPIC, GROUP)]
        assert sum(on_slave.values()) == COUNT
        restart(procs, master)

        async def master_has_them() -> bool:
            offsets = await admin.all_consumer_offsets(master.address)
            return offsets.get((TOPIC, GROUP)) == on_slave

        await until(master_has_them)
    finally:
        await admin.close()

"""Apache RocketMQ's 2m-2s config files on one host: four brokers, two replicated groups."""

from __future__ import annotations

import asyncio

import pytest
from clusterprocs import Processes
from haprocs import (
    restart,
    runtime,
    start_groups,
    start_pair,
    tree,
    wait_replicated,
    wait_slave_connected,
)

from rocketq.client.producer import Producer
from rocketq.client.pullconsumer import PullConsumer
from rocketq.client.sending import SendStatus
from rocketq.protocol.messagetypes import Message

TOPIC = "HaIT"



async def send(namesrv: str, count: int, size: int = 600) -> list[str]:
    """Send ``count`` messages; the keys of those answered SEND_OK."""
    ok = []
    async with Producer("ha-producer", namesrv_addr=namesrv) as producer:
        for i in range(count):
            body = f"{i:05d}".encode() + b"x" * size
            result = await producer.send(Message(TOPIC, body, properties={"KEYS": f"k{i}"}))
            if result.status is SendStatus.SEND_OK:
                ok.append(f"k{i}")
    return ok


async def consume_all(namesrv: str, group: str = "ha-cg") -> list[str]:
    keys: list[str] = []
    async with PullConsumer(group, namesrv_addr=namesrv) as consumer:
        for mq in await consumer.fetch_subscribe_queues(TOPIC):
            offset = 0
            while True:
                result = await consumer.pull(mq, "*", offset, max_nums=32)
                keys.extend(m.properties["KEYS"] for m in result.messages)
                if not result.messages:
                    break
                offset = result.next_begin_offset
    return keys


async def test_async_groups_replicate_byte_for_byte(procs: Processes) -> None:
    ns = procs.namesrv()
    brokers = start_groups(procs, ns.address, "2m-2s-async")
    sent = await send(ns.address, 400)
    assert len(sent) == 400
    for name in ("broker-a", "broker-b"):
        master, slave = brokers[name], brokers[f"{name}-s"]
        info = await wait_replicated(master, slave)
        assert info["haInSync"] == "true" and info["haConnectionCount"] == "1"
        assert (await runtime(master.address))["haConnectionCount"] == "1"
        master_log, slave_log = tree(master.store / "commitlog"), tree(slave.store / "commitlog")
        assert len(master_log) >= 1 and master_log == slave_log
        # queue units are written through the map and may not be flushed yet: compare them through
        # the brokers, and the files once both have stopped
    for broker in brokers.values():
        broker.proc.stop()
    for name in ("broker-a", "broker-b"):
        master, slave = brokers[name], brokers[f"{name}-s"]
        assert tree(master.store / "consumequeue") == tree(slave.store / "consumequeue")
        assert tree(master.store / "consumequeue")


@pytest.mark.slow
async def test_sync_master_kill_9_every_acknowledged_message_is_read_from_the_slave(procs: Processes) -> None:
    ns = procs.namesrv()
    brokers = start_groups(procs, ns.address, "2m-2s-sync")
    for name in ("broker-a", "broker-b"):
        await wait_slave_connected(brokers[name])
    sent = await send(ns.address, 300)
    assert len(sent) == 300, "every send is SEND_OK once each SYNC_MASTER has its slave"
    brokers["broker-a"].proc.kill9()
    keys = await consume_all(ns.address)
    assert sorted(keys) == sorted(sent)


@pytest.mark.slow
async def test_a_crashed_slave_and_a_restarted_master_resume_replication(procs: Processes) -> None:
    ns = procs.namesrv()
    master, slave = start_pair(procs, ns.address)
    sending = asyncio.create_task(send(ns.address, 600))
    await asyncio.sleep(0.5)
    slave.proc.kill9()  # mid-stream: its log may end inside a record
    assert len(await sending) == 600
    restart(procs, slave)  # recovery cuts a torn tail; replication resumes from there
    await wait_replicated(master, slave)
    assert tree(master.store / "commitlog") == tree(slave.store / "commitlog")
    master.proc.stop()
    restart(procs, master)  # the slave reconnects (with backoff) to the master's new process
    assert len(await send(ns.address, 50)) == 50
    await wait_replicated(master, slave)
    assert tree(master.store / "commitlog") == tree(slave.store / "commitlog")

"""A DLedger group's metadata follows its leader: a topic created and a consumer offset committed
on the leader are on the followers (the master/slave metadata sync from the leader), so after a
kill -9 of the leader the new leader serves the same topic and the group resumes where it
committed, not from the start."""

from __future__ import annotations

import asyncio
import time

import pytest
from clusterprocs import Processes
from dledgerprocs import start_group, wait_leader
from haprocs import Broker

from rocketq.admin.client import AdminClient
from rocketq.client import Message, Producer, PullConsumer
from rocketq.client.sending import SendStatus
from rocketq.protocol.queues import MessageQueue

TOPIC = "DLedgerMetaIT"
GROUP = "dledger-meta-cg"
SYNC_DEADLINE_S = 60.0
"""How long the followers may take to copy the leader's metadata on a loaded machine."""


async def offsets_on(admin: AdminClient, broker: Broker) -> dict[int, int]:
    return (await admin.all_consumer_offsets(broker.address)).get((TOPIC, GROUP), {})


async def until_true(check, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + SYNC_DEADLINE_S
    while not await check():
        assert time.monotonic() < deadline, f"not within {SYNC_DEADLINE_S} s: {what}"
        await asyncio.sleep(0.2)


@pytest.mark.slow
async def test_topics_and_consumer_offsets_follow_the_leader(procs: Processes) -> None:
    ns = procs.namesrv()
    brokers = start_group(procs, ns.address, metrics=False)
    leader = await wait_leader(brokers, timeout=30)
    async with Producer("dledger-meta-pg", namesrv_addr=ns.address) as producer:
        for i in range(20):
            assert (await producer.send(Message(TOPIC, f"m{i}".encode()))).status is SendStatus.SEND_OK
    committed: dict[int, int] = {}
    async with PullConsumer(GROUP, namesrv_addr=ns.address) as consumer:
        queues: list[MessageQueue] = await consumer.fetch_subscribe_queues(TOPIC)
        for mq in queues:
            result = await consumer.pull(mq, "*", 0, max_nums=32)
            if result.messages:
                await consumer.update_offset(mq, result.next_begin_offset)
                committed[mq.queue_id] = result.next_begin_offset
    assert sum(committed.values()) == 20
    followers = [b for b in brokers if b is not leader]
    async with AdminClient(ns.address) as admin:
        assert await offsets_on(admin, leader) == committed

        async def followers_have_it() -> bool:
            for follower in followers:
                if TOPIC not in await admin.all_topic_config(follower.address):
                    return False
                if await offsets_on(admin, follower) != committed:
                    return False
            return True

        await until_true(followers_have_it, "the followers copy the topic and the group's offsets")
        leader.proc.kill9()
        new_leader = await wait_leader(followers, timeout=30)
        assert TOPIC in await admin.all_topic_config(new_leader.address)
        assert await offsets_on(admin, new_leader) == committed

"""PullConsumer: user-driven queues, pulls (immediate and blocking) and offsets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from client_fakes import FakeCluster

from rocketq.client.errors import ClientStateError, RouteError
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pullconsumer import PullConsumer
from rocketq.client.pulling import PullStatus
from rocketq.client.queues import MessageQueue


@pytest.fixture
async def pull(cluster: FakeCluster) -> AsyncIterator[PullConsumer]:
    cluster.topic("T")
    c = PullConsumer("pull-g", namesrv_addr=cluster.namesrv.addr, broker_suspend_max_time_millis=2000,
                     consumer_timeout_millis_when_suspend=5000)
    await c.start()
    yield c
    await c.close()


async def fill(cluster: FakeCluster, mq: MessageQueue, tags: list[str]) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv.addr) as producer:
        for i, tag in enumerate(tags):
            await producer.send(Message("T", f"{tag}{i}".encode(), tags=tag), selector=lambda qs: mq)


async def test_fetch_pull_and_commit(cluster: FakeCluster, pull: PullConsumer) -> None:
    queues = await pull.fetch_subscribe_queues("T")
    assert len(queues) == 8 and queues == sorted(queues)
    mq = queues[0]
    await fill(cluster, mq, ["A", "B", "A", "A"])
    assert await pull.query_offset(mq) == 0
    result = await pull.pull(mq, "A", 0, max_nums=2)
    assert result.status is PullStatus.FOUND and [m.body for m in result.messages] == [b"A0", b"A2"]
    assert result.next_begin_offset == 3 and result.max_offset == 4
    result = await pull.pull(mq, "*", result.next_begin_offset, max_nums=32)
    assert [m.body for m in result.messages] == [b"A3"] and result.next_begin_offset == 4
    assert (await pull.pull(mq, "*", 4)).status is PullStatus.NO_NEW_MSG
    assert (await pull.pull(mq, "*", 99)).status is PullStatus.OFFSET_ILLEGAL
    assert (await pull.pull(mq, "C", 0)).status is PullStatus.NO_MATCHED_MSG
    await pull.update_offset(mq, 4)
    assert await pull.query_offset(mq) == 4
    assert await pull.max_offset(mq) == 4 and await pull.min_offset(mq) == 0
    assert await pull.search_offset(mq, 0) == 0
    heartbeat = [h for h in cluster.brokers[0].heartbeats if h["consumerDataSet"]][-1]["consumerDataSet"][0]
    assert heartbeat["consumeType"] == "CONSUME_ACTIVELY" and heartbeat["subscriptionDataSet"][0]["topic"] == "T"


async def test_blocking_pull_waits_for_a_message(cluster: FakeCluster, pull: PullConsumer) -> None:
    mq = (await pull.fetch_subscribe_queues("T"))[0]
    waiting = asyncio.ensure_future(pull.pull_block_if_not_found(mq, "*", 0))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await fill(cluster, mq, ["A"])
    result = await waiting
    assert result.status is PullStatus.FOUND and result.messages[0].body == b"A0"


async def test_bad_calls_are_refused(pull: PullConsumer) -> None:
    with pytest.raises(RouteError):
        await pull.fetch_subscribe_queues("Unknown")
    mq = MessageQueue("T", "broker-a", 0)
    for offset, nums in [(-1, 1), (0, 0), (0, 5000)]:
        with pytest.raises(ClientStateError):
            await pull.pull(mq, "*", offset, max_nums=nums)
    with pytest.raises(ClientStateError, match="bad subscription"):
        await pull.pull(mq, "||", 0)
    with pytest.raises(ClientStateError):
        await pull.update_offset(mq, -5)


async def test_not_running_is_refused(cluster: FakeCluster) -> None:
    c = PullConsumer("g", namesrv_addr=cluster.namesrv.addr)
    with pytest.raises(ClientStateError):
        await c.fetch_subscribe_queues("T")
    await c.close()
    await c.close()

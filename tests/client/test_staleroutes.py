"""Failover without waiting for the route timer: a request that fails because its broker is gone
or no longer the master refreshes the topic's route at once (single-flight, at most once a
second per topic), and the retry, the next pull or the next offset commit uses the new master.

The fake name server plays the failover: the topic's route stops naming the old master (closed,
or answering as a demoted master does) and names the promoted broker under the same broker
name. Every client here keeps the default 30 s pollNameServerInterval, so only a refresh caused
by the failure can find the new master within the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from client_fakes import FakeBroker, FakeCluster, wait_until

from rocketq.client import staleroutes
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.errors import BrokerError, RouteError
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pullconsumer import PullConsumer
from rocketq.client.pulling import PullStatus
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.settings import ConsumeFromWhere
from rocketq.client.transactionproducer import LocalTransactionState, TransactionProducer
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.messagetypes import MessageExt
from rocketq.remoting.errors import (
    RemotingConnectError,
    RemotingSendError,
    RemotingTimeoutError,
    RemotingTooMuchRequestError,
)

TOPIC = "T"
QUEUES = 2
SEND = RequestCode.SEND_MESSAGE_V2
HOW = ("killed", "demoted", "follower")
"""How the old master fails: gone (connection refused), a demoted master's NO_PERMISSION, a
DLedger follower's SERVICE_NOT_AVAILABLE."""


class Failover:
    """broker-a's master (``old``) and the broker that will be promoted in its place (``new``)."""

    def __init__(self, cluster: FakeCluster, new: FakeBroker) -> None:
        self.cluster, self.old, self.new = cluster, cluster.brokers[0], new

    def replicate(self, queue_id: int, body: bytes) -> None:
        """Store on both, as replication would: the new master holds what the old one had."""
        for broker in (self.old, self.new):
            broker.store(TOPIC, queue_id, body)

    async def run(self, how: str) -> None:
        others = self.cluster.brokers[1:]
        self.cluster.namesrv.set_route(TOPIC, [self.new, *others], QUEUES)
        if how == "killed":
            await self.old.server.close()
        else:
            code = ResponseCode.NO_PERMISSION if how == "demoted" else ResponseCode.SERVICE_NOT_AVAILABLE
            for request in (SEND, RequestCode.PULL_MESSAGE, RequestCode.UPDATE_CONSUMER_OFFSET):
                self.old.fail_next[request] = [code] * 1000


async def started(*names: str) -> tuple[FakeCluster, FakeBroker]:
    cluster = FakeCluster(*names)
    new = FakeBroker("broker-a")
    await cluster.start()
    await new.server.start()
    cluster.namesrv.set_route(TOPIC, cluster.brokers, QUEUES)
    return cluster, new


@pytest.fixture
async def failover() -> AsyncIterator[Failover]:
    cluster, new = await started("broker-a")
    try:
        yield Failover(cluster, new)
    finally:
        await new.server.close()
        await cluster.close()


def route_lookups(cluster: FakeCluster) -> int:
    return cluster.namesrv.route_calls.count(TOPIC)


def test_which_failures_mean_the_route_may_be_stale() -> None:
    for stale in (RemotingConnectError("refused"), RemotingSendError("reset"), RemotingTimeoutError("slow"),
                  BrokerError(ResponseCode.NO_PERMISSION, "forbidden", "a:1"),
                  BrokerError(ResponseCode.SERVICE_NOT_AVAILABLE, "broker role is slave", "a:1")):
        assert staleroutes.means_stale_route(stale), stale
    for other in (None, RemotingTooMuchRequestError("busy"), RouteError("no route"), ValueError("bug"),
                  BrokerError(ResponseCode.SLAVE_NOT_AVAILABLE, "no slave", "a:1"),
                  BrokerError(ResponseCode.SYSTEM_BUSY, "busy", "a:1"),
                  BrokerError(ResponseCode.TOPIC_NOT_EXIST, "no topic", "a:1")):
        assert not staleroutes.means_stale_route(other), other


def test_the_limiter_allows_one_refresh_per_topic_per_interval() -> None:
    now = [100.0]
    limiter = staleroutes.RefreshLimiter(1.0, clock=lambda: now[0])
    assert limiter.take("T") and not limiter.take("T") and limiter.take("U")
    now[0] += 0.99
    assert not limiter.take("T")
    now[0] += 0.01
    assert limiter.take("T") and not limiter.take("T")


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_retry_of_a_failed_send_reaches_the_promoted_master(failover: Failover, how: str,
                                                                       mode: str) -> None:
    async with Producer("pg", namesrv_addr=failover.cluster.namesrv.addr) as producer:
        await producer.send(Message(TOPIC, b"before"))  # the old master's route is cached
        await failover.run(how)
        msg = Message(TOPIC, b"after")
        result = await (producer.send(msg) if mode == "sync" else producer.send_async(msg))
    assert result.message_queue.broker_name == "broker-a"
    assert failover.new.max_offset(TOPIC, result.message_queue.queue_id) == 1


async def test_an_ordered_send_fails_but_the_next_one_goes_to_the_promoted_master(failover: Failover) -> None:
    async with Producer("pg", namesrv_addr=failover.cluster.namesrv.addr) as producer:
        def first(queues):  # type: ignore[no-untyped-def]
            return queues[0]

        await producer.send(Message(TOPIC, b"before"), selector=first)
        await failover.run("killed")
        with pytest.raises((RemotingConnectError, RemotingSendError)):
            await producer.send(Message(TOPIC, b"lost"), selector=first)  # never moved: the order
        await asyncio.sleep(0)  # the refresh the failure started
        await wait_until(lambda: producer._instance is not None
                         and producer._instance.master_addr("broker-a") == failover.new.addr)
        result = await producer.send(Message(TOPIC, b"after"), selector=first)
    assert failover.new.max_offset(TOPIC, result.message_queue.queue_id) == 1


async def test_concurrent_failing_sends_cause_one_route_lookup_per_interval(failover: Failover) -> None:
    now = [0.0]
    async with Producer("pg", namesrv_addr=failover.cluster.namesrv.addr, send_msg_timeout=1000) as producer:
        assert producer._instance is not None
        producer._instance._refresh_limiter = staleroutes.RefreshLimiter(1.0, clock=lambda: now[0])
        await producer.send(Message(TOPIC, b"before"))
        before = route_lookups(failover.cluster)
        await failover.old.server.close()  # gone, and the name server does not know it yet
        sends = [producer.send(Message(TOPIC, f"m{i}".encode())) for i in range(20)]
        results = await asyncio.gather(*sends, return_exceptions=True)
        assert all(isinstance(r, RemotingConnectError | RemotingSendError) for r in results), results
        assert route_lookups(failover.cluster) == before + 1, "60 failed attempts, one lookup"
        now[0] += 1.0
        with pytest.raises(RemotingConnectError):
            await producer.send(Message(TOPIC, b"later"))
        assert route_lookups(failover.cluster) == before + 2


async def test_a_failed_over_group_is_not_avoided_for_its_old_masters_failure() -> None:
    """With latency fault tolerance a failed attempt isolates the group for 600 s; the new master
    did not fail, so the group takes sends again at once."""
    cluster, new = await started("broker-a", "broker-b")
    failover = Failover(cluster, new)
    try:
        async with Producer("pg", namesrv_addr=cluster.namesrv.addr) as producer:
            for i in range(4):
                await producer.send(Message(TOPIC, f"before{i}".encode()))
            await failover.run("killed")
            results = [await producer.send(Message(TOPIC, f"after{i}".encode())) for i in range(8)]
        on_a = [r for r in results if r.message_queue.broker_name == "broker-a"]
        assert on_a, "broker-a is still avoided"
        assert sum(new.max_offset(TOPIC, q) for q in range(QUEUES)) == len(on_a)
    finally:
        await new.server.close()
        await cluster.close()


@pytest.mark.parametrize("how", HOW)
async def test_a_pull_consumer_pulls_and_commits_on_the_promoted_master(failover: Failover, how: str) -> None:
    failover.replicate(0, b"m0")
    async with PullConsumer("cg", namesrv_addr=failover.cluster.namesrv.addr) as consumer:
        [mq, _] = await consumer.fetch_subscribe_queues(TOPIC)
        assert (await consumer.pull(mq, "*", 0)).status is PullStatus.FOUND
        await failover.run(how)
        failover.new.store(TOPIC, 0, b"m1")
        result = await consumer.pull(mq, "*", 1)
        assert [m.body for m in result.messages] == [b"m1"]
        await consumer.update_offset(mq, 2)
    assert failover.new.offsets[("cg", TOPIC, 0)] == 2


@pytest.mark.parametrize("call", ["max_offset", "min_offset", "search_offset"])
async def test_a_pull_consumers_offset_questions_go_to_the_promoted_master(failover: Failover, call: str) -> None:
    failover.replicate(0, b"m0")
    async with PullConsumer("cg", namesrv_addr=failover.cluster.namesrv.addr) as consumer:
        [mq, _] = await consumer.fetch_subscribe_queues(TOPIC)
        assert await consumer.max_offset(mq) == 1
        await failover.run("killed")
        failover.new.store(TOPIC, 0, b"m1")
        if call == "search_offset":
            assert await consumer.search_offset(mq, 0) == 0
        else:
            assert await getattr(consumer, call)(mq) == (2 if call == "max_offset" else 0)


async def test_a_push_consumer_resumes_on_the_promoted_master_and_commits_there(failover: Failover) -> None:
    for q in range(QUEUES):
        failover.replicate(q, f"before{q}".encode())
    received: list[bytes] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        received.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("cg", namesrv_addr=failover.cluster.namesrv.addr,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            broker_suspend_max_time_millis=500, consumer_timeout_millis_when_suspend=3000,
                            persist_consumer_offset_interval=100)
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(listener)
    async with consumer:
        await wait_until(lambda: len(received) == QUEUES)
        await failover.run("killed")
        for q in range(QUEUES):
            failover.new.store(TOPIC, q, f"after{q}".encode())
        await wait_until(lambda: len(received) == 2 * QUEUES)
        await wait_until(lambda: all(failover.new.offsets.get(("cg", TOPIC, q)) == 2 for q in range(QUEUES)))
    assert sorted(received) == sorted([f"before{q}".encode() for q in range(QUEUES)]
                                      + [f"after{q}".encode() for q in range(QUEUES)])


async def test_the_route_fetched_last_names_a_groups_master(failover: Failover) -> None:
    """Two topics on broker-a; only one's route is refreshed after the failover: the other's
    cached route still names the old master and must not win the address table."""
    failover.cluster.namesrv.set_route("U", [failover.old], QUEUES)
    async with Producer("pg", namesrv_addr=failover.cluster.namesrv.addr) as producer:
        instance = producer._instance
        assert instance is not None
        await instance.update_route(TOPIC)
        await instance.update_route("U")  # cached after T, and still naming the old master
        await failover.run("killed")
        await instance.update_route(TOPIC)
        assert instance.master_addr("broker-a") == failover.new.addr


async def test_a_send_follows_a_master_another_topics_route_moved(failover: Failover) -> None:
    """The first attempt written at once (``_InFlight.begin``) reads the group's master from
    the address table per send, not from what it cached with the topic's route: once another
    topic's route names a new master, the next send of a topic whose route did not change goes
    there, while the old master still answers."""
    failover.cluster.namesrv.set_route("U", [failover.old], QUEUES)
    async with Producer("pg", namesrv_addr=failover.cluster.namesrv.addr) as producer:
        for _ in range(2):  # U's route and connection cached, the second send written at once
            await producer.send(Message("U", b"before"))
        failover.cluster.namesrv.set_route(TOPIC, [failover.new], QUEUES)
        assert producer._instance is not None
        await producer._instance.update_route(TOPIC)
        result = await producer.send(Message("U", b"after"))
        await producer.send_async(Message("U", b"async"))
    assert result.message_queue.broker_name == "broker-a"
    assert stored_count(failover.old, "U") == 2 and stored_count(failover.new, "U") == 2


def stored_count(broker: FakeBroker, topic: str) -> int:
    return sum(len(queue.records) for (name, _queue_id), queue in broker.queues.items() if name == topic)


async def test_a_producer_greets_a_promoted_slave(failover: Failover) -> None:
    """A producer heartbeats masters only: a slave it knew was never greeted, and once promoted
    it must be (it checks transactions with the producers it knows) without waiting 30 s."""
    route = failover.cluster.namesrv.routes[TOPIC]
    route["brokerDatas"][0]["brokerAddrs"] = {"0": failover.old.addr, "1": failover.new.addr}
    async with Producer("pg", namesrv_addr=failover.cluster.namesrv.addr) as producer:
        await producer.send(Message(TOPIC, b"before"))
        assert failover.old.heartbeats and not failover.new.heartbeats
        await failover.run("killed")
        assert producer._instance is not None
        await producer._instance.update_route(TOPIC)  # as a refresh after a failed send does
        await wait_until(lambda: bool(failover.new.heartbeats))


async def test_a_failed_consumption_goes_back_through_the_promoted_master(failover: Failover) -> None:
    """The listener fails a message while its group fails over: CONSUMER_SEND_MSG_BACK refused by
    the demoted master goes to the promoted one (which holds the message), not into a local
    reconsume loop."""
    failover.replicate(0, b"fails once")
    release = asyncio.Event()
    consumed: list[bytes] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        consumed.extend(m.body for m in msgs)
        await release.wait()
        return ConsumeStatus.RECONSUME_LATER

    consumer = PushConsumer("cg", namesrv_addr=failover.cluster.namesrv.addr,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            broker_suspend_max_time_millis=500, consumer_timeout_millis_when_suspend=3000)
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(listener)
    async with consumer:
        await wait_until(lambda: consumed == [b"fails once"])
        failover.cluster.namesrv.set_route(TOPIC, [failover.new], QUEUES)  # pulls still reach the old one
        failover.old.fail_next[RequestCode.CONSUMER_SEND_MSG_BACK] = [ResponseCode.NO_PERMISSION] * 10
        release.set()
        await wait_until(lambda: len(failover.new.sent_back) == 1)
    assert failover.new.sent_back[0].group == "cg" and not failover.old.sent_back


async def test_a_transaction_ends_at_the_promoted_master(failover: Failover) -> None:
    """The local transaction runs while the master dies: END_TRANSACTION (oneway) finds the old
    master gone and goes to the promoted one, which holds the replicated half message."""
    running, finish = asyncio.Event(), asyncio.Event()

    class Listener:
        async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
            running.set()
            await finish.wait()
            return LocalTransactionState.COMMIT

        def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
            return LocalTransactionState.COMMIT

    async with TransactionProducer("tx-pg", Listener(), namesrv_addr=failover.cluster.namesrv.addr) as producer:
        sending = asyncio.ensure_future(producer.send_message_in_transaction(Message(TOPIC, b"pay")))
        await running.wait()
        await failover.run("killed")
        finish.set()
        await sending
        await wait_until(lambda: RequestCode.END_TRANSACTION in failover.new.codes())

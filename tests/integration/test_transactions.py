"""Transactions end to end: TransactionProducer, a real broker's half queue and its check loop.

The broker runs with short timings (transactionTimeOut 1 s, transactionCheckInterval 300 ms) so
a check-back happens within seconds. A commit reaches consumers, a rollback never does, and a
transaction whose producer "crashed" (closed without ending it) is settled by another producer
of the same group answering the broker's CHECK_TRANSACTION_STATE, after a broker restart.
"""

from __future__ import annotations

import asyncio
from typing import Any

from test_sdk_push import FAST, wait_until

from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.messages import Message
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.transactionproducer import LocalTransactionState, TransactionProducer
from rocketq.protocol import message
from rocketq.protocol.message import MessageExt

TOPIC = "TxIT"
GROUP = "tx-pg"
TX_CONFIG = {"transactionTimeOut": "1000", "transactionCheckInterval": "300", "transactionCheckMax": "15"}
SETTLE_S = 3.0
"""Long enough for several check passes past the timeout: a wrongly unfinished half would be
checked (and counted) by then."""


class Answers:
    """A transaction listener whose answers the test sets, recording every call."""

    def __init__(self, execute: LocalTransactionState, check: LocalTransactionState) -> None:
        self.execute = execute
        self.check = check
        self.executed: list[bytes] = []
        self.checked: list[MessageExt] = []
        self.block: asyncio.Event | None = None

    async def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        self.executed.append(bytes(msg.body))
        if self.block is not None:
            await self.block.wait()
        if isinstance(arg, LocalTransactionState):
            return arg
        return self.execute

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        self.checked.append(msg)
        return self.check


class Collector:
    def __init__(self) -> None:
        self.messages: list[MessageExt] = []

    def __call__(self, msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        self.messages.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    def bodies(self) -> list[bytes]:
        return [m.body for m in self.messages]


def consumer(namesrv: str, collector: Collector) -> PushConsumer:
    push = PushConsumer("tx-cg", namesrv_addr=namesrv, **FAST)
    push.subscribe(TOPIC, "*")
    push.register_listener(collector)
    return push


def tx_producer(namesrv: str, answers: Answers) -> TransactionProducer:
    return TransactionProducer(GROUP, answers, namesrv_addr=namesrv, topics=[TOPIC], heartbeat_broker_interval=1000)


async def create_topic(namesrv: str) -> None:
    async with Producer("tx-setup", namesrv_addr=namesrv) as plain:
        await plain.send(Message(TOPIC, b"setup"))


async def one_broker(processes: Any) -> str:
    """A name server and a broker with short transaction timings; the topic exists."""
    ns = processes.namesrv()
    processes.broker(ns.address, config=TX_CONFIG)
    await create_topic(ns.address)
    return str(ns.address)


async def test_commit_is_delivered_rollback_is_not(processes: Any) -> None:
    namesrv = await one_broker(processes)
    answers = Answers(LocalTransactionState.COMMIT, LocalTransactionState.ROLLBACK)
    collector = Collector()
    async with tx_producer(namesrv, answers) as producer, consumer(namesrv, collector):
        committed = await producer.send_message_in_transaction(Message(TOPIC, b"commit-me", keys="k1"))
        rolled_back = await producer.send_message_in_transaction(
            Message(TOPIC, b"roll-me-back"), arg=LocalTransactionState.ROLLBACK)
        assert committed.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
        assert rolled_back.local_transaction_state is LocalTransactionState.ROLLBACK_MESSAGE
        assert committed.transaction_id == committed.send_result.msg_id
        await wait_until(lambda: b"commit-me" in collector.bodies())
        await asyncio.sleep(SETTLE_S)
    assert answers.executed == [b"commit-me", b"roll-me-back"]
    assert collector.bodies().count(b"commit-me") == 1
    assert b"roll-me-back" not in collector.bodies()
    assert answers.checked == []  # both were ended: the broker never asked
    got = next(m for m in collector.messages if m.body == b"commit-me")
    assert got.topic == TOPIC
    assert got.msg_id == committed.transaction_id
    # stored as RocketMQ 4.9 stores a committed message: the half's properties kept
    assert got.properties[message.TRAN_MSG] == "true"
    assert got.properties[message.PGROUP] == GROUP
    assert got.properties[message.REAL_TOPIC] == TOPIC


async def test_unknown_outcome_is_resolved_by_check_back(processes: Any) -> None:
    namesrv = await one_broker(processes)
    answers = Answers(LocalTransactionState.UNKNOWN, LocalTransactionState.COMMIT)
    collector = Collector()
    async with tx_producer(namesrv, answers) as producer, consumer(namesrv, collector):
        result = await producer.send_message_in_transaction(Message(TOPIC, b"decided-later"))
        assert result.local_transaction_state is LocalTransactionState.UNKNOW
        await wait_until(lambda: b"decided-later" in collector.bodies())
        await asyncio.sleep(SETTLE_S)
    assert len(answers.checked) == 1
    asked = answers.checked[0]
    assert asked.topic == TOPIC  # the check carries the message as its producer sent it
    assert asked.body == b"decided-later"
    assert asked.properties[message.UNIQ_KEY] == result.transaction_id
    assert asked.properties[message.TRANSACTION_CHECK_TIMES] == "1"
    assert collector.bodies().count(b"decided-later") == 1


async def test_crashed_producer_is_replaced_across_a_broker_restart(processes: Any, tmp_path: Any) -> None:
    ns = processes.namesrv()
    store = tmp_path / "tx-store"
    broker = processes.broker(ns.address, store=store, config=TX_CONFIG)
    port = int(broker.address.rsplit(":", 1)[1])
    await create_topic(ns.address)
    first = Answers(LocalTransactionState.COMMIT, LocalTransactionState.COMMIT)
    first.block = asyncio.Event()  # the local transaction never finishes: the producer "crashes" in it
    crashed = tx_producer(ns.address, first)
    await crashed.start()
    sending = asyncio.create_task(crashed.send_message_in_transaction(Message(TOPIC, b"orphan")))
    await wait_until(lambda: first.executed == [b"orphan"])
    sending.cancel()
    await asyncio.gather(sending, return_exceptions=True)
    await crashed.close()  # gone without END_TRANSACTION

    broker.stop()  # the half survives a restart (CommitLog + CID_RMQ_SYS_TRANS offsets)
    processes.broker(ns.address, store=store, port=port, config=TX_CONFIG)

    second = Answers(LocalTransactionState.ROLLBACK, LocalTransactionState.COMMIT)
    collector = Collector()
    async with tx_producer(ns.address, second), consumer(ns.address, collector):
        await wait_until(lambda: b"orphan" in collector.bodies())
        await asyncio.sleep(SETTLE_S)
    assert first.checked == []
    assert [m.body for m in second.checked] == [b"orphan"]
    assert collector.bodies().count(b"orphan") == 1

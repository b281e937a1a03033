"""Half messages, END_TRANSACTION and the check loop against a real MessageStore (no network).

The producer side is a fake connection that records the CHECK_TRANSACTION_STATE requests the
checker writes to it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import schedule, transactionchecks, transactions
from rocketq.broker.clienttable import ClientChannel, ClientManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.send import PUT_STATUS_TO_RESPONSE
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import message
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketq.protocol.message import MessageExt, MessageSysFlag
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import PutRequest, PutResult, PutStatus
from rocketq.store.settings import StoreSettings

STORE_HOST = ("127.0.0.1", 10911)
GROUP = "pg"
COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE


class ProducerConn:
    """A producer's connection as the broker sees it: records what the broker sends."""

    closed = False
    remote_addr = "10.0.0.9:5555"

    def __init__(self) -> None:
        self.sent: list[RemotingCommand] = []

    async def invoke_oneway(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)


@dataclass
class Broker:
    store: MessageStore
    topics: TopicConfigManager
    offsets: ConsumerOffsetManager
    halves: transactions.HalfLog
    handlers: transactions.TransactionHandlers
    producer: ProducerConn

    def checker(self, *, timeout_ms: int = 0, check_max: int = 15) -> transactionchecks.TransactionChecker:
        clients = ClientManager(lambda _g, _c: None)
        clients.register_producer(GROUP, ClientChannel(self.producer, "10.0.0.9@1", "JAVA", 399))  # type: ignore[arg-type]
        settings = transactionchecks.CheckSettings(timeout_ms, 60_000, check_max, 72 * 3_600_000)
        return transactionchecks.TransactionChecker(self.halves, self.offsets, clients, settings)

    async def half(self, body: bytes, *, group: str = GROUP, born_ago_ms: int = 10_000,
                   extra: dict[str, str] | None = None) -> tuple[int, int]:
        """Store a half message as the send path does; (half queue offset, CommitLog offset)."""
        props = {message.TRAN_MSG: "true", message.PGROUP: group, message.UNIQ_KEY: f"U-{body.decode()}",
                 **(extra or {})}
        sent = PutRequest("Orders", 2, body, 0, message.encode_properties(props),
                          MessageSysFlag.TRANSACTION_PREPARED_TYPE, _now_ms() - born_ago_ms, ("10.0.0.9", 5555))
        result = await self.store.put(transactions.to_half(sent, self.topics))
        assert result.ok
        return result.queue_offsets[0], result.wrote_offset

    async def end(self, kind: int, queue_offset: int, phys: int, *, group: str = GROUP) -> RemotingCommand | None:
        header = EndTransactionRequestHeader(producer_group=group, tran_state_table_offset=queue_offset,
                                             commit_log_offset=phys, commit_or_rollback=kind, msg_id="m")
        request = RemotingCommand(code=RequestCode.END_TRANSACTION, ext_fields=header.to_ext())
        return await self.handlers.end_transaction(self.producer, request)  # type: ignore[arg-type]

    def messages(self, topic: str, queue_id: int = 0) -> list[MessageExt]:
        got = self.store.get_messages(topic, queue_id, 0, 100)
        return [message.decode_stored_record(view) for view in got.buffers]


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    settings = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=256 * 1024,
                             mapped_file_size_consume_queue=20 * 100)
    store = MessageStore(settings, STORE_HOST)
    store.open()
    await store.start()
    topics = TopicConfigManager(tmp_path / "topics.json")
    halves = transactions.HalfLog(store, topics, STORE_HOST)
    handlers = transactions.TransactionHandlers(halves, is_slave=False, put_answers=PUT_STATUS_TO_RESPONSE)
    try:
        yield Broker(store, topics, ConsumerOffsetManager(tmp_path / "offsets.json"), halves, handlers,
                     ProducerConn())
    finally:
        await store.close()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def _pass(checker: transactionchecks.TransactionChecker) -> None:
    await asyncio.sleep(0.005)  # a pass stops at halves stored in its own millisecond
    await checker.check()
    await asyncio.sleep(0)  # let the oneway sends run


async def test_half_is_hidden_and_commit_writes_the_real_message_and_an_op(broker: Broker) -> None:
    queue_offset, phys = await broker.half(b"order-1")
    assert broker.store.get_max_offset("Orders", 2) == 0  # nothing visible yet
    [half] = broker.messages(transactions.HALF_TOPIC)
    assert half.properties[message.REAL_TOPIC] == "Orders" and half.properties[message.REAL_QID] == "2"
    assert message.transaction_type(half.sys_flag) == MessageSysFlag.TRANSACTION_NOT_TYPE

    answer = await broker.end(COMMIT, queue_offset, phys)
    assert answer is not None and answer.code == ResponseCode.SUCCESS
    [final] = broker.messages("Orders", 2)
    assert final.body == b"order-1"
    assert message.transaction_type(final.sys_flag) == COMMIT
    assert final.prepared_transaction_offset == phys
    assert final.properties[message.TRAN_MSG] == "true" and final.properties[message.REAL_TOPIC] == "Orders"
    [op] = broker.messages(transactions.OP_TOPIC)
    assert op.tags == "d" and op.body == str(queue_offset).encode()


async def test_a_committed_message_with_delay_waits_in_the_schedule_topic(broker: Broker) -> None:
    # RocketMQ's store rewrites a COMMIT-type message with DELAY > 0 like any delayed send
    queue_offset, phys = await broker.half(b"later", extra={message.DELAY: "99"})  # clamped to 18
    answer = await broker.end(COMMIT, queue_offset, phys)
    assert answer is not None and answer.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("Orders", 2) == 0  # not visible before the level is due
    [waiting] = broker.messages(schedule.SCHEDULE_TOPIC, schedule.DEFAULT_MAX_DELAY_LEVEL - 1)
    assert waiting.properties[message.DELAY] == str(schedule.DEFAULT_MAX_DELAY_LEVEL)
    assert (waiting.properties[message.REAL_TOPIC], waiting.properties[message.REAL_QID]) == ("Orders", "2")
    assert message.transaction_type(waiting.sys_flag) == COMMIT
    delivered = schedule.delivered_copy(waiting)
    assert delivered is not None and (delivered.topic, delivered.queue_id, delivered.body) == ("Orders", 2, b"later")
    assert [op.body for op in broker.messages(transactions.OP_TOPIC)] == [str(queue_offset).encode()]


async def test_rollback_writes_only_the_op_and_unknown_is_not_answered(broker: Broker) -> None:
    queue_offset, phys = await broker.half(b"order-2")
    assert await broker.end(MessageSysFlag.TRANSACTION_NOT_TYPE, queue_offset, phys) is None
    answer = await broker.end(ROLLBACK, queue_offset, phys)
    assert answer is not None and answer.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("Orders", 2) == 0
    assert [op.body for op in broker.messages(transactions.OP_TOPIC)] == [b"0"]


@pytest.mark.parametrize("change, remark", [
    ({"group": "other"}, "The producer group wrong"),
    ({"queue_offset": 7}, "The transaction state table offset wrong"),
    ({"phys": 1}, "Find prepared transaction message failed"),
])
async def test_end_transaction_refuses_what_does_not_name_the_half(
        broker: Broker, change: dict[str, Any], remark: str) -> None:
    queue_offset, phys = await broker.half(b"order-3")
    answer = await broker.end(COMMIT, change.get("queue_offset", queue_offset), change.get("phys", phys),
                              group=change.get("group", GROUP))
    assert answer is not None and (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, remark)
    assert broker.store.get_max_offset("Orders", 2) == 0
    assert broker.store.get_max_offset(transactions.OP_TOPIC, 0) == 0


async def test_check_asks_only_about_unfinished_halves(broker: Broker) -> None:
    done_offset, done_phys = await broker.half(b"finished")
    await broker.half(b"pending")
    await broker.end(COMMIT, done_offset, done_phys)
    await _pass(broker.checker())
    [check] = broker.producer.sent
    header = CheckTransactionStateRequestHeader.from_ext(check.ext_fields)
    asked = message.decode_stored_record(check.body)
    assert (asked.topic, asked.queue_id, asked.body) == ("Orders", 2, b"pending")
    assert header.msg_id == header.transaction_id == "U-pending"
    assert header.tran_state_table_offset == 2  # the re-appended copy, which END_TRANSACTION names
    assert broker.offsets.query(transactions.SYS_TRANS_GROUP, transactions.HALF_TOPIC, 0) == 2
    assert broker.offsets.query(transactions.SYS_TRANS_GROUP, transactions.OP_TOPIC, 0) == 1
    # the producer answers about the copy: the next pass has nothing to ask
    answer = await broker.end(COMMIT, header.tran_state_table_offset, header.commit_log_offset)
    assert answer is not None and answer.code == ResponseCode.SUCCESS
    await _pass(broker.checker())
    assert len(broker.producer.sent) == 1
    assert sorted(m.body for m in broker.messages("Orders", 2)) == [b"finished", b"pending"]


async def test_young_halves_wait_for_the_timeout(broker: Broker) -> None:
    await broker.half(b"young", born_ago_ms=0)
    await _pass(broker.checker(timeout_ms=60_000))
    assert broker.producer.sent == []
    assert broker.offsets.query(transactions.SYS_TRANS_GROUP, transactions.HALF_TOPIC, 0) == -1


async def test_a_half_checked_check_max_times_is_discarded(broker: Broker) -> None:
    await broker.half(b"never-answered")
    checker = broker.checker(check_max=2)
    for _ in range(4):
        await _pass(checker)
    counts = [message.decode_stored_record(c.body).properties[message.TRANSACTION_CHECK_TIMES]
              for c in broker.producer.sent]
    assert counts == ["1", "2"]
    [discarded] = broker.messages(transactionchecks.CHECK_MAX_TIME_TOPIC)
    assert discarded.body == b"never-answered"
    assert discarded.properties[message.UNIQ_KEY] == "U-never-answered"


async def test_the_loop_runs_every_interval_and_stops(broker: Broker) -> None:
    await broker.half(b"looped")
    clients = ClientManager(lambda _g, _c: None)
    clients.register_producer(GROUP, ClientChannel(broker.producer, "c@1", "JAVA", 399))  # type: ignore[arg-type]
    checker = transactionchecks.TransactionChecker(
        broker.halves, broker.offsets, clients, transactionchecks.CheckSettings(0, 20, 15, 3_600_000))
    checker.start()
    try:
        for _ in range(200):
            if broker.producer.sent:
                break
            await asyncio.sleep(0.01)
    finally:
        await checker.close()
        await checker.close()
    assert broker.producer.sent


async def test_a_store_refusing_the_copy_ends_the_pass_instead_of_retrying_at_once(broker: Broker) -> None:
    await broker.half(b"stuck")
    attempts = []

    async def refused(request: PutRequest) -> PutResult:
        attempts.append(request)
        return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, error="disk full")

    broker.halves.put = refused  # type: ignore[method-assign]
    checker = broker.checker()
    await _pass(checker)
    assert len(attempts) == 1
    assert broker.producer.sent == []
    assert broker.offsets.query(transactions.SYS_TRANS_GROUP, transactions.HALF_TOPIC, 0) == -1

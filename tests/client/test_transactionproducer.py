"""TransactionProducer against the in-process fake cluster: the half send, END_TRANSACTION, and
the answer to a broker's CHECK_TRANSACTION_STATE."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from client_fakes import FakeCluster

from rocketq.client.errors import ClientStateError
from rocketq.client.messages import Message
from rocketq.client.transactionproducer import LocalTransactionState, TransactionProducer
from rocketq.protocol import message
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketq.protocol.message import MessageExt, MessageSysFlag

END = RequestCode.END_TRANSACTION


class Listener:
    def __init__(self, execute: Any, check: Any = LocalTransactionState.COMMIT) -> None:
        self.execute, self.check = execute, check
        self.checked: list[MessageExt] = []

    async def execute_local_transaction(self, msg: Message, arg: Any) -> Any:
        if isinstance(self.execute, Exception):
            raise self.execute
        return self.execute

    def check_local_transaction(self, msg: MessageExt) -> Any:
        self.checked.append(msg)
        return self.check


@pytest.fixture
async def started(cluster: FakeCluster) -> AsyncIterator[tuple[FakeCluster, list[TransactionProducer]]]:
    cluster.topic("Tx", queue_nums=1)
    made: list[TransactionProducer] = []
    try:
        yield cluster, made
    finally:
        for p in made:
            await p.close()


async def producer(started: Any, listener: Listener) -> TransactionProducer:
    cluster, made = started
    p = TransactionProducer("tx-pg", listener, namesrv_addr=cluster.namesrv.addr, topics=["Tx"])
    made.append(p)
    await p.start()
    return p


def ends(cluster: FakeCluster) -> list[EndTransactionRequestHeader]:
    return [EndTransactionRequestHeader.from_ext(ext) for b in cluster.brokers for code, ext in b.requests
            if code == END]


async def wait_for(predicate: Any) -> None:
    for _ in range(200):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not reached")


async def test_the_half_send_and_the_commit(started: Any) -> None:
    p = await producer(started, Listener(LocalTransactionState.COMMIT))
    result = await p.send_message_in_transaction(Message("Tx", b"pay"))
    cluster = started[0]
    [half] = [message.decode_stored_record(r) for b in cluster.brokers for sq in b.queues.values() for r in sq.records]
    assert half.properties[message.TRAN_MSG] == "true" and half.properties[message.PGROUP] == "tx-pg"
    assert message.transaction_type(half.sys_flag) == MessageSysFlag.TRANSACTION_PREPARED_TYPE
    await wait_for(lambda: ends(cluster))
    [end] = ends(cluster)
    assert end.commit_or_rollback == MessageSysFlag.TRANSACTION_COMMIT_TYPE
    assert end.tran_state_table_offset == result.send_result.queue_offset
    assert end.commit_log_offset == half.commit_log_offset  # decoded from the offset msgId
    assert end.msg_id == result.transaction_id and not end.from_transaction_check


async def test_a_failing_local_transaction_is_unknown_with_rocketmqs_remark(started: Any) -> None:
    p = await producer(started, Listener(RuntimeError("db down")))
    result = await p.send_message_in_transaction(Message("Tx", b"pay"))
    assert result.local_transaction_state is LocalTransactionState.UNKNOW
    cluster = started[0]
    await wait_for(lambda: ends(cluster))
    assert ends(cluster)[0].commit_or_rollback == MessageSysFlag.TRANSACTION_NOT_TYPE
    remarks = [r for b in cluster.brokers for r in b.end_remarks]
    assert remarks == ["executeLocalTransactionBranch exception: db down"]


async def test_a_check_is_answered_for_this_group_only(started: Any) -> None:
    listener = Listener(LocalTransactionState.UNKNOWN, check=LocalTransactionState.ROLLBACK)
    p = await producer(started, listener)
    cluster = started[0]
    broker = cluster.brokers[0]
    [conn] = broker.server.connections  # the producer's connection: the broker calls it back on it

    def check(group: str) -> RemotingCommand:
        record = message.encode_stored_record(
            topic="Tx", queue_id=0, body=b"pay", queue_offset=9, physical_offset=4242,
            properties={message.PGROUP: group, message.UNIQ_KEY: "UK1", message.TRAN_MSG: "true"})
        header = CheckTransactionStateRequestHeader(tran_state_table_offset=9, commit_log_offset=4242, msg_id="UK1",
                                                    transaction_id="UK1")
        return RemotingCommand(code=RequestCode.CHECK_TRANSACTION_STATE, ext_fields=header.to_ext(), body=record)

    await conn.invoke_oneway(check("another-group"))
    await conn.invoke_oneway(check("tx-pg"))
    await wait_for(lambda: ends(cluster))
    [end] = ends(cluster)
    assert [m.body for m in listener.checked] == [b"pay"]
    assert end.from_transaction_check and end.commit_or_rollback == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
    assert (end.tran_state_table_offset, end.commit_log_offset, end.msg_id) == (9, 4242, "UK1")
    assert p.client_id is not None


class OnlyExecutes:
    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT


def test_a_listener_without_both_methods_is_refused() -> None:
    with pytest.raises(ClientStateError, match="check_local_transaction"):
        TransactionProducer("pg", OnlyExecutes(), namesrv_addr="127.0.0.1:9876")  # type: ignore[arg-type]

"""Transactions through the proxy: half messages, EndTransaction, and the brokers' check-backs.

A v2 producer sends a TRANSACTION message and later ends it with EndTransaction (COMMIT or
ROLLBACK, SOURCE_CLIENT). The proxy sends the half message with the SDK's
``TransactionProducer`` under its own producer group, whose "local transaction" is always
UNKNOW: the outcome is the v2 client's, and arrives as a separate call. What END_TRANSACTION
needs (broker, queue offset, CommitLog offset, ids) is remembered per (topic, transaction id),
as RocketMQ's proxy keeps ``TransactionData``, for ``MAX_AGE_S`` (past that the broker's check
settles the message).

The broker checks an unfinished half with CHECK_TRANSACTION_STATE to a producer of the
proxy's group, i.e. the proxy: it remembers the half's data and writes
``recover_orphaned_transaction_command{message, transaction_id}`` on the Telemetry stream of one
connected producer client that publishes the topic. That client answers with EndTransaction
(SOURCE_SERVER_CHECK), which the proxy turns into END_TRANSACTION. With no such client the
check is answered UNKNOW and the broker asks again later.
"""

from __future__ import annotations

import logging
import random
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from rocketq.client.sending import SendResult
from rocketq.client.transactionproducer import LocalTransactionState
from rocketq.protocol import messageproperties as mp
from rocketq.protocol import msgid
from rocketq.protocol.headers import EndTransactionRequestHeader
from rocketq.protocol.messagetypes import Message, MessageExt, MessageSysFlag
from rocketq.proxy import convert
from rocketq.proxy.clients import ClientTable
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb

log = logging.getLogger(__name__)

MAX_TRANSACTIONS: Final = 100_000
"""Open transactions remembered at once; the oldest are forgotten first (the broker's check remains)."""
MAX_AGE_S: Final = 3600.0
"""``maxTransactionRecoverySecond``: how long a transaction's data is kept."""
END_TYPES: Final = {pb.COMMIT: MessageSysFlag.TRANSACTION_COMMIT_TYPE,
                    pb.ROLLBACK: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE}


@dataclass(frozen=True, slots=True)
class TransactionData:
    broker_addr: str
    queue_offset: int
    commit_log_offset: int
    message_id: str
    created: float


class Transactions:
    """The proxy's transaction table and its ``TransactionListener`` for the SDK producer."""

    def __init__(self, clients: ClientTable, group: str) -> None:
        self.clients = clients
        self.group = group
        self._open: OrderedDict[tuple[str, str], TransactionData] = OrderedDict()

    def _remember(self, topic: str, transaction_id: str, data: TransactionData) -> None:
        self._open[(topic, transaction_id)] = data
        while len(self._open) > MAX_TRANSACTIONS:
            self._open.popitem(last=False)

    def sent(self, topic: str, result: SendResult, broker_addr: str) -> None:
        try:
            commit_log_offset = msgid.decode_offset_msg_id(result.offset_msg_id).commit_log_offset
        except msgid.MessageIdError:
            log.warning("half message %s has no offset id; only the broker's check can end it", result.msg_id)
            return
        self._remember(topic, result.msg_id, TransactionData(broker_addr, result.queue_offset, commit_log_offset,
                                                             result.msg_id, time.monotonic()))

    def end_header(self, topic: str, transaction_id: str, resolution: pb.TransactionResolution,
                   source: pb.TransactionSource) -> tuple[str, EndTransactionRequestHeader]:
        """(broker address, END_TRANSACTION header) for an EndTransaction call."""
        if not transaction_id.strip():
            raise ProxyError(Code.INVALID_TRANSACTION_ID, "transaction id is blank")
        end_type = END_TYPES.get(resolution)
        if end_type is None:
            raise ProxyError(Code.BAD_REQUEST, "resolution must be COMMIT or ROLLBACK")
        data = self._open.pop((topic, transaction_id), None)
        if data is None or time.monotonic() - data.created > MAX_AGE_S:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, f"no open transaction {transaction_id} of topic {topic}")
        return data.broker_addr, EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=data.queue_offset,
            commit_log_offset=data.commit_log_offset, commit_or_rollback=end_type,
            from_transaction_check=source == pb.SOURCE_SERVER_CHECK, msg_id=data.message_id,
            transaction_id=transaction_id, topic=topic)

    # --- the SDK producer's listener -------------------------------------------------------------

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW  # the v2 client ends it with EndTransaction

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        topic = msg.properties.get(mp.REAL_TOPIC) or msg.topic
        transaction_id = msg.properties.get(mp.UNIQ_KEY) or msg.msg_id
        producers = [c for c in self.clients.producers_of(topic) if c.stream is not None]
        if not producers:
            log.info("no connected producer of %s to check transaction %s", topic, transaction_id)
            return LocalTransactionState.UNKNOW
        host, port = msg.store_host
        self._remember(topic, transaction_id, TransactionData(
            f"{host}:{port}", msg.queue_offset, msg.commit_log_offset, transaction_id, time.monotonic()))
        command = spb.TelemetryCommand(recover_orphaned_transaction_command=spb.RecoverOrphanedTransactionCommand(
            message=convert.to_v2(msg, topic=topic), transaction_id=transaction_id))
        stream = random.choice(producers).stream
        if stream is not None and not stream.full():
            stream.put_nowait(command)
        return LocalTransactionState.UNKNOW

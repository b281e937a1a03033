"""TransactionProducer: a message that becomes visible only if a local transaction commits.

    class Orders:
        async def execute_local_transaction(self, msg, arg):
            await db.insert_order(arg)             # the local transaction
            return LocalTransactionState.COMMIT

        async def check_local_transaction(self, msg):
            found = await db.order_exists(msg.properties["KEYS"])
            return LocalTransactionState.COMMIT if found else LocalTransactionState.UNKNOWN

    producer = TransactionProducer("pg", Orders(), namesrv_addr="127.0.0.1:9876")
    await producer.start()
    result = await producer.send_message_in_transaction(Message("Orders", b"..."), arg=order)

``send_message_in_transaction`` (RocketMQ's ``sendMessageInTransaction``) sends the message as a
*half message* (properties TRAN_MSG=true, PGROUP=<group>, sysFlag PREPARED; retried on another
broker like any send): the broker stores it where no
consumer sees it. Only if that send succeeded does it run ``execute_local_transaction``; then it
ends the transaction with END_TRANSACTION (oneway), COMMIT making the message visible, ROLLBACK
dropping it, UNKNOWN (or an exception) leaving it to the broker's check.

The check: a half message left unfinished for ``transactionTimeOut`` (6 s by default) makes the
broker send CHECK_TRANSACTION_STATE to a live producer of the same group, which may be another
process: this producer answers any half of its group, calling ``check_local_transaction`` with
the message and answering with END_TRANSACTION. So a producer that crashed mid-transaction is
covered by any other (or restarted) member of its group. Both listener methods may be plain or
``async`` functions; checks run as tasks owned by the producer (at most
``MAX_CHECKS_IN_FLIGHT`` at once) and are cancelled by ``close``.

With ``enable_msg_trace=True`` every END_TRANSACTION sent is traced (an ``EndTransaction``
record, ``rocketq.client.tracing``), as well as the half message's send (a ``Pub``).

To be asked, a producer must be known to the broker: it heartbeats to the brokers of the
topics in ``topics`` and of the auto-create topic from ``start`` on, as a Java producer does.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import logging
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from rocketq.client import sending, tracing, wire
from rocketq.client.errors import ClientError, ClientStateError, MessageError
from rocketq.client.producer import Producer
from rocketq.client.sending import SendResult, SendStatus
from rocketq.protocol import message, msgid
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader, HeaderError
from rocketq.protocol.message import Message, MessageExt, MessageSysFlag
from rocketq.remoting.connection import Connection
from rocketq.remoting.errors import RemotingError

log = logging.getLogger(__name__)

MAX_CHECKS_IN_FLIGHT: Final = 2000
"""Check-backs being answered at once (RocketMQ's ``checkRequestHoldMax``); more are dropped and
the broker asks again on its next pass."""


class LocalTransactionState(enum.Enum):
    """The local transaction's outcome; RocketMQ's names, with plain-English aliases."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"
    COMMIT = "COMMIT_MESSAGE"
    ROLLBACK = "ROLLBACK_MESSAGE"
    UNKNOWN = "UNKNOW"


_END_TYPE: Final = {
    LocalTransactionState.COMMIT_MESSAGE: MessageSysFlag.TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: MessageSysFlag.TRANSACTION_NOT_TYPE,
}


class TransactionListener(Protocol):
    def execute_local_transaction(
        self, msg: Message, arg: Any
    ) -> LocalTransactionState | Awaitable[LocalTransactionState]: ...

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState | Awaitable[LocalTransactionState]: ...


@dataclass(frozen=True, slots=True)
class TransactionSendResult:
    send_result: SendResult
    local_transaction_state: LocalTransactionState
    transaction_id: str
    """The message's UNIQ_KEY: what check-backs and END_TRANSACTION call the transaction."""


async def _ask(call: Any, *args: Any) -> tuple[LocalTransactionState, BaseException | None]:
    """Run a listener method; an exception or a wrong answer means UNKNOW (asked again later)."""
    try:
        state = call(*args)
        if inspect.isawaitable(state):
            state = await state
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("transaction listener %s failed; the state is UNKNOW", getattr(call, "__name__", call))
        return LocalTransactionState.UNKNOW, exc
    if not isinstance(state, LocalTransactionState):
        log.warning("transaction listener returned %r, not a LocalTransactionState; treating it as UNKNOW", state)
        return LocalTransactionState.UNKNOW, None
    return state, None


class TransactionProducer(Producer):
    def __init__(self, group: str, listener: TransactionListener, namesrv_addr: str | None = None, *,
                 topics: Iterable[str] = (), **options: Any) -> None:
        require_listener(listener)
        super().__init__(group, namesrv_addr, **options)
        self.listener = listener
        self._topics = tuple(topics)
        self._checks: set[asyncio.Task[None]] = set()
        self._handlers[RequestCode.CHECK_TRANSACTION_STATE] = self._check_requested

    async def start(self) -> None:
        await super().start()
        instance = self._running()
        for topic in (*self._topics, self.settings.create_topic_key):
            try:
                await instance.update_route(topic)
            except ClientError as exc:
                log.warning("%s: route of %s unavailable: %s", self.group, topic, exc)
        await instance.heartbeat()

    async def close(self) -> None:
        checks, self._checks = list(self._checks), set()
        for check in checks:
            check.cancel()
        await asyncio.gather(*checks, return_exceptions=True)
        await super().close()

    async def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        """Send ``msg`` as a half message, run the local transaction, end the transaction."""
        if not isinstance(msg, Message):
            raise MessageError(f"expected a Message, not {type(msg).__name__}")
        msg.properties.pop(message.DELAY, None)  # transactional messages cannot be delayed
        msg.properties[message.TRAN_MSG] = "true"
        msg.properties[message.PGROUP] = self.group
        instance = self._running()
        out = sending.prepare(msg, self.settings)
        out = dataclasses.replace(out, sys_flag=out.sys_flag | MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        result = await self._send_default(instance, out, 1 + self.settings.retry_times_when_send_failed,
                                          self._timeout(None))
        transaction_id = msg.properties.get(message.UNIQ_KEY, result.msg_id)
        error: BaseException | None = None
        if result.status is SendStatus.SEND_OK:
            state, error = await _ask(self.listener.execute_local_transaction, msg, arg)
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE  # not durably stored: do not commit it
        remark = f"executeLocalTransactionBranch exception: {error}" if error is not None else None
        try:
            await self._end(msg, result, state, remark)
        except (ClientError, RemotingError) as exc:
            # the broker's check-back settles it later
            log.warning("%s: END_TRANSACTION of %s failed: %s", self.group, transaction_id, exc)
        return TransactionSendResult(result, state, transaction_id)

    async def _end(self, msg: Message, result: SendResult, state: LocalTransactionState, remark: str | None) -> None:
        instance = self._running()
        try:
            commit_log_offset = msgid.decode_offset_msg_id(result.offset_msg_id).commit_log_offset
        except msgid.MessageIdError as exc:
            raise ClientError(f"the broker's message id {result.offset_msg_id!r} is not an offset id: {exc}") from None
        header = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset, commit_or_rollback=_END_TYPE[state],
            from_transaction_check=False, msg_id=result.msg_id, transaction_id=result.msg_id,
        )
        mq = result.message_queue

        async def end_at(addr: str) -> None:
            self._trace_end(msg, header, addr, state)
            await wire.end_transaction_oneway(instance.remoting, addr, header, remark)

        await instance.call_current(mq.topic, lambda: instance.find_master(mq), end_at)

    def _trace_end(self, msg: Message | MessageExt, header: EndTransactionRequestHeader, addr: str,
                   state: LocalTransactionState) -> None:
        """RocketMQ records the EndTransaction trace just before sending END_TRANSACTION."""
        if self.tracer is not None:
            self.tracer.submit([tracing.end_transaction_record(
                msg, group=self.group, msg_id=header.msg_id or "", transaction_id=header.transaction_id or "",
                store_host=addr, state=state.value, from_check=header.from_transaction_check)])

    # --- check-backs ------------------------------------------------------------------------

    async def _check_requested(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        """CHECK_TRANSACTION_STATE (oneway): answer it in a task, so the connection reads on."""
        try:
            header = CheckTransactionStateRequestHeader.from_ext(request.ext_fields)
            msg = message.decode_stored_record(request.body)
        except (HeaderError, message.MessageFormatError) as exc:
            log.warning("%s: unreadable CHECK_TRANSACTION_STATE from %s: %s", self.group, conn.remote_addr, exc)
            return None
        if msg.properties.get(message.PGROUP) != self.group:
            log.debug("%s: check for group %s ignored", self.group, msg.properties.get(message.PGROUP))
            return None
        if len(self._checks) >= MAX_CHECKS_IN_FLIGHT:
            log.warning("%s: %d checks in flight; %s is answered when the broker asks again",
                        self.group, len(self._checks), msg.msg_id)
            return None
        task = asyncio.get_running_loop().create_task(self._answer_check(conn, header, msg))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)
        return None

    async def _answer_check(self, conn: Connection, check: CheckTransactionStateRequestHeader,
                            msg: MessageExt) -> None:
        state, error = await _ask(self.listener.check_local_transaction, msg)
        uniq = msg.properties.get(message.UNIQ_KEY) or msg.msg_id
        header = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=check.tran_state_table_offset,
            commit_log_offset=check.commit_log_offset, commit_or_rollback=_END_TYPE[state],
            from_transaction_check=True, msg_id=uniq, transaction_id=check.transaction_id,
        )
        remark = f"checkLocalTransactionState Exception: {error}" if error is not None else None
        self._trace_end(msg, header, conn.remote_addr, state)
        try:
            await conn.invoke_oneway(self._running().remoting.prepare(wire.end_transaction_request(header, remark)))
        except (RemotingError, OSError, ClientError) as exc:
            log.warning("%s: answering the check of %s failed: %s", self.group, uniq, exc)


def require_listener(listener: object) -> None:
    """ClientStateError unless ``listener`` has both transaction methods."""
    for name in ("execute_local_transaction", "check_local_transaction"):
        if not callable(getattr(listener, name, None)):
            raise ClientStateError(f"the transaction listener has no {name}() method")

"""Message trace hooks of the SDK: what a traced send or consume records, and how it is shipped.

With ``enable_msg_trace=True`` a ``Producer`` records a ``Pub`` trace after every answered send
attempt, a ``TransactionProducer`` also an ``EndTransaction`` trace for every END_TRANSACTION it
sends (after the local transaction, and when answering a broker's check, fromTransactionCheck
true), and a ``PushConsumer`` records ``SubBefore``/``SubAfter`` around every listener call,
concurrent or orderly (``rocketq.protocol.traces`` has the records and their encoding). The records go to a
``TraceDispatcher``, which ships them in batches as ordinary messages to the trace topic
(``RMQ_SYS_TRACE_TOPIC``, or ``custom_trace_topic``) through its own producer, keyed by the
traced msgIds and keys so that ``rocketq admin queryMsgTraceById`` finds them.

Tracing never slows down or fails what it traces: ``submit`` only puts records in a bounded
queue and returns; when the queue is full the record is dropped and counted (``dropped``), and a
trace send that fails is counted (``failed``) and logged at most once per interval. What is not
traced, as in RocketMQ: oneway sends and attempts that got no answer, batch sends, and messages of
the trace topic itself.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from rocketq.client.errors import ClientError
from rocketq.protocol import messageproperties, messagetypes, msgid, traces
from rocketq.protocol.traces import ContextCode, MessageType, TraceRecord, TraceType
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.errors import RemotingError

if TYPE_CHECKING:
    from rocketq.client.consuming import ConsumeContext, ConsumeStatus, Listener
    from rocketq.client.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus, OrderlyListener
    from rocketq.client.producer import Producer
    from rocketq.client.sending import Outgoing, SendResult
    from rocketq.protocol.messagetypes import MessageExt

log = logging.getLogger(__name__)
_limited = LogLimiter(log)

MAX_PENDING: Final = 2048
"""Records waiting to be shipped (RocketMQ's trace queueSize); more are dropped and counted."""
MAX_BATCH_RECORDS: Final = 100
"""Records per trace message (RocketMQ's batchSize)."""
MAX_BATCH_BYTES: Final = 128 * 1024
"""Body size at which a trace message is sent even if it could take more records."""
FLUSH_INTERVAL: Final = 0.1
"""Seconds a partial batch waits for more records before it is sent."""
CLOSE_FLUSH_TIMEOUT: Final = 5.0
"""Seconds ``close`` spends shipping what is still queued."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TraceDispatcher:
    """A bounded queue of trace records and the one task that ships them."""

    def __init__(self, namesrv_addr: str, topic: str = traces.DEFAULT_TRACE_TOPIC,
                 *, max_pending: int = MAX_PENDING, credentials: Mapping[str, str] | None = None) -> None:
        """``credentials``: the traced client's ACL options (``ClientSettings.credentials``), so
        its trace producer signs as it does."""
        self.topic = topic
        self._credentials: dict[str, Any] = dict(credentials or {})
        self._namesrv_addr = namesrv_addr
        self._queue: asyncio.Queue[TraceRecord] = asyncio.Queue(max_pending)
        self._producer: Producer | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        """Set by submit and close: the shipping task has something to do."""
        self._closing = False
        self.dropped = 0
        """Records dropped because the queue was full."""
        self.failed = 0
        """Records whose trace message could not be sent."""
        self.shipped = 0

    async def start(self, producer: Producer | None = None) -> None:
        """Start shipping through ``producer`` (tests), else a producer of its own."""
        if producer is None:
            # imported here: the producer module imports this one for its hook
            from rocketq.client.producer import Producer

            producer = Producer(traces.TRACE_PRODUCER_GROUP, namesrv_addr=self._namesrv_addr,
                                instance_name=f"trace-{os.getpid()}-{id(self)}", **self._credentials)
            await producer.start()
        self._producer = producer
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"trace dispatcher {self.topic}")

    def submit(self, records: Sequence[TraceRecord]) -> None:
        """Queue records for shipping; never blocks, never raises."""
        for record in records:
            try:
                self._queue.put_nowait(record)
            except asyncio.QueueFull:
                self.dropped += 1
        self._wake.set()

    async def close(self) -> None:
        """Ship what is queued or on its way (bounded by CLOSE_FLUSH_TIMEOUT), stop. Idempotent.

        The shipping task is asked to finish, not cancelled: cancelling it in the middle of a send
        would lose the batch it holds.
        """
        self._closing = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, CLOSE_FLUSH_TIMEOUT)
            except TimeoutError:
                _limited.log(logging.WARNING, self.topic, "closing with %d trace record(s) unsent to %s",
                             self._queue.qsize(), self.topic)
            except Exception:  # a bug in shipping must not fail the traced client's close
                log.exception("trace dispatcher of %s failed", self.topic)
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.close()

    async def _run(self) -> None:
        while True:
            if self._queue.empty():
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            if not self._closing and self._queue.qsize() < MAX_BATCH_RECORDS:
                await asyncio.sleep(FLUSH_INTERVAL)  # let a partial batch fill up a little
            await self._ship(self._take_batch())

    def _take_batch(self) -> list[TraceRecord]:
        batch: list[TraceRecord] = []
        while len(batch) < MAX_BATCH_RECORDS and not self._queue.empty():
            batch.append(self._queue.get_nowait())
        return batch

    async def _ship(self, batch: list[TraceRecord]) -> None:
        # one trace message per MAX_BATCH_BYTES of encoded records
        chunk: list[TraceRecord] = []
        size = 0
        for record in batch:
            chunk.append(record)
            size += len(traces.encode(record))
            if size >= MAX_BATCH_BYTES:
                await self._send(chunk)
                chunk, size = [], 0
        if chunk:
            await self._send(chunk)

    async def _send(self, records: list[TraceRecord]) -> None:
        assert self._producer is not None
        msg = messagetypes.Message(self.topic, traces.encode_batch(records))
        msg.keys = traces.index_keys(records)
        try:
            await self._producer.send(msg)
        except (ClientError, RemotingError) as exc:
            self.failed += len(records)
            _limited.log(logging.WARNING, self.topic, "sending %d trace record(s) to %s failed: %s",
                         len(records), self.topic, exc)
        else:
            self.shipped += len(records)


# --- the producer's hook ----------------------------------------------------------------------


def pub_record(out: Outgoing, result: SendResult, *, group: str, store_host: str, started_ms: int,
               client_host: str) -> TraceRecord:
    """The Pub record of one answered send attempt that started at ``started_ms`` (wall clock)."""
    props = messageproperties.decode_properties(out.properties) if out.properties else {}
    if props.get(messageproperties.TRAN_MSG) == "true":
        msg_type = MessageType.TRANS_HALF
    elif props.get(messageproperties.DELAY):
        msg_type = MessageType.DELAY
    else:
        msg_type = MessageType.NORMAL
    return TraceRecord(
        type=TraceType.PUB, timestamp=started_ms, region_id=result.region_id or traces.DEFAULT_REGION,
        group=group, topic=out.topic, msg_id=out.msg_id, tags=props.get(messageproperties.TAGS, ""),
        keys=props.get(messageproperties.KEYS, ""), store_host=store_host, body_length=len(out.body),
        cost_time=_now_ms() - started_ms,
        msg_type=msg_type, offset_msg_id=result.offset_msg_id, success=result.status.value == "SEND_OK",
        client_host=client_host)


def end_transaction_record(msg: messagetypes.Message | MessageExt, *, group: str, msg_id: str, transaction_id: str,
                           store_host: str, state: str, from_check: bool) -> TraceRecord:
    """The EndTransaction record of one END_TRANSACTION (RocketMQ's ``EndTransactionTraceHookImpl``):
    msgType Trans_msg_Commit whatever the outcome, the state by its Java name."""
    props = msg.properties
    return TraceRecord(
        type=TraceType.END_TRANSACTION, timestamp=_now_ms(),
        region_id=props.get(messageproperties.MSG_REGION) or traces.DEFAULT_REGION, group=group, topic=msg.topic,
        msg_id=msg_id, tags=props.get(messageproperties.TAGS, ""), keys=props.get(messageproperties.KEYS, ""),
        store_host=store_host,
        msg_type=MessageType.TRANS_COMMIT, transaction_id=transaction_id, transaction_state=state,
        from_transaction_check=from_check)


# --- the push consumer's hook -----------------------------------------------------------------

_request_ids: msgid.UniqIdGenerator | None = None


def _next_request_id() -> str:
    global _request_ids
    if _request_ids is None:
        _request_ids = msgid.UniqIdGenerator()
    return _request_ids.next_id()


def _traced(msg: MessageExt, trace_topic: str) -> bool:
    return msg.topic != trace_topic and msg.properties.get(messageproperties.TRACE_ON) != "false"


def traced_listener(listener: Listener, dispatcher: TraceDispatcher, group: str) -> Listener:
    """``listener`` with a SubBefore record per message before each call and a SubAfter after it.

    An exception, ``None`` or RECONSUME_LATER is still the consume service's to interpret; the
    wrapper only records it (contextCode EXCEPTION, RETURNNULL, FAILED) and passes it on.
    """
    from rocketq.client.consuming import ConsumeStatus

    return _traced_calls(listener, dispatcher, group, lambda status: status is ConsumeStatus.CONSUME_SUCCESS)


def traced_orderly_listener(listener: OrderlyListener, dispatcher: TraceDispatcher, group: str) -> OrderlyListener:
    """An orderly listener traced the same way: SUCCESS (and the deprecated COMMIT) count as
    success, SUSPEND_CURRENT_QUEUE_A_MOMENT (and ROLLBACK) as FAILED, as RocketMQ's orderly
    service records them."""
    from rocketq.client.orderly import ConsumeOrderlyStatus

    succeeded = (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.COMMIT)
    return _traced_calls(listener, dispatcher, group, lambda status: status in succeeded)


def _traced_calls(listener: Callable[[list[MessageExt], Any], Any], dispatcher: TraceDispatcher, group: str,
                  succeeded: Callable[[object], bool]) -> Any:
    async def traced(msgs: list[MessageExt], ctx: ConsumeContext | ConsumeOrderlyContext
                     ) -> ConsumeStatus | ConsumeOrderlyStatus | None:
        shown = [m for m in msgs if _traced(m, dispatcher.topic)]
        request_id = _next_request_id()
        started = _now_ms()
        dispatcher.submit([
            TraceRecord(type=TraceType.SUB_BEFORE, timestamp=started, group=group, request_id=request_id,
                        region_id=m.properties.get(messageproperties.MSG_REGION) or traces.DEFAULT_REGION,
                        msg_id=m.msg_id, retry_times=m.reconsume_times, keys=" ".join(m.keys))
            for m in shown])
        code = ContextCode.EXCEPTION
        try:
            status = listener(msgs, ctx)
            if inspect.isawaitable(status):
                status = await status
            if status is None:
                code = ContextCode.RETURNNULL
            elif succeeded(status):
                code = ContextCode.SUCCESS
            else:
                code = ContextCode.FAILED
            return status  # an odd answer is passed on: the service judges it
        finally:
            if shown:
                # RocketMQ spreads a batch's cost over its messages
                cost = (_now_ms() - started) // len(shown)
                dispatcher.submit([
                    TraceRecord(type=TraceType.SUB_AFTER, request_id=request_id, msg_id=m.msg_id, cost_time=cost,
                                success=code is ContextCode.SUCCESS, keys=" ".join(m.keys), context_code=code,
                                timestamp=_now_ms(), group=group)
                    for m in shown])

    return traced

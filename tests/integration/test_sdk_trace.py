"""Message traces end to end: a traced producer and push consumer against real processes.

The broker creates RMQ_SYS_TRACE_TOPIC (traceTopicEnable); a Pub trace per send and
SubBefore/SubAfter per listener call land there, keyed by msgId, and ``rocketq admin
queryMsgTraceById`` prints them. A message the listener refuses once is traced twice, the
second SubBefore with retryTimes 1.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import CliRunner
from test_sdk_push import FAST, wait_until

from rocketq.admin import cluster, messages
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.cli import admin as admin_cli
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.messages import Message
from rocketq.client.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketq.client.producer import Producer
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.transactionproducer import LocalTransactionState, TransactionProducer
from rocketq.protocol import traces
from rocketq.protocol.messagetypes import MessageExt
from rocketq.protocol.traces import ContextCode, TraceRecord, TraceType

TOPIC = "TraceIT"


async def wait_for_trace(admin: AdminClient, msg_id: str, wanted: int, topic: str) -> list[TraceRecord]:
    records: list[TraceRecord] = []
    for _ in range(200):
        try:
            records = await messages.query_trace(admin, msg_id, topic)
        except AdminError:  # the trace topic is created by the first trace message
            records = []
        if len(records) >= wanted:
            return records
        await asyncio.sleep(0.1)
    raise AssertionError(f"trace of {msg_id} incomplete: {records}")


async def test_send_and_consume_are_traced_and_queryable(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config={"traceTopicEnable": "true"})
    refused_once: set[str] = set()

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        for m in msgs:
            if m.body == b"retry-me" and m.msg_id not in refused_once:
                refused_once.add(m.msg_id)
                return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    async with Producer("trace-pg", namesrv_addr=ns.address, enable_msg_trace=True) as producer:
        ok = await producer.send(Message(TOPIC, b"plain", tags="TagA", keys="order-1"))
        retried = await producer.send(Message(TOPIC, b"retry-me"))
        consumer = PushConsumer("trace-cg", namesrv_addr=ns.address, enable_msg_trace=True, **FAST)
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(listener)
        async with consumer, AdminClient(ns.address) as admin:
            plain = await wait_for_trace(admin, ok.msg_id, 3, traces.DEFAULT_TRACE_TOPIC)
            again = await wait_for_trace(admin, retried.msg_id, 5, traces.DEFAULT_TRACE_TOPIC)
        assert producer.tracer is not None and producer.tracer.dropped == 0

    pub, before, after = plain
    assert (pub.type, pub.group, pub.topic, pub.tags, pub.keys, pub.success) == (
        TraceType.PUB, "trace-pg", TOPIC, "TagA", "order-1", True)
    assert pub.offset_msg_id == ok.offset_msg_id and pub.body_length == len(b"plain")
    assert (before.type, before.group, before.retry_times) == (TraceType.SUB_BEFORE, "trace-cg", 0)
    assert (after.type, after.request_id, after.success, after.group) == (
        TraceType.SUB_AFTER, before.request_id, True, "trace-cg")

    subs = [r for r in again if r.type is TraceType.SUB_BEFORE]
    outcomes = [(r.success, r.context_code) for r in again if r.type is TraceType.SUB_AFTER]
    assert [r.retry_times for r in subs] == [0, 1]
    assert outcomes == [(False, ContextCode.FAILED), (True, ContextCode.SUCCESS)]

    result = await asyncio.to_thread(CliRunner().invoke, admin_cli.command,
                                     ["queryMsgTraceById", "-n", ns.address, "-i", ok.msg_id])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:2] == ["#Type", "#Group"]
    assert [line.split()[0] for line in lines[1:]] == ["Pub", "SubBefore", "SubAfter"]
    missing = await asyncio.to_thread(CliRunner().invoke, admin_cli.command,
                                      ["queryMsgTraceById", "-n", ns.address, "-i", "NO-SUCH-ID"])
    assert missing.exit_code == 1 and "no trace" in missing.output


async def test_custom_trace_topic(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    async with Producer("trace-pg2", namesrv_addr=ns.address, enable_msg_trace=True,
                        custom_trace_topic="MyTraces") as producer:
        sent = await producer.send(Message(TOPIC, b"x"))
        async with AdminClient(ns.address) as admin:
            (pub,) = await wait_for_trace(admin, sent.msg_id, 1, "MyTraces")
    assert pub.msg_id == sent.msg_id




async def test_an_unreachable_trace_topic_never_fails_the_send(processes: Any) -> None:
    """The trace producer's failures stay inside the dispatcher: the traced send succeeds."""
    ns = processes.namesrv()
    processes.broker(ns.address, config={"autoCreateTopicEnable": "false"})
    async with AdminClient(ns.address) as admin:
        await cluster.create_topic(admin, TopicConfig(TOPIC, 1, 1), cluster="DefaultCluster")
    async with Producer("trace-pg3", namesrv_addr=ns.address, enable_msg_trace=True, **{
            "send_msg_timeout": 2000}) as producer:
        sent = await producer.send(Message(TOPIC, b"x"))
        assert sent.msg_id
        tracer = producer.tracer
        assert tracer is not None
        await wait_until(lambda: tracer.failed >= 1)


async def test_the_broker_creates_the_trace_topic_when_told(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config={"traceTopicEnable": "true", "msgTraceTopicName": "OurTraces",
                                         "autoCreateTopicEnable": "false"})
    async with AdminClient(ns.address) as admin:
        route = None
        for _ in range(100):  # registration with the name server follows the broker's start
            try:
                route = await admin.topic_route("OurTraces")
                break
            except AdminError:
                await asyncio.sleep(0.1)
        assert route is not None and route.queue_datas
        with pytest.raises(AdminError):
            await admin.topic_route(traces.DEFAULT_TRACE_TOPIC)  # only the configured name


class UnknownThenCommit:
    """The local transaction's outcome is unknown at first; the broker's check-back commits it."""

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT


async def test_end_transaction_is_traced_after_the_send_and_after_a_check(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config={"traceTopicEnable": "true", "transactionTimeOut": "500",
                                         "transactionCheckInterval": "300"})
    async with Producer("trace-tx-setup", namesrv_addr=ns.address) as plain:
        await plain.send(Message(TOPIC, b"setup"))
    async with TransactionProducer("trace-tx-pg", UnknownThenCommit(), namesrv_addr=ns.address, topics=[TOPIC],
                                   heartbeat_broker_interval=1000, enable_msg_trace=True) as producer, \
            AdminClient(ns.address) as admin:
        sent = await producer.send_message_in_transaction(Message(TOPIC, b"tx", tags="TagT", keys="tx-1"))
        records = await wait_for_trace(admin, sent.transaction_id, 3, traces.DEFAULT_TRACE_TOPIC)
    pub, *ends = records
    assert (pub.type, pub.msg_type) == (TraceType.PUB, traces.MessageType.TRANS_HALF)
    assert [(r.type, r.transaction_state, r.from_transaction_check) for r in ends] == [
        (TraceType.END_TRANSACTION, "UNKNOW", False), (TraceType.END_TRANSACTION, "COMMIT_MESSAGE", True)]
    for end in ends:
        assert (end.group, end.topic, end.tags, end.keys, end.msg_type) == (
            "trace-tx-pg", TOPIC, "TagT", "tx-1", traces.MessageType.TRANS_COMMIT)
        assert end.transaction_id == sent.transaction_id and end.store_host


async def test_orderly_listener_calls_are_traced(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config={"traceTopicEnable": "true"})
    suspended: set[str] = set()

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        ctx.suspend_current_queue_time_millis = 50
        if msgs[0].msg_id not in suspended:
            suspended.add(msgs[0].msg_id)
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    async with Producer("trace-order-pg", namesrv_addr=ns.address) as producer:
        sent = await producer.send(Message(TOPIC, b"ordered"))
    consumer = PushConsumer("trace-order-cg", namesrv_addr=ns.address, enable_msg_trace=True, **FAST)
    consumer.subscribe(TOPIC, "*")
    consumer.register_orderly_listener(listener)
    async with consumer, AdminClient(ns.address) as admin:
        records = await wait_for_trace(admin, sent.msg_id, 4, traces.DEFAULT_TRACE_TOPIC)
    befores = [r for r in records if r.type is TraceType.SUB_BEFORE]
    afters = [r for r in records if r.type is TraceType.SUB_AFTER]
    assert [(r.group, r.retry_times) for r in befores] == [("trace-order-cg", 0), ("trace-order-cg", 1)]
    assert [(r.success, r.context_code) for r in afters] == [(False, ContextCode.FAILED), (True, ContextCode.SUCCESS)]
    assert [a.request_id for a in afters] == [b.request_id for b in befores]

"""A SendMessage of several messages and an AckMessage of several entries (``rocketq.proxy.batching``):
the NORMAL messages go to the broker as one SEND_BATCH_MESSAGE and the acks of one broker as one
BATCH_ACK_MESSAGE, yet every message and entry keeps its own answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import duration_pb2
from proxycluster import ProxyCluster

from rocketq.client.queues import MessageQueue
from rocketq.client.sending import SendResult, SendStatus
from rocketq.protocol import messageproperties as mp
from rocketq.protocol.messagetypes import Message
from rocketq.proxy import batching
from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

ID = (("x-mq-client-id", "batching-test@1"),)
BIG = 3 * 1024 * 1024
"""Two such bodies are each under the proxy's 4 MiB maxMessageSize, together over it."""


@pytest.fixture
async def stub(proxy_cluster: ProxyCluster) -> AsyncIterator[grpc_v2.MessagingServiceStub]:
    async with grpc.aio.insecure_channel(proxy_cluster.endpoint, options=[
            ("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]) as channel:
        yield grpc_v2.MessagingServiceStub(channel)


def normal(topic: str, n: int, body: bytes = b"") -> pb.Message:
    return pb.Message(topic=pb.Resource(name=topic), body=body or f"body {n}".encode(),
                      system_properties=pb.SystemProperties(message_id=f"BATCHTEST{topic}{n:08d}",
                                                            message_type=pb.NORMAL))


def seconds(n: int) -> duration_pb2.Duration:
    return duration_pb2.Duration(seconds=n)


async def receive(stub: grpc_v2.MessagingServiceStub, topic: str, group: str, count: int) -> list[pb.Message]:
    """Up to ``count`` messages of ``topic`` for ``group`` (several receives; stops at an empty one)."""
    got: list[pb.Message] = []
    while len(got) < count:
        request = spb.ReceiveMessageRequest(
            group=pb.Resource(name=group), batch_size=32, invisible_duration=seconds(10),
            long_polling_timeout=seconds(5), filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
            message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1, broker=pb.Broker(name="broker-a")))
        answers = [a async for a in stub.ReceiveMessage(request, metadata=ID, timeout=30)]
        messages = [a.message for a in answers if a.HasField("message")]
        if not messages:
            break
        got += messages
    return got


async def test_several_normal_messages_are_stored_as_one_batch_with_an_entry_each(
        stub: grpc_v2.MessagingServiceStub) -> None:
    sent = [normal("GrpcBatch", n) for n in range(5)]
    answer = await stub.SendMessage(spb.SendMessageRequest(messages=sent), metadata=ID, timeout=30)
    assert answer.status.code == Code.OK
    assert [e.status.code for e in answer.entries] == [Code.OK] * 5
    assert [e.message_id for e in answer.entries] == [m.system_properties.message_id for m in sent]
    first = answer.entries[0].offset
    assert [e.offset for e in answer.entries] == list(range(first, first + 5))  # one queue, in a row
    got = await receive(stub, "GrpcBatch", "batching-cg", 5)
    assert sorted(m.system_properties.message_id for m in got) == sorted(e.message_id for e in answer.entries)
    assert len({m.system_properties.queue_id for m in got}) == 1
    assert {m.system_properties.message_id: m.body for m in got} == {
        m.system_properties.message_id: m.body for m in sent}


async def test_bad_messages_answer_alone_and_the_others_are_batched(stub: grpc_v2.MessagingServiceStub) -> None:
    empty = normal("GrpcBatchMixed", 1)
    empty.body = b""
    fifo = normal("GrpcBatchMixed", 3)  # a FIFO message to a NORMAL topic: refused by the type check
    fifo.system_properties.message_type = pb.FIFO
    fifo.system_properties.message_group = "g1"
    sent = [normal("GrpcBatchMixed", 0), empty, normal("GrpcBatchMixed", 2), fifo, normal("GrpcBatchMixed", 4)]
    answer = await stub.SendMessage(spb.SendMessageRequest(messages=sent), metadata=ID, timeout=30)
    assert [e.status.code for e in answer.entries] == [
        Code.OK, Code.MESSAGE_BODY_EMPTY, Code.OK, Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, Code.OK]
    assert answer.status.code == Code.MULTIPLE_RESULTS
    batched = [answer.entries[i].offset for i in (0, 2, 4)]
    assert batched == list(range(batched[0], batched[0] + 3))
    got = await receive(stub, "GrpcBatchMixed", "batching-mixed-cg", 3)
    assert {m.system_properties.message_id for m in got} == {sent[i].system_properties.message_id for i in (0, 2, 4)}


async def test_fifo_messages_of_one_request_go_each_to_their_groups_queue(
        stub: grpc_v2.MessagingServiceStub) -> None:
    sent = []
    for n, group in enumerate(("ga", "gb", "ga")):
        m = normal("GrpcBatchFifo", n)
        m.system_properties.message_type = pb.FIFO
        m.system_properties.message_group = group
        sent.append(m)
    answer = await stub.SendMessage(spb.SendMessageRequest(messages=sent), metadata=ID, timeout=30)
    assert [e.status.code for e in answer.entries] == [Code.OK] * 3
    got = await receive(stub, "GrpcBatchFifo", "batching-fifo-cg", 3)
    groups = {m.system_properties.message_id: (m.system_properties.message_group, m.system_properties.queue_id)
              for m in got}
    assert [groups[m.system_properties.message_id][0] for m in sent] == ["ga", "gb", "ga"]
    assert groups[sent[0].system_properties.message_id][1] == groups[sent[2].system_properties.message_id][1]


async def test_messages_too_big_for_one_batch_are_sent_one_by_one(stub: grpc_v2.MessagingServiceStub) -> None:
    sent = [normal("GrpcBatch", 100 + n, bytes([65 + n]) * BIG) for n in range(2)]
    answer = await stub.SendMessage(spb.SendMessageRequest(messages=sent), metadata=ID, timeout=30)
    assert [e.status.code for e in answer.entries] == [Code.OK, Code.OK]
    assert [e.message_id for e in answer.entries] == [m.system_properties.message_id for m in sent]


async def test_acks_of_many_entries_answer_each_and_acked_messages_stay_acked(
        stub: grpc_v2.MessagingServiceStub) -> None:
    sent = [normal("GrpcBatchAck", n) for n in range(4)]
    answer = await stub.SendMessage(spb.SendMessageRequest(messages=sent), metadata=ID, timeout=30)
    assert answer.status.code == Code.OK
    got = await receive(stub, "GrpcBatchAck", "batching-ack-cg", 4)
    assert len(got) == 4
    entries = [spb.AckMessageEntry(message_id=m.system_properties.message_id,
                                   receipt_handle=m.system_properties.receipt_handle) for m in got]
    # the same message with a revive queue the broker does not have: refused, alone
    fields = entries[0].receipt_handle.split(" ")
    fields[3] = "4095"
    forged = spb.AckMessageEntry(message_id="FORGED", receipt_handle=" ".join(fields))
    request = spb.AckMessageRequest(group=pb.Resource(name="batching-ack-cg"),
                                    topic=pb.Resource(name="GrpcBatchAck"), entries=[forged, *entries])
    acked = await stub.AckMessage(request, metadata=ID, timeout=30)
    codes = [e.status.code for e in acked.entries]
    assert codes[0] != Code.OK and codes[1:] == [Code.OK] * 4
    assert [e.message_id for e in acked.entries] == ["FORGED", *(e.message_id for e in entries)]
    again = await stub.AckMessage(spb.AckMessageRequest(group=request.group, topic=request.topic, entries=entries),
                                  metadata=ID, timeout=30)
    assert again.status.code == Code.OK  # all four at once, in one batch
    # past their 10 s invisible time, none comes back
    await asyncio.sleep(11)
    assert await receive(stub, "GrpcBatchAck", "batching-ack-cg", 1) == []


def _msg(props: dict[str, str]) -> Message:
    return Message("T", b"x", properties={mp.UNIQ_KEY: "ID", **props})


def test_only_normal_messages_are_batchable() -> None:
    assert batching.batchable(_msg({mp.TAGS: "a", mp.KEYS: "k"}))
    assert not batching.batchable(_msg({mp.TRAN_MSG: "true"}))
    assert not batching.batchable(_msg({mp.DELAY: "2"}))
    assert not batching.batchable(_msg({mp.SHARDING_KEY: "g"}))


def test_batch_entries_get_their_own_ids_and_consecutive_offsets() -> None:
    msgs = [Message("T", b"x", properties={mp.UNIQ_KEY: f"ID{n}"}) for n in range(3)]
    result = SendResult(SendStatus.SEND_OK, "ID0,ID1,ID2", "OFF", MessageQueue("T", "b", 1), 41)
    assert batching.entries(result, msgs) == [("ID0", 41), ("ID1", 42), ("ID2", 43)]


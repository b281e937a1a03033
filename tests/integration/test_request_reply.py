"""Request-reply against real `rocketq namesrv` + `rocketq broker` processes.

A requester's ``Producer.request`` gets the reply a consumer builds with
``create_reply_message``: the replier's SEND_REPLY_MESSAGE_V2 is pushed by the broker to the
requester's connection (PUSH_REPLY_MESSAGE_TO_CLIENT) and also stored in the reply topic.
"""

from __future__ import annotations

from typing import Any

import pytest
from clusterprocs import pull_bodies
from test_sdk_push import FAST

from rocketq.client import BrokerError, ConsumeStatus, Message, Producer, PushConsumer
from rocketq.client.consuming import ConsumeContext
from rocketq.client.errors import MessageError
from rocketq.client.replies import RequestTimeoutError, create_reply_message
from rocketq.protocol import codes, messageproperties
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import MessageExt

TOPIC = "RequestIT"
CLUSTER = "DefaultCluster"


async def test_request_gets_the_reply_a_consumer_sends(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    async with Producer("replier-pg", namesrv_addr=ns.address) as replier, \
            Producer("requester-pg", namesrv_addr=ns.address) as requester:

        async def answer(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
            for m in msgs:
                await replier.send(create_reply_message(m, b"pong:" + m.body))
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = PushConsumer("replier-cg", namesrv_addr=ns.address, **FAST)
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(answer)
        async with consumer:
            request = Message(TOPIC, b"ping")
            reply = await requester.request(request, timeout_ms=20000)
            again = await requester.request(Message(TOPIC, b"ping2"), timeout_ms=20000)
    assert reply.body == b"pong:ping" and again.body == b"pong:ping2"
    assert reply.topic == codes.reply_topic(CLUSTER)
    assert reply.properties[messageproperties.CORRELATION_ID] == request.properties[messageproperties.CORRELATION_ID]
    assert reply.properties[messageproperties.MSG_TYPE] == "reply"
    assert messageproperties.ARRIVE_TIME in reply.properties and messageproperties.PUSH_REPLY_TIME in reply.properties


async def test_a_request_without_a_replier_times_out(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    async with Producer("lonely-pg", namesrv_addr=ns.address) as requester:
        with pytest.raises(RequestTimeoutError, match="wait reply message timeout"):
            await requester.request(Message(TOPIC, b"anyone?"), timeout_ms=1500)


async def test_a_reply_to_an_unknown_client_is_refused_but_stored(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    orphan = Message(codes.reply_topic(CLUSTER), b"late")
    orphan.properties.update({messageproperties.MSG_TYPE: "reply", messageproperties.CORRELATION_ID: "c-1",
                              messageproperties.REPLY_TO_CLIENT: "10.0.0.1@nobody", messageproperties.TTL: "3000"})
    async with Producer("orphan-pg", namesrv_addr=ns.address, retry_times_when_send_failed=0) as replier:
        with pytest.raises(BrokerError) as refused:
            await replier.send(orphan)
    assert refused.value.code == ResponseCode.SYSTEM_ERROR
    assert "channel of 10.0.0.1@nobody not found" in refused.value.remark
    assert await pull_bodies(ns.address, codes.reply_topic(CLUSTER), "reply-reader") == [b"late"]


def test_a_reply_needs_the_cluster_the_request_was_stored_in() -> None:
    with pytest.raises(MessageError, match="CLUSTER"):
        create_reply_message(Message(TOPIC, b"never stored"), b"x")

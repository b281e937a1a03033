"""SEND_REPLY_MESSAGE on the broker and PUSH_REPLY_MESSAGE_TO_CLIENT in the SDK, without a
network: the broker's answers to the replier, and what the requester's handler does."""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import replace
from typing import Any

from rocketq.broker.clienttable import ClientChannel, ClientManager
from rocketq.broker.replies import ReplyHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.client.replies import ReplyWaiters
from rocketq.protocol import messageproperties, messagetypes
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import ReplyMessageRequestHeader, SendMessageRequestHeader

REQUESTER = "10.0.0.9@req"


class Requester:
    """A requester's connection: records what the broker pushes and answers with ``code``."""

    remote_addr = "10.0.0.9:5555"
    closed = False

    def __init__(self, code: int = ResponseCode.SUCCESS) -> None:
        self.code = code
        self.pushed: list[RemotingCommand] = []

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.pushed.append(cmd)
        return cmd.response(self.code)


class Replier:
    remote_addr = "10.0.0.7:7777"
    closed = False


class Send:
    """The send handlers' two entry points the reply processor uses."""

    def __init__(self) -> None:
        self.stored: list[SendMessageRequestHeader] = []

    def check(self, request: RemotingCommand, header: SendMessageRequestHeader) -> RemotingCommand | None:
        return None

    async def store(self, conn: Any, request: RemotingCommand, header: SendMessageRequestHeader) -> RemotingCommand:
        self.stored.append(header)
        return request.response(ResponseCode.SUCCESS, None, {"msgId": "STORED", "queueId": "0", "queueOffset": "7"})


def reply_request(props: dict[str, str]) -> RemotingCommand:
    header = SendMessageRequestHeader(producer_group="rpg", topic="C_REPLY_TOPIC", queue_id=0,
                                      properties=messageproperties.encode_properties(props))
    return RemotingCommand(code=RequestCode.SEND_REPLY_MESSAGE, ext_fields=header.to_ext(), body=b"answer")


def handlers(requester: Requester | None, **behaviour: Any) -> tuple[ReplyHandlers, Send]:
    clients = ClientManager(lambda g, c: None)
    if requester is not None:
        clients.register_producer("req-pg", ClientChannel(requester, REQUESTER, "JAVA", 1))  # type: ignore[arg-type]
    send = Send()
    settings = replace(BrokerBehaviour(), **behaviour)
    return ReplyHandlers(send, clients, settings, "10.0.0.1:10911"), send  # type: ignore[arg-type]


PROPS = {messageproperties.MSG_TYPE: "reply", messageproperties.CORRELATION_ID: "c1",
         messageproperties.REPLY_TO_CLIENT: REQUESTER, messageproperties.TTL: "3000"}


async def test_a_reply_is_pushed_to_the_requester_then_stored() -> None:
    requester = Requester()
    reply, send = handlers(requester)
    answer = await reply.reply(Replier(), reply_request(PROPS))  # type: ignore[arg-type]
    assert answer.code == ResponseCode.SUCCESS
    assert answer.ext_fields["msgId"] == "STORED" and answer.ext_fields["queueOffset"] == "7"
    assert answer.ext_fields["MSG_REGION"] == "DefaultRegion" and len(send.stored) == 1
    (push,) = requester.pushed
    assert push.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT and push.body == b"answer"
    header = ReplyMessageRequestHeader.from_ext(push.ext_fields)
    assert header.born_host == Replier.remote_addr and header.store_host == "10.0.0.1:10911"
    assert messageproperties.PUSH_REPLY_TIME in messageproperties.decode_properties(header.properties or "")


async def test_without_storing_the_answer_says_msg_id_0() -> None:
    reply, send = handlers(Requester(), store_reply_message_enable=False)
    answer = await reply.reply(Replier(), reply_request(PROPS))  # type: ignore[arg-type]
    assert (answer.code, answer.ext_fields["msgId"], answer.ext_fields["queueOffset"]) == (ResponseCode.SUCCESS,
                                                                                           "0", "0")
    assert send.stored == []


async def test_refusals_name_the_reason_and_the_code_follows_the_push() -> None:
    no_target, _ = handlers(None)
    no_client = reply_request({**PROPS, messageproperties.REPLY_TO_CLIENT: ""})
    missing = await no_target.reply(Replier(), no_client)  # type: ignore[arg-type]
    assert (missing.code, missing.remark) == (ResponseCode.SYSTEM_ERROR,
                                              "reply message properties[REPLY_TO_CLIENT] is null")
    unknown = await no_target.reply(Replier(), reply_request(PROPS))  # type: ignore[arg-type]
    assert unknown.remark == f"push reply message fail, channel of {REQUESTER} not found."
    refusing, send = handlers(Requester(ResponseCode.SYSTEM_ERROR))
    failed = await refusing.reply(Replier(), reply_request(PROPS))  # type: ignore[arg-type]
    assert (failed.code, failed.remark) == (ResponseCode.SYSTEM_ERROR, f"push reply message to {REQUESTER}fail.")
    assert len(send.stored) == 1  # stored all the same, as RocketMQ


def pushed_reply(correlation_id: str, body: bytes, sys_flag: int = 0) -> RemotingCommand:
    header = ReplyMessageRequestHeader(
        producer_group="rpg", topic="C_REPLY_TOPIC", default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
        sys_flag=sys_flag, born_timestamp=1, flag=0,
        properties=messageproperties.encode_properties({messageproperties.CORRELATION_ID: correlation_id}),
        born_host="10.0.0.7:7777", store_host="10.0.0.1:10911", store_timestamp=2)
    return RemotingCommand(code=RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, ext_fields=header.to_ext(), body=body)


async def test_the_requester_completes_the_waiting_request() -> None:
    waiters = ReplyWaiters()
    future = waiters.expect("c1")
    compressed = pushed_reply("c1", zlib.compress(b"big answer"), messagetypes.MessageSysFlag.COMPRESSED)
    answer = await waiters.on_push(Replier(), compressed)  # type: ignore[arg-type]
    assert answer.code == ResponseCode.SUCCESS
    reply = await asyncio.wait_for(future, 1)
    assert reply.body == b"big answer" and messageproperties.ARRIVE_TIME in reply.properties and len(waiters) == 0
    late = await waiters.on_push(Replier(), pushed_reply("gone", b"x"))  # type: ignore[arg-type]
    assert late.code == ResponseCode.SUCCESS  # nobody waits: dropped, still acknowledged
    bad = RemotingCommand(code=RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, ext_fields={"topic": "T"}, body=b"")
    refused = await waiters.on_push(Replier(), bad)  # type: ignore[arg-type]
    assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_ERROR, "process reply message fail")

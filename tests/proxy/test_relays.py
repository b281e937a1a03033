"""Broker requests relayed to v2 clients (rocketq.proxy.relays) and the heartbeats sent for them
(rocketq.proxy.registrations), without processes: a client is a Settings and a stream queue."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from rocketq.client.heartbeats import ConsumeType
from rocketq.protocol import heartbeat, storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader
from rocketq.proxy import clients, registrations
from rocketq.proxy.relays import Relays
from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb

TIMEOUT_S = 0.2


def consumer_settings(kind: Any = pb.PUSH_CONSUMER) -> pb.Settings:
    return pb.Settings(client_type=kind, user_agent=pb.UA(language=pb.PYTHON, version="5.1.2", hostname="h"),
                       subscription=pb.Subscription(group=pb.Resource(name="g"), subscriptions=[
                           pb.SubscriptionEntry(topic=pb.Resource(name="t"),
                                                expression=pb.FilterExpression(type=pb.TAG, expression="a||b"))]))


def ask(jstack: bool, client_id: str = "c1") -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(consumer_group="g", client_id=client_id, jstack_enable=jstack)
    return RemotingCommand(RequestCode.GET_CONSUMER_RUNNING_INFO, opaque=5, ext_fields=header.to_ext())


async def relay_with(reply: Any) -> tuple[RemotingCommand, spb.TelemetryCommand]:
    """Ask c1 for its stacks; ``reply(nonce)`` is what the client answers (None: nothing)."""
    table = clients.ClientTable()
    stream: clients.Outgoing = asyncio.Queue(8)
    table.register("c1", consumer_settings(), stream)
    relays = Relays(table, TIMEOUT_S)
    answering = asyncio.ensure_future(relays.running_info(None, ask(True)))  # type: ignore[arg-type]
    sent = await stream.get()
    assert sent is not None
    answer = reply(sent.print_thread_stack_trace_command.nonce)
    if answer is not None:
        assert relays.answered(answer)
    return await answering, sent


def test_a_thread_stack_answer_with_the_nonce_becomes_the_running_infos_jstack() -> None:
    response, sent = asyncio.run(relay_with(lambda nonce: spb.TelemetryCommand(
        status=pb.Status(code=Code.OK), thread_stack_trace=spb.ThreadStackTrace(nonce=nonce, thread_stack_trace="T1"))))
    assert sent.WhichOneof("command") == "print_thread_stack_trace_command"
    body = orjson.loads(response.body)
    assert (response.code, response.opaque, body["jstack"]) == (ResponseCode.SUCCESS, 5, "T1")
    assert body["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert body["subscriptionSet"][0]["tagsSet"] == ["a", "b"]


def test_no_answer_in_time_is_system_busy_and_a_late_or_foreign_answer_is_dropped() -> None:
    response, _ = asyncio.run(relay_with(lambda nonce: None))
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_BUSY, "call remote timeout")
    relays = Relays(clients.ClientTable(), TIMEOUT_S)
    assert not relays.answered(spb.TelemetryCommand(thread_stack_trace=spb.ThreadStackTrace(nonce="0")))
    assert not relays.answered(spb.TelemetryCommand(settings=pb.Settings()))


@pytest.mark.parametrize(("code", "expected"), [(Code.VERIFY_FIFO_MESSAGE_UNSUPPORTED, ResponseCode.NO_PERMISSION),
                                                (Code.INTERNAL_SERVER_ERROR, ResponseCode.SYSTEM_ERROR)])
def test_a_failed_answer_maps_as_rocketmqs_proxy_maps_it(code: Any, expected: int) -> None:
    response, _ = asyncio.run(relay_with(lambda nonce: spb.TelemetryCommand(
        status=pb.Status(code=code), thread_stack_trace=spb.ThreadStackTrace(nonce=nonce))))
    assert response.code == expected


def test_without_jstack_the_answer_comes_from_the_settings_and_an_unknown_client_is_an_error() -> None:
    async def run() -> tuple[RemotingCommand, RemotingCommand]:
        table = clients.ClientTable()
        table.register("c1", consumer_settings(pb.SIMPLE_CONSUMER), None)
        relays = Relays(table, TIMEOUT_S)
        return (await relays.running_info(None, ask(False)),  # type: ignore[arg-type]
                await relays.running_info(None, ask(True, client_id="c9")))  # type: ignore[arg-type]
    known, unknown = asyncio.run(run())
    props = orjson.loads(known.body)["properties"]
    assert known.code == ResponseCode.SUCCESS and "jstack" not in orjson.loads(known.body)
    assert (props["PROP_CONSUME_TYPE"], props["PROP_CLIENT_LANGUAGE"], props["PROP_CLIENT_VERSION"]) == (
        "CONSUME_ACTIVELY", "PYTHON", "5.1.2")
    assert unknown.code == ResponseCode.SYSTEM_ERROR


def test_the_heartbeat_sent_for_a_consumer_and_a_producer() -> None:
    body, topics, group = registrations.heartbeat_of("c1", consumer_settings())
    data = heartbeat.decode(body)
    assert (data.client_id, topics, group) == ("c1", ["t"], "g")
    [consumer] = data.consumers
    assert (consumer.group_name, consumer.consume_type, consumer.message_model) == (
        "g", ConsumeType.CONSUME_PASSIVELY.value, "CLUSTERING")
    assert [s.sub_string for s in consumer.subscriptions] == ["a||b"]

    producer = pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name="t1"),
                                                                                    pb.Resource(name="t2")]))
    body, topics, group = registrations.heartbeat_of("p1", producer)
    assert (heartbeat.decode(body).producer_groups, topics, group) == (("t1", "t2"), ["t1", "t2"], None)


@pytest.mark.parametrize(("language", "code"), [("PYTHON", "PYTHON"), ("java", "JAVA"), ("GOLANG", "GO"),
                                                ("DOT_NET", "DOTNET"), ("OBJECTIVE_C", "OTHER"), ("", "OTHER")])
def test_the_language_brokers_list(language: str, code: str) -> None:
    assert registrations.remoting_language(language) == code


def test_a_client_silent_for_channel_expired_timeout_is_expired() -> None:
    async def run() -> list[list[str]]:
        now = [100.0]

        async def no_brokers(topic: str, masters_only: bool) -> list[str]:
            return []
        registrar = registrations.Registrar(no_brokers, {}, expire_ms=120_000, clock=lambda: now[0])
        caller = clients.Caller("c1", "", "PYTHON", "5.1.2")
        registrar.seen(caller, clients.Client(consumer_settings()))
        seen = []
        for t in (219.0, 221.0):
            now[0] = t
            seen.append(registrar.expired())
        await registrar.close()
        return seen
    assert asyncio.run(run()) == [[], ["c1"]]


@pytest.mark.parametrize(("code", "result"), [(Code.OK, "CR_SUCCESS"), (Code.FAILED_TO_CONSUME_MESSAGE, "CR_LATER"),
                                              (Code.MESSAGE_CORRUPTED, "CR_RETURN_NULL"), (Code.BAD_REQUEST, None)])
def test_a_message_to_verify_goes_to_the_client_and_its_status_becomes_the_consume_result(
        code: Any, result: str | None) -> None:
    async def run() -> tuple[RemotingCommand, spb.TelemetryCommand]:
        table = clients.ClientTable()
        stream: clients.Outgoing = asyncio.Queue(8)
        table.register("c1", consumer_settings(), stream)
        relays = Relays(table, TIMEOUT_S)
        record = storedrecords.encode_stored_record(topic="t", queue_id=1, body=b"payload",
                                                    properties={"UNIQ_KEY": "ABC"})
        header = ConsumeMessageDirectlyResultRequestHeader(consumer_group="g", client_id="c1", msg_id="00")
        request = RemotingCommand(RequestCode.CONSUME_MESSAGE_DIRECTLY, ext_fields=header.to_ext(), body=record)
        handler = relays.handlers()[RequestCode.CONSUME_MESSAGE_DIRECTLY]
        answering = asyncio.ensure_future(handler(None, request))  # type: ignore[arg-type]
        sent = await stream.get()
        assert sent is not None
        nonce = sent.verify_message_command.nonce
        assert relays.answered(spb.TelemetryCommand(status=pb.Status(code=code),
                                                    verify_message_result=spb.VerifyMessageResult(nonce=nonce)))
        return await answering, sent
    response, sent = asyncio.run(run())
    message = sent.verify_message_command.message
    assert (message.body, message.topic.name, message.system_properties.message_id) == (b"payload", "t", "ABC")
    assert response.code == ResponseCode.SUCCESS
    assert orjson.loads(response.body) == {"order": False, "autoCommit": True, "consumeResult": result,
                                           "remark": "from gRPC client", "spentTimeMills": 0}


def test_the_sweep_unregisters_a_silent_client_and_lets_its_messages_go() -> None:
    async def run() -> tuple[list[str], bool]:
        async def no_brokers(topic: str, masters_only: bool) -> list[str]:
            return []
        gone: list[str] = []
        registrar = registrations.Registrar(no_brokers, {}, expire_ms=100, on_gone=gone.append)
        registrar.start()
        registrar.seen(clients.Caller("c1", "", "PYTHON", "5.1.2"), clients.Client(consumer_settings()))
        for _ in range(200):  # the sweep runs every 50 ms here
            if gone:
                break
            await asyncio.sleep(0.05)
        still = registrar.is_registered("c1")
        await registrar.close()
        return gone, still
    assert asyncio.run(run()) == (["c1"], False)

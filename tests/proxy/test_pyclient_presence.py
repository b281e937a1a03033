"""v2 clients at the brokers (registration, relayed thread stacks) and auto-renew, with the
official Python client against real namesrv, broker and proxy processes."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from proxycluster import ProxyCluster, wait_until
from test_pyclient import consumer_of, receive_id

from rocketq.admin import clientstatus, messages
from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.cli import admin as admin_command
from rocketq.protocol import headers, msgid
from rocketq.protocol.codes import RequestCode, ResponseCode

ADMIN_TIMEOUT_S = 15.0
"""Above the proxy's relay timeout (2 s in these tests), so the broker's answer is what the admin sees."""


def admin_call(cluster: ProxyCluster, work: Any) -> Any:
    async def run() -> Any:
        async with AdminClient(cluster.namesrv.address, timeout=ADMIN_TIMEOUT_S) as admin:
            return await work(admin)
    return asyncio.run(run())


def admin_cli(cluster: ProxyCluster, command: str, *args: str) -> str:
    """``rocketq admin COMMAND`` in this process; its output (exit 0 required)."""
    result = CliRunner().invoke(admin_command.command, [command, "-n", cluster.namesrv.address, *args])
    assert result.exit_code == 0, result.output
    return result.output


def connections(cluster: ProxyCluster, group: str) -> dict[str, str] | None:
    """client id → language of the group's online consumers; None when the group is not online."""
    try:
        conn = admin_call(cluster, lambda admin: cluster_ops.consumer_connection(admin, group))
    except AdminError as exc:
        if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return None
        raise
    return {c.client_id: c.language for c in conn.connections}


def listed(cluster: ProxyCluster, group: str, client_id: str) -> bool:
    return client_id in (connections(cluster, group) or {})


def test_grpc_clients_are_listed_by_the_brokers_until_they_terminate(proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcPresence"])
    sent = producer.call("send", topic="GrpcPresence", body="here")["id"]
    consumer = consumer_of(proxy_cluster, "grpc-presence", "GrpcPresence")
    consumer_id = consumer.call("client_ids")["consumer"]
    producer_id = producer.call("client_ids")["producer"]

    wait_until(lambda: listed(proxy_cluster, "grpc-presence", consumer_id))
    assert connections(proxy_cluster, "grpc-presence") == {consumer_id: "PYTHON"}
    # a producer's group is its topic, as RocketMQ's proxy registers it
    producers = admin_call(proxy_cluster, lambda admin: clientstatus.producer_connection(
        admin, "GrpcPresence", "GrpcPresence"))
    assert [(p.client_id, p.language) for p in producers] == [(producer_id, "PYTHON")]

    async def consumer_ids(admin: AdminClient) -> list[str]:
        response = await admin.call(proxy_cluster.broker.address, RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                    headers.ConsumerGroupHeader(consumer_group="grpc-presence"))
        return list(orjson.loads(response.body)["consumerIdList"])
    assert admin_call(proxy_cluster, consumer_ids) == [consumer_id]

    receive_id(consumer, sent, invisible_s=30)
    progress = admin_call(proxy_cluster, lambda admin: cluster_ops.consumer_progress(admin, "grpc-presence"))
    assert progress.topics() == ["GrpcPresence"] and progress.total_diff == 0

    consumer.call("close")  # NotifyClientTermination: unregistered at once
    wait_until(lambda: connections(proxy_cluster, "grpc-presence") is None, timeout=30)


def test_a_thread_stack_request_is_relayed_to_the_client_and_answered(proxy_cluster: ProxyCluster) -> None:
    answering = proxy_cluster.client(answer_stacks=True)
    answering.call("consumer", group="grpc-stacks", topic="GrpcPresence", await_s=5)
    client_id = answering.call("client_ids")["consumer"]
    wait_until(lambda: listed(proxy_cluster, "grpc-stacks", client_id))

    info = admin_call(proxy_cluster, lambda admin: clientstatus.consumer_running_info(
        admin, "grpc-stacks", client_id, jstack=True))
    assert info.jstack is not None and "Thread MainThread" in info.jstack
    assert info.properties["PROP_CLIENT_LANGUAGE"] == "PYTHON"
    assert info.subscriptions == (("GrpcPresence", "*"),)
    printed = admin_cli(proxy_cluster, "consumerStatus", "-g", "grpc-stacks", "-i", client_id, "-s")
    assert "#Consumer jstack#" in printed and "Thread MainThread" in printed


def test_a_message_verified_by_a_grpc_consumer_through_query_msg_by_id(proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcPresence"])
    sent = producer.call("send", topic="GrpcPresence", body="verify me")["id"]
    answering = proxy_cluster.client(answer_stacks=True)
    answering.call("consumer", group="grpc-verify", topic="GrpcPresence", await_s=5)
    client_id = answering.call("client_ids")["consumer"]
    wait_until(lambda: listed(proxy_cluster, "grpc-verify", client_id))

    async def verify(admin: AdminClient) -> clientstatus.DirectResult:
        [stored] = await messages.query_by_unique_key(admin, "GrpcPresence", sent)
        offset_id = msgid.create_offset_msg_id(stored.store_host, stored.commit_log_offset)
        return await clientstatus.consume_message_directly(admin, "grpc-verify", client_id, offset_id)
    result = admin_call(proxy_cluster, verify)
    assert (result.consume_result, result.remark) == ("CR_SUCCESS", "from gRPC client")
    [stored] = admin_call(proxy_cluster, lambda admin: messages.query_by_unique_key(admin, "GrpcPresence", sent))
    offset_id = msgid.create_offset_msg_id(stored.store_host, stored.commit_log_offset)
    printed = admin_cli(proxy_cluster, "queryMsgById", "-i", offset_id, "-g", "grpc-verify", "-d", client_id)
    assert "CR_SUCCESS" in printed and "from gRPC client" in printed


def test_a_client_that_does_not_answer_gets_the_broker_a_timeout(proxy_cluster: ProxyCluster) -> None:
    silent = proxy_cluster.client()  # 5.1.2 as shipped: it ignores print_thread_stack_trace_command
    silent.call("consumer", group="grpc-stacks-silent", topic="GrpcPresence", await_s=5)
    client_id = silent.call("client_ids")["consumer"]
    wait_until(lambda: listed(proxy_cluster, "grpc-stacks-silent", client_id))
    with pytest.raises(AdminError) as raised:
        admin_call(proxy_cluster, lambda admin: clientstatus.consumer_running_info(
            admin, "grpc-stacks-silent", client_id, jstack=True))
    assert (raised.value.code, raised.value.remark) == (ResponseCode.SYSTEM_BUSY, "call remote timeout")
    # without thread stacks the proxy answers from the client's settings
    info = admin_call(proxy_cluster, lambda admin: clientstatus.consumer_running_info(
        admin, "grpc-stacks-silent", client_id))
    assert info.jstack is None and info.properties["PROP_CONSUME_TYPE"] == "CONSUME_ACTIVELY"


def deliveries(pusher: Any, body: str) -> tuple[list[int], list[int]]:
    """(attempts started, attempts finished) of one body by a push consumer's listener."""
    got = pusher.call("pushed")
    return ([a for b, a in got["started"] if b == body], [a for b, a in got["messages"] if b == body])


def test_a_push_consumer_holding_a_message_past_its_invisible_time_does_not_get_it_again(
        proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcRenew"])
    producer.call("send", topic="GrpcRenew", body="held")
    pusher = proxy_cluster.client()
    # the proxy pops for 4 s (defaultInvisibleTimeMills in these tests); the listener takes 9
    pusher.call("push", group="grpc-renew", topic="GrpcRenew", hold_s=9)
    wait_until(lambda: deliveries(pusher, "held")[1], timeout=90)
    time.sleep(3)  # an un-renewed message would be back by now (4 s + revive), and started again
    assert deliveries(pusher, "held") == ([1], [1])


def test_the_messages_of_a_push_consumer_that_dies_are_visible_again_about_a_second_later(
        proxy_cluster: ProxyCluster) -> None:
    producer = proxy_cluster.client()
    producer.call("producer", topics=["GrpcRenew"])
    sent = producer.call("send", topic="GrpcRenew", body="orphan")["id"]
    pusher = proxy_cluster.client()
    pusher.call("push", group="grpc-orphan", topic="GrpcRenew", hold_s=600)
    pusher_id = pusher.call("client_ids")["pusher"]
    wait_until(lambda: deliveries(pusher, "orphan")[0], timeout=90)
    assert listed(proxy_cluster, "grpc-orphan", pusher_id)
    time.sleep(3)  # renewed by now: invisible for another minute
    pusher.kill()
    killed = time.monotonic()
    consumer = consumer_of(proxy_cluster, "grpc-orphan", "GrpcRenew")
    again = receive_id(consumer, sent, invisible_s=30)
    # the proxy set it to 1 s when the client's stream broke; without that it would take a minute.
    # Attempt 2 or 3: the dead client's long poll, still at the broker, may take it once more (and
    # the proxy gives that delivery back at once too)
    assert again["attempt"] in (2, 3) and time.monotonic() - killed < 40
    assert not listed(proxy_cluster, "grpc-orphan", pusher_id)  # its stream ended: unregistered

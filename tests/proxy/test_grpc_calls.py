"""v2 calls made directly with grpc.aio and rocketq's stubs: the checks and answers the official
client never provokes (missing client id, unknown settings, bad durations, stale handles, the
receive stream's shape)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import duration_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from proxycluster import ProxyCluster

from rocketq.proxy.status import Code
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.proxy.v2 import service_pb2_grpc as grpc_v2

ID = (("x-mq-client-id", "direct-test@1"),)


@pytest.fixture
async def stub(proxy_cluster: ProxyCluster) -> AsyncIterator[grpc_v2.MessagingServiceStub]:
    async with grpc.aio.insecure_channel(proxy_cluster.endpoint) as channel:
        yield grpc_v2.MessagingServiceStub(channel)


def seconds(n: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMilliseconds(int(n * 1000))
    return d


def queue(topic: str = "GrpcNormal") -> pb.MessageQueue:
    return pb.MessageQueue(topic=pb.Resource(name=topic), id=0, broker=pb.Broker(name="broker-a"))


async def test_the_port_answers_grpc_health_checks_as_kubernetes_probes_ask(proxy_cluster: ProxyCluster) -> None:
    async with grpc.aio.insecure_channel(proxy_cluster.endpoint) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "apache.rocketmq.v2.MessagingService"):  # a probe without `service` asks for ""
            answer = await health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING, service
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


async def test_calls_without_a_client_id_are_refused_in_band(stub: grpc_v2.MessagingServiceStub) -> None:
    answer = await stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="GrpcNormal")))
    assert answer.status.code == Code.CLIENT_ID_REQUIRED


async def test_routes_name_the_proxy_and_unknown_topics_are_not_found(
        stub: grpc_v2.MessagingServiceStub, proxy_cluster: ProxyCluster) -> None:
    host, port = proxy_cluster.endpoint.rsplit(":", 1)
    dialled = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))])
    answer = await stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="GrpcNormal"), endpoints=dialled),
                                   metadata=ID)
    assert answer.status.code == Code.OK and len(answer.message_queues) == 4
    assert {q.broker.endpoints.addresses[0].port for q in answer.message_queues} == {int(port)}
    assert all(q.permission == pb.READ_WRITE and q.broker.id == 0 for q in answer.message_queues)
    missing = await stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopic")), metadata=ID)
    assert missing.status.code == Code.TOPIC_NOT_FOUND


async def test_heartbeat_needs_settings_first(stub: grpc_v2.MessagingServiceStub) -> None:
    answer = await stub.Heartbeat(spb.HeartbeatRequest(client_type=pb.PRODUCER),
                                  metadata=(("x-mq-client-id", "never-sent-settings"),))
    assert answer.status.code == Code.UNRECOGNIZED_CLIENT_TYPE


async def test_telemetry_answers_settings_with_status_ok_and_max_body_size(stub: grpc_v2.MessagingServiceStub) -> None:
    settings = pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name="GrpcNormal")]))
    call = stub.Telemetry(metadata=ID)
    await call.write(spb.TelemetryCommand(settings=settings))
    reply = await call.read()
    await call.done_writing()
    assert reply.status.code == Code.OK and reply.settings.publishing.max_body_size == 4 * 1024 * 1024
    beat = await stub.Heartbeat(spb.HeartbeatRequest(client_type=pb.PRODUCER), metadata=ID)
    assert beat.status.code == Code.OK


async def receive(stub: grpc_v2.MessagingServiceStub, **fields: object) -> list[spb.ReceiveMessageResponse]:
    request = spb.ReceiveMessageRequest(group=pb.Resource(name="direct-cg"), message_queue=queue(), batch_size=4,
                                        **fields)
    return [r async for r in stub.ReceiveMessage(request, metadata=ID, timeout=30)]


async def test_an_empty_receive_is_not_found_then_a_delivery_timestamp(stub: grpc_v2.MessagingServiceStub) -> None:
    answers = await receive(stub, invisible_duration=seconds(15), long_polling_timeout=seconds(5))
    kinds = [a.WhichOneof("content") for a in answers]
    assert kinds[0] == "status" and kinds[-1] == "delivery_timestamp"
    # the topic may hold other tests' messages; an empty topic answers MESSAGE_NOT_FOUND
    assert answers[0].status.code in (Code.OK, Code.MESSAGE_NOT_FOUND)


async def test_invisible_times_outside_the_bounds_are_refused(stub: grpc_v2.MessagingServiceStub) -> None:
    answers = await receive(stub, invisible_duration=seconds(1), long_polling_timeout=seconds(5))
    assert answers[0].status.code == Code.ILLEGAL_INVISIBLE_TIME
    assert answers[-1].WhichOneof("content") == "delivery_timestamp"


async def test_a_filter_that_does_not_parse_is_an_illegal_filter_expression(
        stub: grpc_v2.MessagingServiceStub) -> None:
    answers = await receive(stub, invisible_duration=seconds(15), long_polling_timeout=seconds(5),
                            filter_expression=pb.FilterExpression(type=pb.SQL, expression="a >"))
    assert answers[0].status.code == Code.ILLEGAL_FILTER_EXPRESSION


async def test_stale_and_garbage_receipt_handles_are_invalid(stub: grpc_v2.MessagingServiceStub) -> None:
    stale = "0 1000 10000 0 0 broker-a 0 0 123"  # popped in 1970, invisible for 10 s
    entries = [spb.AckMessageEntry(message_id="01AB", receipt_handle=h) for h in (stale, "garbage")]
    answer = await stub.AckMessage(spb.AckMessageRequest(group=pb.Resource(name="direct-cg"),
                                                         topic=pb.Resource(name="GrpcNormal"), entries=entries),
                                   metadata=ID)
    assert [e.status.code for e in answer.entries] == [Code.INVALID_RECEIPT_HANDLE] * 2
    assert answer.status.code == Code.INVALID_RECEIPT_HANDLE
    changed = await stub.ChangeInvisibleDuration(spb.ChangeInvisibleDurationRequest(
        group=pb.Resource(name="direct-cg"), topic=pb.Resource(name="GrpcNormal"), receipt_handle=stale,
        invisible_duration=seconds(10), message_id="01AB"), metadata=ID)
    assert changed.status.code == Code.INVALID_RECEIPT_HANDLE


async def test_end_transaction_needs_an_id_and_a_known_transaction(stub: grpc_v2.MessagingServiceStub) -> None:
    blank = await stub.EndTransaction(spb.EndTransactionRequest(topic=pb.Resource(name="GrpcTx"), transaction_id=" ",
                                                                resolution=pb.COMMIT), metadata=ID)
    assert blank.status.code == Code.INVALID_TRANSACTION_ID
    unknown = await stub.EndTransaction(spb.EndTransactionRequest(topic=pb.Resource(name="GrpcTx"),
                                                                  transaction_id="01NOPE", resolution=pb.COMMIT),
                                        metadata=ID)
    assert unknown.status.code == Code.INTERNAL_SERVER_ERROR


async def test_calls_rocketmq_does_not_implement_are_grpc_unimplemented(stub: grpc_v2.MessagingServiceStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.RecallMessage(spb.RecallMessageRequest(topic=pb.Resource(name="GrpcNormal")), metadata=ID)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED

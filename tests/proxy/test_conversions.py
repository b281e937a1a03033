"""Pure pieces of the gRPC proxy: message conversion and its checks, receipt handles, queue choice,
delay levels, settings, statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.queues import MessageQueue
from rocketq.protocol import messageproperties as mp
from rocketq.protocol.messagetypes import MessageExt
from rocketq.protocol.popinfo import ExtraInfo, TopicType
from rocketq.proxy import clients, convert, delays, routing, status
from rocketq.proxy import settings as proxy_settings
from rocketq.proxy.receipts import ReceiptHandle
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb
from rocketq.settings import SettingsError

NOW = 1_700_000_000_000
LEVELS = (1000, 5000, 10_000, 30_000)


def v2(body: bytes = b"hi", **system: object) -> pb.Message:
    sp = pb.SystemProperties(message_id="01ABC", **system)
    return pb.Message(topic=pb.Resource(name="T"), body=body, system_properties=sp)


def convert_in(msg: pb.Message) -> dict[str, str]:
    return convert.to_remoting(msg, max_body_size=100, max_delay_ms=86_400_000, delay_levels_ms=LEVELS,
                               now_ms=NOW).properties


def code_of(msg: pb.Message) -> int:
    with pytest.raises(ProxyError) as err:
        convert_in(msg)
    return err.value.code


def test_system_properties_become_remoting_properties() -> None:
    msg = v2(tag="TagA", keys=["k1", "k2"], message_group="g1", born_host="10.0.0.1")
    msg.user_properties["color"] = "red"
    props = convert_in(msg)
    assert props[mp.UNIQ_KEY] == "01ABC" and props[mp.TAGS] == "TagA" and props[mp.KEYS] == "k1 k2"
    assert props[mp.SHARDING_KEY] == "g1" and props["color"] == "red" and props["__BORNHOST"] == "10.0.0.1"


def test_a_delivery_timestamp_becomes_the_first_level_not_shorter_and_keeps_timer_deliver_ms() -> None:
    msg = v2(message_type=pb.DELAY)
    msg.system_properties.delivery_timestamp.FromMilliseconds(NOW + 7000)
    props = convert_in(msg)
    assert props[mp.DELAY] == "3" and props[convert.TIMER_DELIVER_MS] == str(NOW + 7000)


def test_transactions_are_marked_half_messages() -> None:
    assert convert_in(v2(message_type=pb.TRANSACTION))[mp.TRAN_MSG] == "true"


@pytest.mark.parametrize(("msg", "code"), [
    (v2(body=b""), Code.MESSAGE_BODY_EMPTY),
    (v2(body=b"x" * 101), Code.MESSAGE_BODY_TOO_LARGE),
    (v2(tag="a|b"), Code.ILLEGAL_MESSAGE_TAG),
    (v2(tag=" "), Code.ILLEGAL_MESSAGE_TAG),
    (v2(message_group="g" * 65), Code.ILLEGAL_MESSAGE_GROUP),
    (pb.Message(topic=pb.Resource(name="T"), body=b"x"), Code.ILLEGAL_MESSAGE_ID),
    (pb.Message(topic=pb.Resource(name="bad topic"), body=b"x"), Code.ILLEGAL_TOPIC),
    (pb.Message(topic=pb.Resource(name="rmq_sys_x"), body=b"x"), Code.ILLEGAL_TOPIC),
])
def test_bad_messages_get_the_proxys_codes(msg: pb.Message, code: int) -> None:
    assert code_of(msg) == code


def test_reserved_property_keys_and_far_delivery_times_are_refused() -> None:
    msg = v2()
    msg.user_properties[mp.UNIQ_KEY] = "x"
    assert code_of(msg) == Code.ILLEGAL_MESSAGE_PROPERTY_KEY
    far = v2()
    far.system_properties.delivery_timestamp.FromMilliseconds(NOW + 86_400_000 + 1)
    assert code_of(far) == Code.ILLEGAL_DELIVERY_TIME
    in_seconds_field = v2()  # milliseconds put into `seconds`: beyond protobuf's Timestamp range
    in_seconds_field.system_properties.delivery_timestamp.seconds = NOW
    assert code_of(in_seconds_field) == Code.ILLEGAL_DELIVERY_TIME


def stored(props: dict[str, str], body: bytes = b"body") -> MessageExt:
    return MessageExt(0, 0, 0, 2, 0, 7, 1234, 0, NOW, ("10.0.0.1", 5), NOW + 1, ("10.0.0.2", 10911), 1, 0, body,
                      "T", props, "OFFSETID")


def test_stored_messages_convert_with_md5_digest_identity_encoding_and_attempt() -> None:
    out = convert.to_v2(stored({mp.UNIQ_KEY: "01X", mp.TAGS: "t", mp.SHARDING_KEY: "g", "u": "v"}),
                        topic="T", receipt_handle="h")
    sp = out.system_properties
    assert sp.message_id == "01X" and sp.tag == "t" and sp.message_group == "g" and sp.message_type == pb.FIFO
    assert sp.body_digest.checksum == "841A2D689AD86BD1611447453C22C6FC" and sp.body_encoding == pb.IDENTITY
    assert sp.delivery_attempt == 2 and sp.receipt_handle == "h" and sp.queue_offset == 7
    assert dict(out.user_properties) == {"u": "v"}


@given(st.integers(0, 2**40), st.integers(0, 2**40), st.integers(1, 2**31), st.integers(0, 998),
       st.sampled_from(list(TopicType)), st.integers(0, 1000), st.integers(0, 2**40), st.integers(0, 2**50))
def test_receipt_handles_round_trip(so: int, pt: int, it: int, rq: int, kind: TopicType, qid: int, qo: int,
                                    clo: int) -> None:
    extra = ExtraInfo(so, pt, it, rq, kind, "broker-a", qid, qo)
    handle = ReceiptHandle.parse(f"{extra.build()} {clo}")
    assert handle == ReceiptHandle(extra, clo)


@given(st.text(max_size=60))
def test_garbage_handles_are_invalid_receipt_handles_never_crashes(text: str) -> None:
    try:
        ReceiptHandle.parse(text)
    except ProxyError as exc:
        assert exc.code == Code.INVALID_RECEIPT_HANDLE


def test_expired_handles_are_refused() -> None:
    handle = ReceiptHandle(ExtraInfo(0, NOW, 1000, 0, TopicType.NORMAL, "b", 0, 0), 1)
    handle.check_alive(NOW + 999)
    with pytest.raises(ProxyError, match="expired"):
        handle.check_alive(NOW + 1000)


def test_consistent_hash_matches_guavas_golden_values() -> None:
    # Guava's HashingTest golden values for Hashing.consistentHash
    assert [routing.consistent_hash(i, 100) for i in range(20)] == [
        0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83]
    assert routing.consistent_hash(10863919174838991, 11) == 6
    assert routing.consistent_hash(2201, 100001) == 22152


@given(st.text(min_size=1, max_size=30), st.integers(1, 64))
def test_a_message_group_always_maps_to_the_same_queue(group: str, n: int) -> None:
    queues = [MessageQueue("T", "b", i) for i in range(n)]
    assert routing.group_queue(group, queues) is routing.group_queue(group, queues)


@pytest.mark.parametrize(("delay", "level"), [(-5, 0), (0, 0), (1, 1), (1000, 1), (1001, 2), (29_000, 4), (10**9, 4)])
def test_delay_levels_are_never_early_and_clamp_to_the_last(delay: int, level: int) -> None:
    assert delays.level_for(delay, LEVELS) == level


def test_rmq_proxy_json_is_read_with_rocketmqs_keys(tmp_path: Path) -> None:
    conf = tmp_path / "rmq-proxy.json"
    conf.write_text(json.dumps({"rocketMQClusterName": "C1", "grpcServerPort": 9081, "namesrvAddr": "127.0.0.1:9876",
                                "enableTopicMessageTypeCheck": False, "remotingListenPort": 8080}))
    settings, _acl, unknown = proxy_settings.load(proxy_settings.read_json(conf))
    assert (settings.rocketmq_cluster_name, settings.grpc_server_port) == ("C1", 9081)
    assert settings.enable_topic_message_type_check is False and unknown == ["remotingListenPort"]


@pytest.mark.parametrize("values", [{"grpcServerPort": "70000", "namesrvAddr": "h:1"}, {"namesrvAddr": ""},
                                    {"namesrvAddr": "nohostport"}, {"namesrvAddr": "h:1", "proxyMode": "ELSEWHERE"}])
def test_bad_settings_stop_at_start(values: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        proxy_settings.load(values, {})


def test_settings_replies_carry_what_the_clients_need() -> None:
    producer = clients.merged_settings(pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing()),
                                       max_body_size=4 << 20, validate_type=True)
    assert producer.publishing.max_body_size == 4 << 20 and producer.backoff_policy.max_attempts == 3
    consumer = clients.merged_settings(pb.Settings(subscription=pb.Subscription()), max_body_size=1,
                                       validate_type=True)
    assert consumer.subscription.long_polling_timeout.seconds == 20 and consumer.backoff_policy.max_attempts == 17
    with pytest.raises(ProxyError):
        clients.merged_settings(pb.Settings(), max_body_size=1, validate_type=True)


def test_metadata_needs_a_client_id() -> None:
    with pytest.raises(ProxyError) as err:
        clients.caller([("x-mq-language", "PYTHON")])
    assert err.value.code == Code.CLIENT_ID_REQUIRED
    assert clients.caller([("x-mq-client-id", "c1"), ("x-mq-namespace", "ns")]).namespace == "ns"


def test_the_shared_ok_status_cannot_be_changed_through_a_response() -> None:
    entry = spb.SendResultEntry(status=status.ok())
    entry.status.message = "changed"
    assert status.ok().message == "OK" and status.ok().code == Code.OK


def test_combined_status_is_the_single_code_or_multiple_results() -> None:
    assert status.combined([status.ok(), status.ok()]).code == Code.OK
    assert status.combined([status.ok(), status.of(Code.FORBIDDEN, "x")]).code == Code.MULTIPLE_RESULTS


@pytest.mark.parametrize(("kind", "text"), [(pb.SQL, "a >"), (pb.SQL, "color = 'red' AND"), (pb.SQL, "(n = 1")])
def test_filters_that_do_not_parse_are_illegal_filter_expressions(kind: int, text: str) -> None:
    with pytest.raises(ProxyError) as err:
        convert.check_filter("T", pb.FilterExpression(type=kind, expression=text))
    assert err.value.code == Code.ILLEGAL_FILTER_EXPRESSION


def test_good_filters_pass_with_their_remoting_type() -> None:
    assert convert.check_filter("T", pb.FilterExpression(type=pb.TAG, expression="a || b")) == ("a || b", "TAG")
    assert convert.check_filter("T", pb.FilterExpression(type=pb.SQL, expression="n > 3")) == ("n > 3", "SQL92")
    assert convert.check_filter("T", pb.FilterExpression()) == ("*", "TAG")

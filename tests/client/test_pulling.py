"""Pull request flags and headers; decoding pull answers, client-side tag filtering."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import pulling
from rocketq.client.errors import ProtocolError
from rocketq.client.pulling import PullStatus
from rocketq.client.queues import MessageQueue
from rocketq.client.wire import PullReply
from rocketq.protocol import storedrecords, subscription
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import RESPONSE_FLAG, RemotingCommand
from rocketq.protocol.headers import PullMessageResponseHeader

MQ = MessageQueue("T", "broker-a", 1)


def record(offset: int, tags: str | None, body: bytes = b"b") -> bytes:
    props = {"TAGS": tags} if tags else {}
    return storedrecords.encode_stored_record(topic="T", queue_id=1, body=body, properties=props, queue_offset=offset,
                                        physical_offset=offset * 100)


def reply(code: ResponseCode, body: bytes = b"", next_offset: int = 5) -> PullReply:
    header = PullMessageResponseHeader(suggest_which_broker_id=1, next_begin_offset=next_offset, min_offset=0,
                                       max_offset=9)
    return PullReply(code, header, body)


def test_sys_flag_bits_are_rocketmq_pull_sys_flag() -> None:
    assert pulling.sys_flag(commit_offset=True, suspend=True, subscription=True) == 7
    assert pulling.sys_flag(commit_offset=False, suspend=True, subscription=True) == 6
    assert pulling.sys_flag(commit_offset=False, suspend=False, subscription=True) == 4


def test_request_header_carries_subscription_and_suspend() -> None:
    sub = subscription.build("T", "A || B", sub_version=42)
    h = pulling.request_header("cg", MQ, 17, 32, sub, flag=7, commit_offset=12, suspend_timeout_ms=15000)
    ext = h.to_ext()
    assert ext["consumerGroup"] == "cg" and ext["queueId"] == "1" and ext["queueOffset"] == "17"
    assert ext["maxMsgNums"] == "32" and ext["sysFlag"] == "7" and ext["commitOffset"] == "12"
    assert ext["suspendTimeoutMillis"] == "15000" and ext["subscription"] == "A || B"
    assert ext["subVersion"] == "42" and ext["expressionType"] == "TAG"


@pytest.mark.parametrize("code, status", [
    (ResponseCode.PULL_NOT_FOUND, PullStatus.NO_NEW_MSG),
    (ResponseCode.PULL_RETRY_IMMEDIATELY, PullStatus.NO_MATCHED_MSG),
    (ResponseCode.PULL_OFFSET_MOVED, PullStatus.OFFSET_ILLEGAL),
])
def test_non_found_answers_map_to_statuses(code: ResponseCode, status: PullStatus) -> None:
    result = pulling.to_result(reply(code), subscription.build("T", "*"))
    assert result.status is status and result.next_begin_offset == 5 and result.messages == []
    assert (result.min_offset, result.max_offset, result.suggest_which_broker_id) == (0, 9, 1)


def test_found_decodes_records_and_rechecks_tags() -> None:
    body = record(2, "A") + record(3, "Collides") + record(4, None) + record(5, "B")
    result = pulling.to_result(reply(ResponseCode.SUCCESS, body, 6), subscription.build("T", "A || B"))
    assert result.status is PullStatus.FOUND and result.next_begin_offset == 6
    assert [(m.queue_offset, m.tags) for m in result.messages] == [(2, "A"), (5, "B")]
    assert result.messages[0].properties["MIN_OFFSET"] == "0" and result.messages[0].properties["MAX_OFFSET"] == "9"
    everything = pulling.to_result(reply(ResponseCode.SUCCESS, body, 6), subscription.build("T", "*"))
    assert len(everything.messages) == 4


def test_corrupt_or_trailing_bytes_are_protocol_errors() -> None:
    good = record(1, "A")
    bad = bytearray(good)
    bad[0:4] = (len(good) + 50).to_bytes(4, "big")
    with pytest.raises(ProtocolError):
        pulling.to_result(reply(ResponseCode.SUCCESS, bytes(bad)), subscription.build("T", "*"))
    with pytest.raises(ProtocolError, match="trailing"):
        pulling.to_result(reply(ResponseCode.SUCCESS, good + b"\x00\x01garbage"), subscription.build("T", "*"))


@given(st.binary(max_size=300))
def test_random_bodies_decode_or_raise_protocol_error(body: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        pulling.decode_messages(body)


_names = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
_subscriptions = st.one_of(
    st.just(subscription.build("T", "*")),
    st.builds(lambda tags, version: subscription.build("T", " || ".join(tags), sub_version=version),
              st.lists(st.text(alphabet="abcXYZ_", min_size=1, max_size=5), min_size=1, max_size=3),
              st.integers(0, 2**63 - 1)),
    st.builds(lambda expr: subscription.build("T", expr, "SQL92"), _names))


@given(_names, st.integers(0, 2**31 - 1), st.integers(1, 1024), _subscriptions, st.integers(0, 2**31 - 1),
       st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**31 - 1),
                          st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=4))
def test_kept_pull_fields_are_those_of_the_header(group: str, queue_id: int, max_nums: int,
                                                  sub: subscription.SubscriptionData, suspend_ms: int,
                                                  pulls: list[tuple[int, int, int]]) -> None:
    """Every pull of a PullRequests: the header's extFields, same names, values and order."""
    mq = MessageQueue("T", "broker-a", queue_id)
    requests = pulling.PullRequests(group, mq, max_nums, sub, suspend_ms)
    for offset, flag, commit in pulls:
        expected = pulling.request_header(group, mq, offset, max_nums, sub, flag=flag, commit_offset=commit,
                                          suspend_timeout_ms=suspend_ms).to_ext()
        assert list(requests.ext_fields(offset, flag, commit).items()) == list(expected.items())


def test_without_the_native_codecs_found_at_leaves_every_answer_to_the_general_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    frame = RemotingCommand(0, 3, RESPONSE_FLAG, None, {"suggestWhichBrokerId": "0", "nextBeginOffset": "1",
                                                        "minOffset": "0", "maxOffset": "1"}, record(0, None)).encode()
    monkeypatch.setattr(pulling, "_native", None)
    assert pulling.found_at(frame, 0, len(frame), subscription.build("T", "*")) is None

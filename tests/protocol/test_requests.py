"""The request builders and answer decoders the client SDK and the admin client share."""

from __future__ import annotations

import pytest

from rocketq.protocol import headers, messageerrors, pullsysflag, requests, storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.queues import MessageQueue
from rocketq.protocol.requests import PullStatus, SendStatus


def record(offset: int) -> bytes:
    return storedrecords.encode_stored_record(topic="T", queue_id=1, body=b"b", properties={}, queue_offset=offset,
                                        physical_offset=offset * 100)


def test_command_takes_a_typed_header_or_ready_ext_fields() -> None:
    typed = requests.command(RequestCode.GET_MAX_OFFSET, headers.TopicQueueRequestHeader(topic="T", queue_id=2))
    ready = requests.command(RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": "2"})
    assert typed.code == ready.code == RequestCode.GET_MAX_OFFSET
    assert typed.ext_fields == ready.ext_fields == {"topic": "T", "queueId": "2"}
    assert requests.command(RequestCode.HEART_BEAT, body=b"{}").ext_fields == {}


def test_statuses_are_named_as_rocketmq_and_cover_exactly_the_ok_codes() -> None:
    assert requests.SEND_STATUS_BY_CODE[ResponseCode.FLUSH_SLAVE_TIMEOUT] is SendStatus.FLUSH_SLAVE_TIMEOUT
    assert requests.PULL_STATUS_BY_CODE[ResponseCode.PULL_OFFSET_MOVED] is PullStatus.OFFSET_ILLEGAL
    assert ResponseCode.SYSTEM_BUSY not in requests.SEND_OK_CODES | requests.PULL_CODES


def test_pull_header_carries_queue_flags_and_subscription() -> None:
    flag = pullsysflag.build(commit_offset=False, suspend=False, subscription=True)
    h = requests.pull_header("g", MessageQueue("T", "b", 3), 17, 32, sys_flag=flag, subscription="A || B")
    assert (h.topic, h.queue_id, h.queue_offset, h.max_msg_nums) == ("T", 3, 17, 32)
    assert h.sys_flag == pullsysflag.SUBSCRIPTION
    assert (h.subscription, h.expression_type, h.commit_offset, h.suspend_timeout_millis) == ("A || B", "TAG", 0, 0)


def test_decode_records_reads_every_record_and_refuses_trailing_bytes() -> None:
    body = record(0) + record(1)
    assert [m.queue_offset for m in requests.decode_records(body)] == [0, 1]
    with pytest.raises(messageerrors.MessageFormatError, match="trailing"):
        requests.decode_records(body + b"\x00\x01junk")

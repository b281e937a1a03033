"""Message checks, unique keys, compression, batches, headers and result mapping."""

from __future__ import annotations

import zlib

import pytest

from rocketq.client import namechecks, sending
from rocketq.client.errors import ClientStateError, MessageError
from rocketq.client.messages import Message
from rocketq.client.queues import MessageQueue
from rocketq.client.sending import SendStatus
from rocketq.client.settings import ProducerSettings
from rocketq.client.wire import SendReply
from rocketq.protocol import batchbodies, headers, messageproperties, msgid
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import MessageSysFlag

SETTINGS = ProducerSettings(namesrv_addr="127.0.0.1:9876")
MQ = MessageQueue("T", "broker-a", 2)


def test_prepare_stamps_a_uniq_key_once_and_keeps_the_body() -> None:
    msg = Message("T", b"hello", tags="A", keys=["k1", "k2"])
    out = sending.prepare(msg, SETTINGS)
    assert msg.uniq_key == out.msg_id and len(out.msg_id) == 32
    msgid.decode_uniq_id(out.msg_id)
    assert out.body == b"hello" and out.sys_flag == 0
    assert messageproperties.decode_properties(out.properties) == {"TAGS": "A", "KEYS": "k1 k2", "UNIQ_KEY": out.msg_id}
    again = sending.prepare(msg, SETTINGS)
    assert again.msg_id == out.msg_id


def test_large_bodies_are_zlib_compressed_and_flagged() -> None:
    body = b"x" * SETTINGS.compress_msg_body_over_howmuch
    msg = Message("T", body)
    out = sending.prepare(msg, SETTINGS)
    assert out.sys_flag & MessageSysFlag.COMPRESSED
    assert zlib.decompress(out.body) == body and msg.body == body
    small = sending.prepare(Message("T", body[:-1]), SETTINGS)
    assert small.sys_flag == 0


@pytest.mark.parametrize("msg, match", [
    (Message("T", b""), "body length is zero"),
    (Message("T", b"x" * (4 * 1024 * 1024 + 1)), "over max value"),
    (Message("bad topic", b"x"), "illegal characters"),
    (Message("", b"x"), "blank"),
    (Message("T" * 128, b"x"), "max length"),
    (Message("TBW102", b"x"), "forbidden"),
    (Message("T", "text"), "must be bytes"),  # type: ignore[arg-type]
    (Message("T", b"x", properties={"a": "b\x01c"}), "\\\\x01"),
    (Message("T", b"x", properties={"a": "v" * 40000}), "exceed"),
])
def test_bad_messages_are_refused_before_sending(msg: Message, match: str) -> None:
    with pytest.raises(MessageError, match=match):
        sending.prepare(msg, SETTINGS)


def test_group_names_are_checked() -> None:
    assert namechecks.check_group("cg_1-%|x") == "cg_1-%|x"
    for bad in ("", "a b", "x" * 256):
        with pytest.raises(ClientStateError):
            namechecks.check_group(bad)


def test_batch_body_holds_every_message_with_its_own_uniq_key() -> None:
    msgs = [Message("T", f"m{i}".encode(), tags="A") for i in range(3)]
    out = sending.prepare_batch(msgs, SETTINGS)
    items = batchbodies.decode_batch_body(out.body)
    assert [i.body for i in items] == [b"m0", b"m1", b"m2"]
    assert out.msg_id == ",".join(i.properties["UNIQ_KEY"] for i in items)
    assert out.batch and messageproperties.decode_properties(out.properties) == {"WAIT": "true"}


@pytest.mark.parametrize("msgs, match", [
    ([], "at least one"),
    ([Message("T", b"a"), Message("U", b"b")], "same"),
    ([Message("T", b"a", delay_level=3)], "TimeDelayLevel"),
    ([Message("%RETRY%g", b"a")], "Retry Group"),
    ([Message("T", b"x" * 3_000_000), Message("T", b"y" * 3_000_000)], "max message size"),
])
def test_bad_batches_are_refused(msgs: list[Message], match: str) -> None:
    with pytest.raises(MessageError, match=match):
        sending.prepare_batch(msgs, SETTINGS)


def test_header_carries_rocketmq_defaults_and_v2_names() -> None:
    out = sending.prepare(Message("T", b"x"), SETTINGS)
    header = sending.header(out, "pg", MQ, SETTINGS)
    v2 = headers.send_header_to_v2(header)
    assert v2["a"] == "pg" and v2["b"] == "T" and v2["c"] == "TBW102" and v2["d"] == "4" and v2["e"] == "2"
    assert v2["j"] == "0" and v2["k"] == "false" and v2["m"] == "false" and int(v2["g"]) > 1_600_000_000_000


@pytest.mark.parametrize("code, status", [
    (ResponseCode.SUCCESS, SendStatus.SEND_OK),
    (ResponseCode.FLUSH_DISK_TIMEOUT, SendStatus.FLUSH_DISK_TIMEOUT),
    (ResponseCode.FLUSH_SLAVE_TIMEOUT, SendStatus.FLUSH_SLAVE_TIMEOUT),
    (ResponseCode.SLAVE_NOT_AVAILABLE, SendStatus.SLAVE_NOT_AVAILABLE),
])
def test_result_maps_status_and_takes_queue_from_the_answer(code: ResponseCode, status: SendStatus) -> None:
    out = sending.prepare(Message("T", b"x"), SETTINGS)
    reply = SendReply(code, headers.SendMessageResponseHeader(msg_id="AB" * 16, queue_id=3, queue_offset=77))
    result = sending.to_result(reply, out, MQ)
    assert result.status is status and result.msg_id == out.msg_id and result.offset_msg_id == "AB" * 16
    assert result.message_queue == MessageQueue("T", "broker-a", 3) and result.queue_offset == 77


def test_encoded_properties_equal_the_codec_after_stamping() -> None:
    msg = Message("T", b"x", tags="A", properties={"z": "1"})
    out = sending.prepare(msg, SETTINGS)
    assert out.properties == messageproperties.encode_properties(msg.properties)
    keyed = Message("T", b"x", properties={"UNIQ_KEY": "ABC", "k": "v"})
    assert sending.prepare(keyed, SETTINGS).properties == messageproperties.encode_properties(keyed.properties)


def test_a_refused_message_is_left_unchanged() -> None:
    msg = Message("T", b"x", properties={"a": "b\x02"})
    with pytest.raises(MessageError):
        sending.prepare(msg, SETTINGS)
    assert msg.uniq_key is None

"""What a send hands the store: the stored properties text and the hints that go with it.

The broker stores a producer's properties text as it came (plus CLUSTER) when that text is
canonical, and encodes the decoded map again otherwise; either way the result must be what
encoding the decoded map with CLUSTER added gives, and the TAGS code and index keys it passes
along must agree with that text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.send import BrokerAddress, SendHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import batchbodies, javahash, messageerrors, messageproperties, messagetypes
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.store.results import BatchPutRequest, PutRequest

CLUSTER = "BenchCluster"


class Peer:
    remote_addr = "10.1.2.3:4567"


async def _nothing() -> None:
    return None


def _handlers(tmp: Path) -> SendHandlers:
    return SendHandlers(None, TopicConfigManager(tmp / "topics.json"), BrokerBehaviour(),  # type: ignore[arg-type]
                        BrokerAddress(CLUSTER, "broker-a", "127.0.0.1", 10911, True), _nothing)


def _records(handlers: SendHandlers, properties: str | None, *, batch_of: list[Any] | None = None) -> Any:
    header = SendMessageRequestHeader(producer_group="pg", topic="T", properties=properties,
                                      batch=batch_of is not None, born_timestamp=5)
    if batch_of is None:
        request = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, body=b"body")
    else:
        body = batchbodies.encode_batch_body(batch_of)
        request = RemotingCommand(code=RequestCode.SEND_BATCH_MESSAGE, body=body)
    return handlers._records(request, header, 3, Peer())  # type: ignore[arg-type]


def _expected(text: str) -> str:
    """What the broker stored before it learnt to pass canonical text through."""
    props = messageproperties.decode_properties(text)
    props.setdefault(messageproperties.CLUSTER, CLUSTER)
    return messageproperties.encode_properties(props)


def _check_hints(record: PutRequest) -> None:
    stored = record.properties
    assert isinstance(stored, str)
    props = messageproperties.decode_properties(stored)
    assert record.tags_code == javahash.tag_hash(props.get(messageproperties.TAGS))
    assert record.index_keys == (props.get(messageproperties.UNIQ_KEY), props.get(messageproperties.KEYS))


@pytest.mark.parametrize("text, stored", [
    ("", f"CLUSTER\x01{CLUSTER}\x02"),
    ("TAGS\x01a\x02UNIQ_KEY\x01U1\x02", f"TAGS\x01a\x02UNIQ_KEY\x01U1\x02CLUSTER\x01{CLUSTER}\x02"),
    ("CLUSTER\x01Other\x02KEYS\x01k1 k2\x02", "CLUSTER\x01Other\x02KEYS\x01k1 k2\x02"),
    ("TAGS\x01a", f"TAGS\x01a\x02CLUSTER\x01{CLUSTER}\x02"),  # no final separator: encoded again
    ("TAGS\x01a\x02TAGS\x01b\x02", f"TAGS\x01b\x02CLUSTER\x01{CLUSTER}\x02"),  # repeated: the last wins
])
def test_stored_properties(tmp_path: Path, text: str, stored: str) -> None:
    (record,) = _records(_handlers(tmp_path), text)
    assert record.properties == stored
    assert record.born_host == ("10.1.2.3", 4567) and record.queue_id == 3 and record.born_timestamp == 5
    _check_hints(record)


def test_a_value_holding_the_name_separator_is_refused_as_before(tmp_path: Path) -> None:
    with pytest.raises(messageerrors.MessageIllegalError):
        _records(_handlers(tmp_path), "A\x01b\x01c\x02")


def test_batch_items_keep_their_own_properties(tmp_path: Path) -> None:
    msgs = [messagetypes.Message("T", b"one", properties={"TAGS": "x", "KEYS": "k"}),
            messagetypes.Message("T", b"two", 7, properties={"UNIQ_KEY": "U2"})]
    batch = _records(_handlers(tmp_path), None, batch_of=msgs)
    assert isinstance(batch, BatchPutRequest)
    assert (batch.topic, batch.queue_id, batch.born_host, batch.born_timestamp) == ("T", 3, ("10.1.2.3", 4567), 5)
    first, second = batch.messages
    assert first[:3] == (b"one", 0, f"TAGS\x01x\x02KEYS\x01k\x02CLUSTER\x01{CLUSTER}\x02")
    assert second[:2] == (b"two", 7) and second[3:] == (0, "U2", None)
    for body, flag, props, tag, uniq, keys in batch.messages:
        _check_hints(PutRequest("T", 3, body, flag, props, tags_code=tag, index_keys=(uniq, keys)))


names = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "CLUSTER", "WAIT", "x"])
values = st.text(st.sampled_from("ab \x01"), max_size=4)


@given(st.lists(st.tuples(names, values, st.sampled_from(["\x02", ""])), max_size=5))
def test_stored_text_is_what_encoding_the_decoded_map_gives(entries: list[tuple[str, str, str]]) -> None:
    text = "".join(f"{name}\x01{value}{end}" for name, value, end in entries)
    handlers = _handlers(Path("/nonexistent"))
    try:
        expected: object = _expected(text)
    except ValueError as exc:  # MessageFormatError / MessageIllegalError
        expected = type(exc)
    try:
        (record,) = _records(handlers, text)
    except ValueError as exc:
        assert type(exc) is expected
        return
    assert record.properties == expected
    _check_hints(record)


def test_a_delayed_message_is_stored_in_the_schedule_topic(tmp_path: Path) -> None:
    (record,) = _records(_handlers(tmp_path), "TAGS\x01a\x02DELAY\x0130\x02")
    assert (record.topic, record.queue_id) == ("SCHEDULE_TOPIC_XXXX", 17)  # level 30 clamped to 18
    props = messageproperties.decode_properties(record.properties)
    assert (props["DELAY"], props["REAL_TOPIC"], props["REAL_QID"], props["TAGS"]) == ("18", "T", "3", "a")
    (plain,) = _records(_handlers(tmp_path), "DELAY\x010\x02")
    assert (plain.topic, plain.queue_id) == ("T", 3)


def test_a_batch_of_delayed_messages_is_illegal(tmp_path: Path) -> None:
    answer = _records(_handlers(tmp_path), None, batch_of=[messagetypes.Message("T", b"a", properties={"DELAY": "2"})])
    assert isinstance(answer, RemotingCommand) and answer.code == ResponseCode.MESSAGE_ILLEGAL


@pytest.mark.parametrize("props, reject, code, remark", [
    ({"TRAN_MSG": "true"}, False, ResponseCode.MESSAGE_ILLEGAL, "transactional messages cannot be batched"),
    ({"TRAN_MSG": "true"}, True, ResponseCode.NO_PERMISSION, "sending transaction message is forbidden"),
    ({"TRAN_MSG": "true", "DELAY": "1"}, False, ResponseCode.MESSAGE_ILLEGAL, "delayed messages cannot be sent"),
    ({"DELAY": "3"}, False, ResponseCode.MESSAGE_ILLEGAL, "delayed messages cannot be sent in a batch"),
])
def test_a_batch_refuses_transactional_and_delayed_messages(tmp_path: Path, props: dict[str, str], reject: bool,
                                                             code: int, remark: str) -> None:
    handlers = SendHandlers(None, TopicConfigManager(tmp_path / "topics.json"),  # type: ignore[arg-type]
                            BrokerBehaviour(reject_transaction_message=reject),
                            BrokerAddress(CLUSTER, "broker-a", "127.0.0.1", 10911, True), _nothing)
    msgs = [messagetypes.Message("T", b"fine"), messagetypes.Message("T", b"refused", properties=props)]
    answer = _records(handlers, None, batch_of=msgs)
    assert isinstance(answer, RemotingCommand) and answer.code == code and remark in (answer.remark or "")


def test_a_batch_accepts_delay_zero_and_false_transaction_flags(tmp_path: Path) -> None:
    msgs = [messagetypes.Message("T", b"a", properties={"DELAY": "0", "TRAN_MSG": "false"})]
    batch = _records(_handlers(tmp_path), None, batch_of=msgs)
    assert isinstance(batch, BatchPutRequest)
    assert batch.messages[0][2] == _expected("DELAY\x010\x02TRAN_MSG\x01false\x02")


@given(st.lists(st.dictionaries(names, st.text(st.sampled_from("ab "), max_size=4), max_size=4), min_size=1,
                max_size=4))
def test_batch_items_store_what_encoding_the_decoded_map_gives(maps: list[dict[str, str]]) -> None:
    batch = _records(_handlers(Path("/nonexistent")), None,
                     batch_of=[messagetypes.Message("T", b"x", properties=m) for m in maps])
    assert isinstance(batch, BatchPutRequest)
    for (body, flag, props, tag, uniq, keys), original in zip(batch.messages, maps, strict=True):
        assert props == _expected(messageproperties.encode_properties(original))
        _check_hints(PutRequest("T", 3, body, flag, props, tags_code=tag, index_keys=(uniq, keys)))

"""The broker side of SQL92: reading properties from stored records, the store's record filter,
the per-group registry of compiled selectors and RocketMQ's pull refusals."""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.clienthandlers import ClientHandlers
from rocketq.broker.clienttable import ClientManager
from rocketq.broker.filters import (
    FILTER_DATA_MISSING,
    FILTER_DATA_STALE,
    NOT_SUPPORTED,
    PARSE_FAILED,
    ConsumerFilters,
)
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import messageerrors, storedrecords, subscription
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.messagetypes import MessageSysFlag


def sql(topic: str, text: str, version: int = 1) -> subscription.SubscriptionData:
    return subscription.build(topic, text, "SQL92", version)


PROPERTY_TEXT = st.text(alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)),
                        max_size=12)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(PROPERTY_TEXT.filter(bool), PROPERTY_TEXT, max_size=5), st.binary(max_size=64),
       st.booleans(), st.sampled_from([storedrecords.MAGIC_V1, storedrecords.MAGIC_V2]))
def test_stored_properties_reads_what_was_stored(props: dict[str, str], body: bytes, v6: bool, magic: int) -> None:
    host = ("::1", 5) if v6 else ("127.0.0.1", 5)
    record = storedrecords.encode_stored_record(topic="T", queue_id=0, body=body, properties=props,
                                          born_host=host, store_host=host, magic=magic)
    assert storedrecords.stored_properties(b"pad" + record, 3) == props
    assert bool(storedrecords.decode_stored_record(record).sys_flag & MessageSysFlag.BORNHOST_V6) == v6


def test_stored_properties_refuses_a_cut_record() -> None:
    record = storedrecords.encode_stored_record(topic="T", queue_id=0, body=b"b", properties={"a": "1"})
    with pytest.raises(messageerrors.MessageFormatError):
        storedrecords.stored_properties(record[:-3])


def test_registration_compiles_once_per_version_and_drops_unsubscribed_topics() -> None:
    filters = ConsumerFilters(enabled=True)
    filters.register("g", [sql("T", "a = 1", 5), sql("U", "b = 1", 5)])
    first = filters.get("g", "T")
    assert first is not None and first.sub_version == 5
    filters.register("g", [sql("T", "a = 2", 5)])  # same version: kept, as RocketMQ does
    assert filters.get("g", "T") is first and filters.get("g", "U") is None
    filters.register("g", [sql("T", "a >", 6)])  # a newer version that does not compile: not stored
    assert filters.get("g", "T") is first
    assert filters.check_pull("g", sql("T", "a >", 6), in_request=False) == (
        ResponseCode.FILTER_DATA_NOT_LATEST, FILTER_DATA_STALE)


def test_pull_refusals_in_rocketmq_order() -> None:
    filters = ConsumerFilters(enabled=False)
    assert filters.check_pull("g", sql("T", "a = 1"), in_request=False) == (
        ResponseCode.FILTER_DATA_NOT_EXIST, FILTER_DATA_MISSING)
    filters.register("g", [sql("T", "a = 1")])
    assert filters.check_pull("g", sql("T", "a = 1"), in_request=False) == (ResponseCode.SYSTEM_ERROR, NOT_SUPPORTED)
    assert filters.check_pull("g", sql("T", "  "), in_request=True) == (
        ResponseCode.SUBSCRIPTION_PARSE_FAILED, PARSE_FAILED)
    filters.enabled = True
    assert filters.check_pull("g", sql("T", "a = 1"), in_request=False) is None
    assert filters.check_pull("g", sql("T", "a ="), in_request=True) is None  # matches everything


def test_sql92_subscriptions_pass_the_tag_stages() -> None:
    sub = sql("T", "a = 1")
    assert sub.matches_tag_code(12345) and sub.matches_tag("any") and sub.matches_tag(None)


class Peer:
    remote_addr = "10.1.2.3:4567"
    closed = False


async def _nothing() -> None:
    return None


async def test_a_heartbeat_registers_its_sql92_subscriptions(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    filters = ConsumerFilters(enabled=True)
    handlers = ClientHandlers(None, TopicConfigManager(tmp_path / "topics.json"),  # type: ignore[arg-type]
                              SubscriptionGroupManager(tmp_path / "groups.json"),
                              ConsumerOffsetManager(tmp_path / "offsets.json"), ClientManager(lambda g, c: None),
                              BrokerBehaviour(), _nothing, filters=filters)

    def heartbeat(sql: str, version: int) -> RemotingCommand:
        body = {"clientID": "java@1", "consumerDataSet": [{
            "groupName": "cg", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": [{
                "topic": "T", "subString": sql, "expressionType": "SQL92", "subVersion": version,
                "tagsSet": [], "codeSet": []}]}]}
        return RemotingCommand(code=RequestCode.HEART_BEAT, body=orjson.dumps(body))

    answer = await handlers.heartbeat(Peer(), heartbeat("a > 5", 1))  # type: ignore[arg-type]
    assert answer.code == ResponseCode.SUCCESS
    data = filters.get("cg", "T")
    assert data is not None and data.selector.matches({"a": "6"}) and not data.selector.matches({"a": "5"})
    with caplog.at_level(logging.WARNING, logger="rocketq.broker.filters"):
        answer = await handlers.heartbeat(Peer(), heartbeat("a >", 2))  # type: ignore[arg-type]
    assert answer.code == ResponseCode.SUCCESS  # as RocketMQ: the heartbeat is fine, the filter is not stored
    assert filters.get("cg", "T") is data
    assert any("does not compile" in r.getMessage() and "java@1" in r.getMessage() for r in caplog.records)

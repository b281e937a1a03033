"""HEART_BEAT bodies as each official client writes them: one value, whatever the form."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import heartbeat, subscription
from rocketq.protocol.heartbeat import ConsumerData, HeartbeatData, HeartbeatError

JAVA_BODY: dict[str, Any] = {
    "clientID": "10.0.0.5@1234",
    "consumerDataSet": [{
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "consumeType": "CONSUME_PASSIVELY", "groupName": "cg",
        "messageModel": "BROADCASTING", "unitMode": False,
        "subscriptionDataSet": [{"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                 "subString": "*", "subVersion": 1700000000000, "tagsSet": [], "topic": "T"}],
    }],
    "producerDataSet": [{"groupName": "pg"}, {"groupName": "CLIENT_INNER_PRODUCER"}],
}
EXPECTED = HeartbeatData(
    "10.0.0.5@1234",
    (ConsumerData("cg", "CONSUME_PASSIVELY", "BROADCASTING", "CONSUME_FROM_FIRST_OFFSET",
                  (subscription.build("T", "*", sub_version=1700000000000),)),),
    ("pg", "CLIENT_INNER_PRODUCER"),
)


def test_the_java_body() -> None:
    assert heartbeat.decode(orjson.dumps(JAVA_BODY)) == EXPECTED


def test_the_cpp_body_ordinals_and_a_string_sub_version() -> None:
    consumer = {"groupName": "cg", "consumeType": 1, "messageModel": 0, "consumeFromWhere": 4,
                "subscriptionDataSet": [{"topic": "T", "subString": "*", "subVersion": "1700000000000"}]}
    body = {"clientID": "10.0.0.5@1234", "consumerDataSet": [consumer],
            "producerDataSet": [{"groupName": "pg"}, {"groupName": "CLIENT_INNER_PRODUCER"}]}
    assert heartbeat.decode(orjson.dumps(body)) == EXPECTED


@pytest.mark.parametrize("ordinal, name", list(enumerate(heartbeat.CONSUME_FROM_WHERE)))
def test_consume_from_where_ordinals_follow_the_java_declaration(ordinal: int, name: str) -> None:
    body = {"clientID": "c", "consumerDataSet": [{"groupName": "g", "consumeFromWhere": ordinal}]}
    assert heartbeat.decode(orjson.dumps(body)).consumers[0].consume_from_where == name
    assert heartbeat.CONSUME_FROM_WHERE[3] == "CONSUME_FROM_MAX_OFFSET"
    assert heartbeat.CONSUME_FROM_WHERE[5] == "CONSUME_FROM_TIMESTAMP"


def _enum_form(constants: tuple[str, ...], ordinal: int) -> st.SearchStrategy[object]:
    name = constants[ordinal]
    return st.sampled_from([name, name.lower(), ordinal, str(ordinal)])


@given(st.data())
def test_every_enum_form_gives_the_java_name(data: st.DataObject) -> None:
    tables = (("consumeType", heartbeat.CONSUME_TYPES), ("messageModel", heartbeat.MESSAGE_MODELS),
              ("consumeFromWhere", heartbeat.CONSUME_FROM_WHERE))
    picks = {key: data.draw(st.integers(0, len(constants) - 1)) for key, constants in tables}
    consumer = {"groupName": "g",
                "consumeType": data.draw(_enum_form(heartbeat.CONSUME_TYPES, picks["consumeType"])),
                "messageModel": data.draw(_enum_form(heartbeat.MESSAGE_MODELS, picks["messageModel"])),
                "consumeFromWhere": data.draw(_enum_form(heartbeat.CONSUME_FROM_WHERE, picks["consumeFromWhere"])),
                "unitMode": data.draw(st.sampled_from([False, 0, "false", "0", None]))}
    (parsed,) = heartbeat.decode(orjson.dumps({"clientID": "c", "consumerDataSet": [consumer]})).consumers
    assert parsed.consume_type == heartbeat.CONSUME_TYPES[picks["consumeType"]]
    assert parsed.message_model == heartbeat.MESSAGE_MODELS[picks["messageModel"]]
    assert parsed.consume_from_where == heartbeat.CONSUME_FROM_WHERE[picks["consumeFromWhere"]]
    assert parsed.unit_mode is False


def test_an_empty_producer_group_does_not_refuse_the_clients_consumers() -> None:
    parsed = heartbeat.decode(b'{"clientID":"c","producerDataSet":[{"groupName":""}],'
                              b'"consumerDataSet":[{"groupName":"g"}]}')
    assert parsed.producer_groups == ("",) and parsed.consumers[0].group_name == "g"


def test_absent_enums_take_the_defaults_a_push_consumer_would_send() -> None:
    (parsed,) = heartbeat.decode(b'{"clientID":"c","consumerDataSet":[{"groupName":"g"}]}').consumers
    assert (parsed.consume_type, parsed.message_model, parsed.consume_from_where) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")


@pytest.mark.parametrize("body, message, client_id, group", [
    (b"nope", "not valid JSON", None, None),
    (b"[]", "must be a JSON object", None, None),
    (b'{"consumerDataSet":[]}', "clientID is missing", None, None),
    (b'{"clientID":""}', "clientID is empty", None, None),
    (b'{"clientID":"c","consumerDataSet":{}}', "consumerDataSet must be a list", "c", None),
    (b'{"clientID":"c","consumerDataSet":[{"groupName":""}]}', "groupName is empty", "c", None),
    (b'{"clientID":"c","consumerDataSet":[{"groupName":"g","messageModel":2}]}', "messageModel", "c", "g"),
    (b'{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subVersion":"x"}]}]}',
     "subVersion", "c", "g"),
    (b'{"clientID":"c","producerDataSet":[5]}', r"producerDataSet\[0\]", "c", None),
])
def test_a_refused_body_says_why_and_whose(body: bytes, message: str, client_id: str | None,
                                           group: str | None) -> None:
    with pytest.raises(HeartbeatError, match=message) as info:
        heartbeat.decode(body)
    assert (info.value.client_id, info.value.group) == (client_id, group)


_json = st.recursive(st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                     max_leaves=8)


@given(st.fixed_dictionaries({}, optional={
    "clientID": st.text(max_size=3) | st.integers(), "consumerDataSet": st.lists(st.fixed_dictionaries({}, optional={
        "groupName": _json | st.just("g"), "consumeType": _json, "messageModel": _json, "consumeFromWhere": _json,
        "unitMode": _json, "subscriptionDataSet": _json | st.lists(st.dictionaries(
            st.sampled_from(["topic", "subString", "subVersion", "codeSet", "expressionType"]), _json))}) | _json,
        max_size=2), "producerDataSet": _json}))
def test_any_body_is_a_heartbeat_or_a_heartbeat_error(raw: dict[str, Any]) -> None:
    with contextlib.suppress(HeartbeatError):
        heartbeat.decode(json.dumps(raw).encode())

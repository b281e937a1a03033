"""Topic attributes (RocketMQ 5): the modification string, RocketMQ's alter rules, message types."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import messageproperties as mp
from rocketq.protocol import topicattributes as ta
from rocketq.protocol.sharedbodies import TopicConfig
from rocketq.protocol.topicattributes import MessageType, TopicAttributeError


def test_a_modification_parses_into_plus_and_minus_keys_and_back() -> None:
    parsed = ta.parse_modification("+message.type=FIFO,-queue.type")
    assert parsed == {"+message.type": "FIFO", "-queue.type": ""}
    assert ta.modification(parsed) == "+message.type=FIFO,-queue.type"
    assert ta.parse_modification("") == {} and ta.parse_modification(None) == {}


@pytest.mark.parametrize("text, message", [
    ("message.type=FIFO", "add/alter attribute format is wrong"),
    ("message.type", "delete attribute format is wrong"),
    ("+a=1,+a=2", "key duplication"),
])
def test_malformed_modifications_are_refused(text: str, message: str) -> None:
    with pytest.raises(TopicAttributeError, match=message):
        ta.parse_modification(text)


@given(st.text(max_size=40))
def test_any_text_parses_or_raises_the_attribute_error(text: str) -> None:
    try:
        parsed = ta.parse_modification(text)
    except TopicAttributeError:
        return
    assert all(k.startswith(("+", "-")) for k in parsed)
    assert ta.parse_modification(ta.modification(parsed)) == parsed


def test_creating_takes_only_additions_of_known_keys_with_allowed_values() -> None:
    assert ta.alter({}, {"+message.type": "FIFO"}, create=True) == {"message.type": "FIFO"}
    assert ta.alter({}, {"+queue.type": "BatchCQ"}, create=True) == {"queue.type": "BatchCQ"}
    for changes, message in [({"-message.type": ""}, "only add attribute"), ({"+color": "red"}, "unsupported key"),
                             ({"+message.type": "LOUD"}, "value is not in set")]:
        with pytest.raises(TopicAttributeError, match=message):
            ta.alter({}, changes, create=True)


def test_updating_changes_and_deletes_changeable_keys_only() -> None:
    current = {"message.type": "FIFO", "queue.type": "SimpleCQ"}
    assert ta.alter(current, {"+message.type": "DELAY"}, create=False) == {"message.type": "DELAY",
                                                                          "queue.type": "SimpleCQ"}
    assert ta.alter(current, {"-message.type": ""}, create=False) == {"queue.type": "SimpleCQ"}
    assert ta.alter(current, {}, create=False) == current  # an update without attributes keeps them
    for changes, message in [({"+queue.type": "BatchCQ"}, "unchangeable"), ({"-queue.type": ""}, "unchangeable"),
                             ({"-cleanup": ""}, "nonexistent key")]:
        with pytest.raises(TopicAttributeError, match=message):
            ta.alter(current, changes, create=False)


def test_a_topic_is_normal_unless_its_attribute_says_otherwise() -> None:
    assert ta.message_type({}) is MessageType.NORMAL
    assert ta.message_type({"message.type": "TRANSACTION"}) is MessageType.TRANSACTION
    assert ta.message_type({"message.type": "garbage"}) is MessageType.UNSPECIFIED
    config = TopicConfig("T", attributes=(("message.type", "FIFO"),))
    assert config.message_type is MessageType.FIFO
    assert TopicConfig.from_json(config.to_json()) == config
    assert "attributes" not in TopicConfig("T").to_json()  # 4.x tools see the 4.x shape


@pytest.mark.parametrize("props, expected", [
    ({}, MessageType.NORMAL),
    ({mp.SHARDING_KEY: "g"}, MessageType.FIFO),
    ({mp.DELAY: "3"}, MessageType.DELAY),
    ({"TIMER_DELIVER_MS": "1", mp.SHARDING_KEY: "g"}, MessageType.DELAY),  # RocketMQ's order: delay first
    ({mp.TRAN_MSG: "true", mp.SHARDING_KEY: "g"}, MessageType.TRANSACTION),
])
def test_a_message_type_comes_from_its_properties_in_rocketmqs_order(props: dict[str, str],
                                                                      expected: MessageType) -> None:
    assert ta.of_properties(props) is expected

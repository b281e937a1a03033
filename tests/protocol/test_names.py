"""Topic and group name rules and permissions, with the caller's own error type."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import names
from rocketq.protocol.names import RuleError


class Refused(ValueError):
    pass


@pytest.mark.parametrize("topic", ["TopicTest", "%RETRY%group-1", "%DLQ%g", "a|b", "x" * 127, "_"])
def test_valid_topics(topic: str) -> None:
    assert names.check_topic(topic) == topic


@pytest.mark.parametrize("topic, message", [
    ("", "the specified topic is blank"),
    ("   ", "the specified topic is blank"),
    (None, "the specified topic is blank"),
    ("x" * 128, "longer than topic max length 127"),
    ("bad topic", r"the specified topic \[bad topic\] contains illegal characters"),
    ("t/1", "illegal characters"),
    ("trailing\n", "illegal characters"),
])
def test_invalid_topics(topic: object, message: str) -> None:
    with pytest.raises(RuleError, match=message):
        names.check_topic(topic)


def test_groups_may_be_longer_than_topics() -> None:
    assert names.check_group("g" * 255) == "g" * 255
    with pytest.raises(RuleError, match="longer than group max length 255"):
        names.check_group("g" * 256)
    with pytest.raises(RuleError, match="the specified group is blank"):
        names.check_group("")


def test_the_callers_error_type_is_raised() -> None:
    with pytest.raises(Refused, match="illegal characters"):
        names.check_topic("a b", Refused)
    with pytest.raises(Refused, match="blank"):
        names.check_group(" ", Refused)
    with pytest.raises(Refused, match="perm 8"):
        names.check_perm(8, Refused)


def test_permissions() -> None:
    assert [names.check_perm(p) for p in range(8)] == list(range(8))
    for bad in (-1, 8, 16, 9):
        with pytest.raises(RuleError, match="not a combination"):
            names.check_perm(bad)
    assert names.perm_name(6) == "RW-" and names.perm_name(7) == "RWX" and names.perm_name(12) == "12"


@given(st.text(max_size=300))
def test_a_name_is_accepted_exactly_when_it_follows_the_rules(name: str) -> None:
    valid = 0 < len(name) <= names.MAX_TOPIC_LENGTH and all(c.isascii() and (c.isalnum() or c in "%|_-")
                                                            for c in name)
    try:
        names.check_topic(name)
    except RuleError:
        assert not valid
    else:
        assert valid


@pytest.mark.parametrize("topic, system", [
    ("TBW102", True), ("SCHEDULE_TOPIC_XXXX", True), ("BenchmarkTest", True), ("RMQ_SYS_TRANS_HALF_TOPIC", True),
    ("RMQ_SYS_TRACE_TOPIC", True), ("RMQ_SYS_TRANS_OP_HALF_TOPIC", True), ("TRANS_CHECK_MAX_TIME_TOPIC", True),
    ("SELF_TEST_TOPIC", True), ("OFFSET_MOVED_EVENT", True), ("rmq_sys_x", True),
    ("TopicTest", False), ("RMQ_SYS_OTHER", False), ("%RETRY%g", False),
])
def test_system_topics_are_rocketmq_49s(topic: str, system: bool) -> None:
    assert names.is_system_topic(topic) is system
    if system:
        with pytest.raises(names.RuleError, match=r"conflict with system topic"):
            names.check_not_system_topic(topic)
    else:
        assert names.check_not_system_topic(topic) == topic

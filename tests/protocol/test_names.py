"""Topic and group name rules and permissions, with the caller's own error type."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import namerules
from rocketq.protocol.namerules import RuleError


class Refused(ValueError):
    pass


@pytest.mark.parametrize("topic", ["TopicTest", "%RETRY%group-1", "%DLQ%g", "a|b", "x" * 127, "_"])
def test_valid_topics(topic: str) -> None:
    assert namerules.check_topic(topic) == topic


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
        namerules.check_topic(topic)


def test_groups_may_be_longer_than_topics() -> None:
    assert namerules.check_group("g" * 255) == "g" * 255
    with pytest.raises(RuleError, match="longer than group max length 255"):
        namerules.check_group("g" * 256)
    with pytest.raises(RuleError, match="the specified group is blank"):
        namerules.check_group("")


def test_the_callers_error_type_is_raised() -> None:
    with pytest.raises(Refused, match="illegal characters"):
        namerules.check_topic("a b", Refused)
    with pytest.raises(Refused, match="blank"):
        namerules.check_group(" ", Refused)
    with pytest.raises(Refused, match="perm 8"):
        namerules.check_perm(8, Refused)


def test_permissions() -> None:
    assert [namerules.check_perm(p) for p in range(8)] == list(range(8))
    for bad in (-1, 8, 16, 9):
        with pytest.raises(RuleError, match="not a combination"):
            namerules.check_perm(bad)
    assert namerules.perm_name(6) == "RW-" and namerules.perm_name(7) == "RWX" and namerules.perm_name(12) == "12"


@given(st.text(max_size=300))
def test_a_name_is_accepted_exactly_when_it_follows_the_rules(name: str) -> None:
    valid = 0 < len(name) <= namerules.MAX_TOPIC_LENGTH and all(c.isascii() and (c.isalnum() or c in "%|_-")
                                                            for c in name)
    try:
        namerules.check_topic(name)
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
    assert namerules.is_system_topic(topic) is system
    if system:
        with pytest.raises(namerules.RuleError, match=r"conflict with system topic"):
            namerules.check_not_system_topic(topic)
    else:
        assert namerules.check_not_system_topic(topic) == topic

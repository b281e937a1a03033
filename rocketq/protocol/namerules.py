"""Topic and group names, and topic permissions: the rules RocketMQ applies to both.

A topic or consumer/producer group name is non-empty, made only of letters, digits, ``_``,
``-``, ``%`` and ``|``, and at most 127 characters for a topic, 255 for a group (Java's
``TopicValidator`` and ``Validators``). ``%`` and ``|`` are allowed because RocketMQ builds
system names from user names: ``%RETRY%group``, ``%DLQ%group``. A permission is a combination
of READ (4), WRITE (2) and INHERIT (1), nothing more.

Every check returns the value it accepted, so a caller can check and assign in one step. The
error raised is ``RuleError`` unless the caller names its own: a broker answers with its
``TopicError`` remark, ``rocketq admin`` exits with its ``ArgumentError``, the SDK raises its
``MessageError``. The messages are RocketMQ's own words, so a user sees what a Java client or
broker would tell them.

System topics (``SYSTEM_TOPICS`` and the ``rmq_sys_`` prefix, Java's ``TopicValidator.
isSystemTopic``) are the broker's own: it creates them, and an admin request may neither
rewrite nor delete them (rewriting TBW102 without its INHERIT bit would silently end topic
auto-creation). What this module does not decide: which of them a producer may send to, or
which other names a broker reserves (its cluster and broker name); the side that enforces
those rules owns them.
"""

from __future__ import annotations

import re
from typing import Final

from rocketq.protocol import codes
from rocketq.protocol.codes import Perm

NAME_PATTERN: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")
"""Characters a topic or group name may hold (``TopicValidator.VALID_PATTERN_STR``)."""
MAX_TOPIC_LENGTH: Final = 127
MAX_GROUP_LENGTH: Final = 255
PERM_MASK: Final = int(Perm.READ | Perm.WRITE | Perm.INHERIT)
PERM_NAMES: Final = {0: "---", 1: "--X", 2: "-W-", 3: "-WX", 4: "R--", 5: "R-X", 6: "RW-", 7: "RWX"}
"""How mqadmin prints a permission."""
SYSTEM_TOPICS: Final = frozenset({
    codes.AUTO_CREATE_TOPIC_KEY, codes.SCHEDULE_TOPIC, "BenchmarkTest", codes.TRANS_HALF_TOPIC, codes.TRACE_TOPIC,
    codes.TRANS_OP_HALF_TOPIC, "TRANS_CHECK_MAX_TIME_TOPIC", codes.SELF_TEST_TOPIC, "OFFSET_MOVED_EVENT",
})
"""RocketMQ 4.9's ``TopicValidator`` system topic set."""
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"


class RuleError(ValueError):
    """A name or permission that RocketMQ's rules refuse."""


def check_topic(topic: object, error: type[Exception] = RuleError) -> str:
    """The topic, or ``error`` saying what is wrong with it."""
    return _check_name("topic", topic, MAX_TOPIC_LENGTH, error)


def check_group(group: object, error: type[Exception] = RuleError) -> str:
    """The group, or ``error`` saying what is wrong with it."""
    return _check_name("group", group, MAX_GROUP_LENGTH, error)


def check_perm(perm: int, error: type[Exception] = RuleError) -> int:
    """The permission, or ``error`` when it holds bits beyond READ|WRITE|INHERIT."""
    if perm < 0 or perm & ~PERM_MASK:
        raise error(f"perm {perm} is not a combination of 4 (read), 2 (write), 1 (inherit)")
    return perm


def is_system_topic(topic: str) -> bool:
    """True for a topic the broker owns (see the module docstring)."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def check_not_system_topic(topic: str, error: type[Exception] = RuleError) -> str:
    """The topic, or ``error`` with a Java broker's remark when it is a system topic."""
    if is_system_topic(topic):
        raise error(f"The topic[{topic}] is conflict with system topic.")
    return topic


def perm_name(perm: int) -> str:
    """``RW-`` for 6, as mqadmin prints it; an impossible value prints as its number."""
    return PERM_NAMES.get(perm, str(perm))


def _check_name(kind: str, name: object, max_length: int, error: type[Exception]) -> str:
    if not isinstance(name, str) or not name.strip():
        raise error(f"the specified {kind} is blank")
    if len(name) > max_length:
        raise error(f"the specified {kind} is longer than {kind} max length {max_length}")
    if not NAME_PATTERN.fullmatch(name):  # match() would let a trailing newline through ($)
        raise error(
            f"the specified {kind} [{name}] contains illegal characters, allowing only {NAME_PATTERN.pattern}")
    return name

"""Subscriptions: what a consumer group wants from a topic, as RocketMQ's SubscriptionData.

A tag expression is ``*`` (everything) or tags joined by ``||``. The broker filters by the tag's
hash code stored in the ConsumeQueue (cheap, but two tags can share a hash), so the client checks
the exact tag again after the pull.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from rocketq.protocol.message import tag_hash

SUB_ALL: Final = "*"
EXPRESSION_TAG: Final = "TAG"
EXPRESSION_SQL92: Final = "SQL92"
MAX_EXPRESSION_LENGTH: Final = 4096


class SubscriptionError(ValueError):
    """The subscription expression cannot be parsed (SUBSCRIPTION_PARSE_FAILED)."""


@dataclass(frozen=True, slots=True)
class SubscriptionData:
    topic: str
    sub_string: str = SUB_ALL
    tags_set: frozenset[str] = field(default_factory=frozenset)
    code_set: frozenset[int] = field(default_factory=frozenset)
    sub_version: int = 0
    expression_type: str = EXPRESSION_TAG

    @property
    def matches_all(self) -> bool:
        return self.expression_type == EXPRESSION_TAG and (self.sub_string == SUB_ALL or not self.tags_set)

    def matches_tag_code(self, code: int) -> bool:
        """The broker-side check against a ConsumeQueue tag hash code."""
        return self.matches_all or code in self.code_set

    def matches_tag(self, tag: str | None) -> bool:
        """The client-side exact check."""
        return self.matches_all or (tag is not None and tag in self.tags_set)

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": False,
            "topic": self.topic,
            "subString": self.sub_string,
            "tagsSet": sorted(self.tags_set),
            "codeSet": sorted(self.code_set),
            "subVersion": self.sub_version,
            "expressionType": self.expression_type,
        }

    @classmethod
    def from_json(cls, raw: Any) -> SubscriptionData:
        if not isinstance(raw, dict) or not isinstance(raw.get("topic"), str):
            raise SubscriptionError("subscription data needs a topic")
        version = raw.get("subVersion") or 0
        if isinstance(version, bool) or not isinstance(version, int):
            raise SubscriptionError(f"subVersion {version!r} is not an integer")
        return build(
            raw["topic"],
            str(raw.get("subString") or SUB_ALL),
            str(raw.get("expressionType") or EXPRESSION_TAG),
            version,
        )


def build(
    topic: str, expression: str | None, expression_type: str | None = None, sub_version: int = 0
) -> SubscriptionData:
    """Parse a tag expression into SubscriptionData; SQL92 is kept as text for the filter engine."""
    expression = (expression or SUB_ALL).strip() or SUB_ALL
    kind = (expression_type or EXPRESSION_TAG).upper()
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise SubscriptionError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    if kind != EXPRESSION_TAG:
        if kind != EXPRESSION_SQL92:
            raise SubscriptionError(f"unknown expression type {expression_type!r}")
        return SubscriptionData(topic, expression, expression_type=kind, sub_version=sub_version)
    if expression == SUB_ALL:
        return SubscriptionData(topic, SUB_ALL, sub_version=sub_version)
    tags = frozenset(t.strip() for t in expression.split("||") if t.strip())
    if not tags:
        raise SubscriptionError(f"tag expression {expression!r} names no tag")
    return SubscriptionData(topic, expression, tags, frozenset(tag_hash(t) for t in tags), sub_version, kind)

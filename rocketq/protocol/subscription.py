"""Subscriptions: what a consumer group wants from a topic, as RocketMQ's SubscriptionData.

A tag expression is ``*`` (everything) or tags joined by ``||``. The broker filters by the tag's
hash code stored in the ConsumeQueue (cheap, but two tags can share a hash), so the client checks
the exact tag again after the pull.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from rocketq.protocol import sharedbodies
from rocketq.protocol.javahash import tag_hash

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

    @property
    def is_tag_type(self) -> bool:
        return self.expression_type == EXPRESSION_TAG

    def matches_tag_code(self, code: int) -> bool:
        """The broker-side check against a ConsumeQueue tag hash code (SQL92 passes this stage)."""
        return self.matches_all or not self.is_tag_type or code in self.code_set

    def matches_tag(self, tag: str | None) -> bool:
        """The client-side exact check. A SQL92 subscription keeps what the broker sent, as
        RocketMQ's clients do: the broker's property filter is the authority."""
        return self.matches_all or not self.is_tag_type or (tag is not None and tag in self.tags_set)

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
    def from_json(cls, raw: Any, where: str = "subscriptionData") -> SubscriptionData:
        """A client's SubscriptionData, read as fastjson reads it (``subVersion`` may be a string,
        ``codeSet`` entries strings, ``classFilterMode`` 0/1). The tags and their codes are derived
        from ``subString`` again, so a client's own ``tagsSet``/``codeSet`` are only checked to be
        what Java could read, never trusted for filtering."""
        try:
            raw = sharedbodies.obj(raw, where)
            topic = sharedbodies.text(raw, "topic", where)
            expression = sharedbodies.text(raw, "subString", where, SUB_ALL)
            expression_type = sharedbodies.text(raw, "expressionType", where, EXPRESSION_TAG)
            version = sharedbodies.int64(raw, "subVersion", where, 0)
            sharedbodies.flag(raw, "classFilterMode", where, False)
            for key in ("tagsSet", "codeSet"):
                entries = raw.get(key)
                if entries is not None and not isinstance(entries, list):
                    raise sharedbodies.BodyError(f"{where}.{key} must be a list")
            for i, code in enumerate(raw.get("codeSet") or ()):
                sharedbodies.integer({"code": code}, "code", f"{where}.codeSet[{i}]")
        except sharedbodies.BodyError as exc:
            raise SubscriptionError(str(exc)) from None
        if not topic:
            raise SubscriptionError(f"{where}.topic is empty")
        return build(topic, expression, expression_type or EXPRESSION_TAG, version)


def build(
    topic: str, expression: str | None, expression_type: str | None = None, sub_version: int = 0
) -> SubscriptionData:
    """Parse a tag expression into SubscriptionData; SQL92 is kept as text, exactly as given (an
    error's column counts from its start), for ``rocketq.filter.sql92``."""
    kind = (expression_type or EXPRESSION_TAG).upper()
    if kind == EXPRESSION_SQL92:
        if len(expression or "") > MAX_EXPRESSION_LENGTH:
            raise SubscriptionError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
        return SubscriptionData(topic, expression or "", expression_type=kind, sub_version=sub_version)
    expression = (expression or SUB_ALL).strip() or SUB_ALL
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise SubscriptionError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    if kind != EXPRESSION_TAG:
        raise SubscriptionError(f"unknown expression type {expression_type!r}")
    if expression == SUB_ALL:
        return SubscriptionData(topic, SUB_ALL, sub_version=sub_version)
    tags = frozenset(t.strip() for t in expression.split("||") if t.strip())
    if not tags:
        raise SubscriptionError(f"tag expression {expression!r} names no tag")
    return SubscriptionData(topic, expression, tags, frozenset(tag_hash(t) for t in tags), sub_version, kind)

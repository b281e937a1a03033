"""Tag expressions: parsing, hash codes as Java computes them, and both match checks."""

from __future__ import annotations

import pytest

from rocketq.protocol import subscription
from rocketq.protocol.message import tag_hash
from rocketq.protocol.subscription import SubscriptionError


def test_star_matches_everything() -> None:
    sub = subscription.build("T", "*")
    assert sub.matches_all and sub.matches_tag_code(12345) and sub.matches_tag(None)


def test_tags_are_split_trimmed_and_hashed() -> None:
    sub = subscription.build("T", " TagA || TagB ||")
    assert sub.tags_set == {"TagA", "TagB"}
    assert sub.code_set == {tag_hash("TagA"), tag_hash("TagB")}
    assert tag_hash("TagA") == 2598919  # "TagA".hashCode() in Java
    assert sub.matches_tag_code(tag_hash("TagB")) and not sub.matches_tag_code(tag_hash("TagC"))
    assert sub.matches_tag("TagA") and not sub.matches_tag("TagC") and not sub.matches_tag(None)


def test_json_round_trip_matches_java_field_names() -> None:
    sub = subscription.build("T", "a||b", sub_version=7)
    raw = sub.to_json()
    assert set(raw) == {"classFilterMode", "topic", "subString", "tagsSet", "codeSet", "subVersion", "expressionType"}
    assert subscription.SubscriptionData.from_json(raw) == sub


@pytest.mark.parametrize("expr, kind", [("||", "TAG"), ("a", "XPATH"), ("x" * 5000, "TAG")])
def test_bad_expressions(expr: str, kind: str) -> None:
    with pytest.raises(SubscriptionError):
        subscription.build("T", expr, kind)


def test_sql92_is_kept_as_text() -> None:
    sub = subscription.build("T", "a > 5", "sql92")
    assert sub.expression_type == "SQL92" and not sub.matches_all


def test_from_json_refuses_a_non_integer_sub_version() -> None:
    with pytest.raises(SubscriptionError, match="subVersion"):
        subscription.SubscriptionData.from_json({"topic": "T", "subVersion": "soon"})

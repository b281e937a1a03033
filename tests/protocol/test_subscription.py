"""Tag expressions: parsing, hash codes as Java computes them, and both match checks."""

from __future__ import annotations

import pytest

from rocketq.protocol import subscription
from rocketq.protocol.javahash import tag_hash
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


def test_from_json_reads_what_each_official_client_writes() -> None:
    """Java writes numbers; the C++ client writes subVersion as a string and no expressionType;
    the Go client writes codeSet entries as strings. A Java broker reads all three alike."""
    java = {"classFilterMode": False, "topic": "T", "subString": "a||b", "tagsSet": ["a", "b"],
            "codeSet": [tag_hash("a"), tag_hash("b")], "subVersion": 1700000000000, "expressionType": "TAG"}
    cpp = {"topic": "T", "subString": "a||b", "subVersion": "1700000000000", "tagsSet": ["a", "b"],
           "codeSet": [tag_hash("a"), tag_hash("b")]}
    go = {**java, "codeSet": [str(tag_hash("a")), str(tag_hash("b"))], "classFilterMode": 0}
    expected = subscription.build("T", "a||b", sub_version=1700000000000)
    for raw in (java, cpp, go):
        assert subscription.SubscriptionData.from_json(raw) == expected


@pytest.mark.parametrize("raw, message", [
    ({"topic": "T", "codeSet": ["x"]}, r"codeSet\[0\]"),
    ({"topic": "T", "codeSet": 5}, "codeSet must be a list"),
    ({"topic": "T", "classFilterMode": "maybe"}, "classFilterMode"),
    ({"topic": ""}, "topic is empty"),
    ({"subString": "*"}, "topic is missing"),
    ([], "must be a JSON object"),
])
def test_from_json_names_what_java_could_not_read(raw: object, message: str) -> None:
    with pytest.raises(SubscriptionError, match=message):
        subscription.SubscriptionData.from_json(raw)

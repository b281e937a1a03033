"""The SQL92 selector: RocketMQ's grammar, parse-time checks and three-valued evaluation."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.filter import sql92
from rocketq.filter.javavalues import EvaluationError, JInt, JLong


def matches(text: str, **props: str) -> bool:
    return sql92.parse(text).matches(props)


@pytest.mark.parametrize(
    ("text", "props", "expected"),
    [
        ("a = 'x'", {"a": "x"}, True),
        ("a = 'x'", {"a": "y"}, False),
        ("a = 'x'", {}, False),
        ("a <> 'x'", {}, False),  # NOT unknown is unknown
        ("a <> 'x'", {"a": "y"}, True),
        ("a > 5", {"a": "6"}, True),
        ("a > 5", {"a": "5"}, False),
        ("a > 5", {"a": "abc"}, False),  # Integer.valueOf throws: no match
        ("a > 5.5", {"a": "6"}, True),
        ("a > 5", {"a": "5.5"}, False),  # Integer.valueOf("5.5") throws
        ("a = 3000000000", {"a": "3000000000"}, True),  # a Long literal
        ("a = 1", {"a": "3000000000"}, False),  # does not fit an Integer: throws
        ("a = 1L", {"a": "1"}, True),
        ("a > b", {"a": "10", "b": "9"}, True),  # two Strings ordered as Doubles
        ("a BETWEEN 1 AND 3", {"a": "3"}, True),
        ("a NOT BETWEEN 1 AND 3", {"a": "4"}, True),
        ("a IN ('x', 'y')", {"a": "y"}, True),
        ("a NOT IN ('x', 'y')", {"a": "z"}, True),
        ("a NOT IN ('x', 'y')", {}, False),  # unknown even for NOT IN
        ("a IS NULL", {}, True),
        ("a IS NULL", {"a": ""}, False),
        ("a IS NOT NULL", {"a": ""}, True),
        ("a = b", {}, True),  # null = null is TRUE in RocketMQ
        ("a", {"a": "true"}, False),  # a String is never a condition
        ("TRUE", {}, True),
        ("NULL", {}, False),
        ("a = 'x' OR b = 'y'", {"b": "y"}, True),
        ("a = 'x' AND b = 'y'", {"a": "x"}, False),
        ("NOT (a = 'x')", {"a": "y"}, True),
        ("a = 'it''s'", {"a": "it's"}, True),
        ("TAGS = 'TagA'", {"TAGS": "TagA"}, True),
        ("a = 'x' garbage after", {"a": "x"}, True),  # JavaCC never checks the end of input
        ("a LIKE 'x'", {"a": "x"}, False),  # no LIKE: this is the bare property a
        ("a = 1 /* comment */ or b = 2 -- line\n", {"b": "2"}, True),
        ("a > -1", {"a": "0"}, True),
        ("a = TRUE", {"a": "TRUE"}, True),  # the String becomes Boolean.valueOf
    ],
)
def test_evaluation_as_rocketmq(text: str, props: dict[str, str], expected: bool) -> None:
    assert sql92.parse(text).matches(props) is expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a > 'x'", "cannot be compared"),
        ("a = NULL", "cannot be compared"),
        ("TRUE = 1", "cannot be compared with"),
        ("a BETWEEN 3 AND 1", "must less than or equal"),
        ("a BETWEEN NULL AND 1", "can not be null"),
        ("1 IN ('x')", "Expected a property"),
        ("1", "will not result in a boolean"),
        ("a != 1", "column 3"),
        ("a = ", "column 5"),
        ("(a = 'x'", "<EOF>"),
        ("a = AND b", 'Encountered "AND" at line 1, column 5'),
        ("a = 'x' #", "column 9"),
        ("x = 9223372036854775808", "9223372036854775808"),
        ("", "<EOF>"),
        ("(a NOT b)", 'Encountered "NOT"'),
    ],
)
def test_parse_errors_say_what_and_where(text: str, fragment: str) -> None:
    with pytest.raises(sql92.FilterSyntaxError) as caught:
        sql92.parse(text)
    assert fragment in str(caught.value)


def test_literal_types_follow_java() -> None:
    def constant(text: str) -> Any:
        expression = sql92.parse(f"a = {text}").expression
        return expression.right.value  # type: ignore[attr-defined]

    assert type(constant("2147483647")) is JInt
    assert type(constant("2147483648")) is JLong
    assert type(constant("7L")) is JInt  # fits an Integer, so it is one
    assert type(constant("1.5")) is float and constant(".5") == 0.5 and constant("5.") == 5.0
    assert constant("1E3") == 1000.0


def test_evaluate_raises_where_java_throws() -> None:
    with pytest.raises(EvaluationError):
        sql92.parse("a > 1").evaluate({"a": "x"})
    # short-circuit: the throwing side is never reached
    assert sql92.parse("b = 'no' AND a > 1").evaluate({"a": "x", "b": "yes"}) is False


def test_compile_is_cached_by_text() -> None:
    assert sql92.compile_selector("a = 'cached'") is sql92.compile_selector("a = 'cached'")
    with pytest.raises(sql92.FilterSyntaxError):
        sql92.compile_selector("a >")
    with pytest.raises(sql92.FilterSyntaxError):
        sql92.compile_selector("a >")


# --- property tests ---------------------------------------------------------------------------

NAMES = ("a", "b", "c")
VALUES = st.one_of(st.integers(-5, 5).map(str), st.sampled_from(["x", "y", "", "z z"]))
PROPS = st.dictionaries(st.sampled_from(NAMES), VALUES)


class Throw(Exception):
    """The reference evaluator's Java exception."""


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise Throw from None


def _case(word: str, draw: Any) -> str:
    return "".join(c.upper() if flip else c.lower() for c, flip in zip(word, draw(st.lists(
        st.booleans(), min_size=len(word), max_size=len(word))), strict=True))


@st.composite
def conditions(draw: Any, depth: int = 0) -> tuple[str, Any]:
    """(text, reference evaluator) pairs: a small independent model of RocketMQ's semantics."""
    kind = draw(st.sampled_from(["cmp", "eq", "in", "null"] + (["and", "or", "not"] if depth < 3 else [])))
    name = draw(st.sampled_from(NAMES))
    if kind == "cmp":
        op = draw(st.sampled_from([">", ">=", "<", "<="]))
        number = draw(st.integers(-6, 6))
        ops = {">": int.__gt__, ">=": int.__ge__, "<": int.__lt__, "<=": int.__le__}

        def cmp(p: dict[str, str]) -> bool | None:
            v = p.get(name)
            return None if v is None else ops[op](_int(v), number)
        return f"{name} {op} {number}", cmp
    if kind == "eq":
        literal = draw(VALUES)
        negated = draw(st.booleans())

        def eq(p: dict[str, str]) -> bool | None:
            v = p.get(name)
            return None if v is None else (v == literal) != negated
        quoted = "'" + literal.replace("'", "''") + "'"
        return f"{name} {'<>' if negated else '='} {quoted}", eq
    if kind == "in":
        options = draw(st.lists(VALUES, min_size=1, max_size=3))
        negated = draw(st.booleans())

        def in_(p: dict[str, str]) -> bool | None:
            v = p.get(name)
            return None if v is None else (v in options) != negated
        listed = ", ".join("'" + o + "'" for o in options)
        return f"{name} {_case('not', draw) + ' ' if negated else ''}{_case('in', draw)} ({listed})", in_
    if kind == "null":
        negated = draw(st.booleans())
        return (f"{name} IS {'NOT ' if negated else ''}NULL",
                lambda p: (name not in p) != negated)
    if kind == "not":
        text, inner = draw(conditions(depth + 1))

        def not_(p: dict[str, str]) -> bool | None:
            v = inner(p)
            return None if v is None else not v
        return f"{_case('not', draw)} ({text})", not_
    (lt, left), (rt, right) = draw(conditions(depth + 1)), draw(conditions(depth + 1))
    if kind == "and":
        def and_(p: dict[str, str]) -> bool | None:
            lv = left(p)
            if lv is False:
                return False
            rv = right(p)
            return False if rv is False else None if None in (lv, rv) else True
        return f"({lt}) {_case('and', draw)} ({rt})", and_

    def or_(p: dict[str, str]) -> bool | None:
        lv = left(p)
        if lv is True:
            return True
        rv = right(p)
        return True if rv is True else None if None in (lv, rv) else False
    return f"({lt}) {_case('or', draw)} ({rt})", or_


@settings(max_examples=300, deadline=None)
@given(conditions(), PROPS)
def test_evaluation_agrees_with_a_reference_model(condition: tuple[str, Any], props: dict[str, str]) -> None:
    text, reference = condition
    selector = sql92.parse(text)
    try:
        expected = reference(props) is True
    except Throw:
        expected = False
    assert selector.matches(props) is expected


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abNOTANDORIS()'=<>-+*/.,0123456789eL \n#!")), max_size=30))
def test_any_text_parses_or_fails_with_the_filter_error(text: str) -> None:
    try:
        selector = sql92.parse(text)
    except sql92.FilterSyntaxError:
        return
    with contextlib.suppress(EvaluationError):
        selector.evaluate({"a": "1", "b": "x"})


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_unicode_never_crashes_the_parser(text: str) -> None:
    with contextlib.suppress(sql92.FilterSyntaxError):
        sql92.parse(text)

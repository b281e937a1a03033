"""RocketMQ's SQL92 message selector: parse once into an expression tree, evaluate per message.

The grammar is RocketMQ 4.x's ``SelectorParser.jj`` (a trimmed ActiveMQ JMS selector), parsed
with lark (LALR). Precedence, loosest first: ``OR``; ``AND``; ``=``, ``<>``, ``IS [NOT] NULL``;
``>``, ``>=``, ``<``, ``<=``, ``[NOT] BETWEEN a AND b``, ``[NOT] IN ('s', ...)``; then the prefix
operators ``+``, ``-`` and ``NOT`` — so ``NOT a = 'x'`` means ``(NOT a) = 'x'``, as in RocketMQ.
Keywords are case-insensitive; ``--`` line and ``/* */`` block comments are skipped.

Three rules from RocketMQ that look odd but are kept because clients rely on the broker agreeing
with Java:

- Input after a complete expression is ignored (``a = 'x' b`` is ``a = 'x'``): the JavaCC
  parser never asks for the end of input. Only the next token is lexed, so a character that is
  no token at all still fails there. The parser is fed token by token to do the same.
- Some mistakes are caught while building the tree, not by the grammar (``a > 'x'``,
  ``a = NULL``, ``a BETWEEN 2 AND 1``, ``1 IN ('x')``, a bare ``1``): all are ``FilterSyntaxError``.
- Evaluation is three-valued (TRUE, FALSE, unknown = None) and a message matches only when the
  result is exactly TRUE. Evaluation that throws in Java (``a > 1`` where ``a`` is ``'abc'``)
  raises ``EvaluationError`` here; a caller treats it as no match.

``compile_selector`` caches results by text (both successes and failures), as RocketMQ's parse
cache does: every pull of a subscription uses the same text.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

import lark
from lark.exceptions import LarkError, UnexpectedInput

from rocketq.filter import javavalues
from rocketq.filter.javavalues import EvaluationError, JInt, JLong, Value

PARSE_CACHE_SIZE: Final = 100
"""Expressions kept compiled (RocketMQ's SelectorParser cache holds 100 too)."""

Properties = Mapping[str, str]

_GRAMMAR: Final = r"""
start: or_expr

?or_expr: and_expr
    | or_expr OR and_expr -> or_
?and_expr: eq_expr
    | and_expr AND eq_expr -> and_
?eq_expr: cmp_expr
    | eq_expr "=" cmp_expr -> eq
    | eq_expr "<>" cmp_expr -> ne
    | eq_expr IS NULL -> is_null
    | eq_expr IS NOT NULL -> is_not_null
?cmp_expr: unary
    | cmp_expr ">" unary -> gt
    | cmp_expr ">=" unary -> ge
    | cmp_expr "<" unary -> lt
    | cmp_expr "<=" unary -> le
    | cmp_expr BETWEEN unary AND unary -> between
    | cmp_expr NOT BETWEEN unary AND unary -> not_between
    | cmp_expr IN "(" STRING ("," STRING)* ")" -> in_
    | cmp_expr NOT IN "(" STRING ("," STRING)* ")" -> not_in
?unary: "+" unary
    | "-" unary -> neg
    | NOT unary -> not_
    | primary
?primary: STRING -> string
    | DECIMAL -> decimal
    | FLOAT -> double
    | TRUE -> true
    | FALSE -> false
    | NULL -> null
    | ID -> prop
    | "(" or_expr ")"

NOT: "NOT"i
AND: "AND"i
OR: "OR"i
BETWEEN: "BETWEEN"i
IN: "IN"i
TRUE: "TRUE"i
FALSE: "FALSE"i
NULL: "NULL"i
IS: "IS"i
ID: /[a-z_$][a-z0-9_$]*/i
FLOAT.2: /[0-9]+\.[0-9]*(e[+-]?[0-9]+)?|\.[0-9]+(e[+-]?[0-9]+)?|[0-9]+e[+-]?[0-9]+/i
DECIMAL: /0|[1-9][0-9]*l?/i
STRING: /'(''|[^'])*'/

%ignore /[ \t\n\r\f]+/
%ignore /--[^\n\r]*(\r\n|\n|\r)/
%ignore /\/\*[^*]*\*+([^*\/][^*]*\*+)*\//
"""

_PARSER: Final = lark.Lark(_GRAMMAR, parser="lalr", lexer="basic", maybe_placeholders=False)
_AFTER_NOT_INFIX: Final = frozenset({"BETWEEN", "IN"})


class FilterSyntaxError(ValueError):
    """The expression is not a RocketMQ SQL92 selector (MQFilterException); says where."""


# --- the expression tree -----------------------------------------------------------------------


class Expr:
    """A node; ``evaluate`` returns a Value (None = unknown) or raises EvaluationError."""

    __slots__ = ()

    def evaluate(self, props: Properties) -> Value:
        raise NotImplementedError


class BooleanExpr(Expr):
    """A node Java types as BooleanExpression: usable as a condition, never compared by order."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Constant(Expr):
    value: Value

    def evaluate(self, props: Properties) -> Value:
        return self.value


@dataclass(frozen=True, slots=True)
class BooleanConstant(BooleanExpr):
    """TRUE, FALSE and NULL: Java makes all three BooleanConstantExpressions."""

    value: bool | None

    def evaluate(self, props: Properties) -> Value:
        return self.value


@dataclass(frozen=True, slots=True)
class Property(Expr):
    name: str

    def evaluate(self, props: Properties) -> Value:
        return props.get(self.name)


@dataclass(frozen=True, slots=True)
class Negate(Expr):
    operand: Expr

    def evaluate(self, props: Properties) -> Value:
        value = self.operand.evaluate(props)
        if type(value) is float:
            return -value
        if type(value) is JInt or type(value) is JLong:
            return javavalues.negate(value)
        return None  # null, and anything that is not a number


@dataclass(frozen=True, slots=True)
class BooleanCast(BooleanExpr):
    """A bare property used as a condition: only a Boolean value is true, a String never is."""

    operand: Expr

    def evaluate(self, props: Properties) -> Value:
        value = self.operand.evaluate(props)
        if value is None:
            return None
        return value if type(value) is bool else False


@dataclass(frozen=True, slots=True)
class Not(BooleanExpr):
    operand: Expr

    def evaluate(self, props: Properties) -> Value:
        value = self.operand.evaluate(props)
        return None if value is None else not value


@dataclass(frozen=True, slots=True)
class Logic(BooleanExpr):
    """AND and OR in SQL's three-valued logic. ``absorbing`` is the value that decides the result
    alone (FALSE for AND, TRUE for OR); the right side is not evaluated once the left has it."""

    absorbing: bool
    left: Expr
    right: Expr

    def evaluate(self, props: Properties) -> Value:
        left = self.left.evaluate(props)
        if left is self.absorbing:
            return left
        right = self.right.evaluate(props)
        if right is self.absorbing:
            return right
        return None if left is None or right is None else not self.absorbing


def And(left: Expr, right: Expr) -> Logic:
    return Logic(False, left, right)


def Or(left: Expr, right: Expr) -> Logic:
    return Logic(True, left, right)


@dataclass(frozen=True, slots=True)
class Equal(BooleanExpr):
    """``=`` and IS NULL. Unknown only when the *left* side alone is null; null = null is TRUE."""

    left: Expr
    right: Expr

    def evaluate(self, props: Properties) -> Value:
        left = self.left.evaluate(props)
        right = self.right.evaluate(props)
        if left is None or right is None:
            if left is None and right is None:
                return True
            return None if left is None else False
        if javavalues.java_equals(left, right):
            return True
        return javavalues.compare(left, right) == 0


_ORDERINGS: Final[dict[str, Callable[[int], bool]]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


@dataclass(frozen=True, slots=True)
class Ordering(BooleanExpr):
    """``> >= < <=``: two Strings are compared as Doubles (a non-number throws)."""

    op: str
    left: Expr
    right: Expr

    def evaluate(self, props: Properties) -> Value:
        left = self.left.evaluate(props)
        if left is None:
            return None
        right = self.right.evaluate(props)
        if right is None:
            return None
        if type(left) is str and type(right) is str:
            left, right = javavalues.parse_double(left), javavalues.parse_double(right)
        return _ORDERINGS[self.op](javavalues.compare(left, right))


@dataclass(frozen=True, slots=True)
class In(BooleanExpr):
    """``p [NOT] IN (...)``: unknown unless the property is a String, even for NOT IN."""

    operand: Property
    values: frozenset[str]
    negated: bool

    def evaluate(self, props: Properties) -> Value:
        value = self.operand.evaluate(props)
        if type(value) is not str:
            return None
        return (value in self.values) != self.negated


# --- building the tree (RocketMQ's parse-time checks) -------------------------------------------


class _Refused(Exception):
    """A parse-time check failed; becomes FilterSyntaxError with the node's position."""


def _as_condition(node: Expr) -> BooleanExpr:
    if isinstance(node, BooleanExpr):
        return node
    if isinstance(node, Property):
        return BooleanCast(node)
    raise _Refused(f"Expression will not result in a boolean value: {_show(node)}")


def _check_orderable(node: Expr) -> None:
    if isinstance(node, Constant):
        if isinstance(node.value, (JInt, JLong, float)):
            return
        raise _Refused(f"Value '{_show(node)}' cannot be compared.")
    if isinstance(node, BooleanExpr):
        raise _Refused(f"Value '{_show(node)}' cannot be compared.")


def _equal(left: Expr, right: Expr) -> Equal:
    """``=`` (and ``<>``, its negation): neither side the NULL literal, no TRUE = 'x'."""
    for side in (left, right):
        if isinstance(side, BooleanConstant) and side.value is None:
            raise _Refused("'NULL' cannot be compared.")
    if isinstance(left, BooleanConstant) and isinstance(right, Constant):
        raise _Refused(f"'{_show(left)}' cannot be compared with '{_show(right)}'")
    return Equal(left, right)


def _ordering(op: str, left: Expr, right: Expr) -> Ordering:
    _check_orderable(left)
    _check_orderable(right)
    return Ordering(op, left, right)


def _between(value: Expr, low: Expr, high: Expr) -> BooleanExpr:
    constants = (Constant, BooleanConstant)
    if isinstance(low, constants) and isinstance(high, constants):
        if low.value is None or high.value is None:
            raise _Refused("Illegal values of between, values can not be null!")
        try:
            inverted = javavalues.compare(high.value, low.value) < 0
        except EvaluationError as exc:
            raise _Refused(str(exc)) from None
        if inverted:
            raise _Refused(
                f"Illegal values of between, left value({_show(low)}) must less than or equal to "
                f"right value({_show(high)})"
            )
    return And(_ordering(">=", value, low), _ordering("<=", value, high))


def _in(operand: Expr, literals: list[lark.Token], negated: bool) -> In:
    if not isinstance(operand, Property):
        raise _Refused(f"Expected a property for In expression, got: {_show(operand)}")
    return In(operand, frozenset(_unquote(t) for t in literals), negated)


def _decimal(text: str) -> Constant:
    digits = text[:-1] if text[-1] in "lL" else text
    number = int(digits)
    if number > javavalues.LONG_MAX:
        raise _Refused(f'For input string: "{digits}"')
    return Constant(JInt(number) if number <= javavalues.INT_MAX else JLong(number))


def _unquote(token: str) -> str:
    return token[1:-1].replace("''", "'")


def _show(node: Expr) -> str:
    if isinstance(node, (Constant, BooleanConstant)):
        value = node.value
        return "NULL" if value is None else str(value).upper() if isinstance(value, bool) else str(value)
    if isinstance(node, Property):
        return node.name
    return type(node).__name__


def _build(tree: lark.Tree | lark.Token) -> Expr:
    """The expression tree of a parse tree, checking what RocketMQ checks while building."""
    if isinstance(tree, lark.Token):  # pragma: no cover - every token is wrapped by a rule
        raise _Refused(f"unexpected token {tree!r}")
    kind, kids = tree.data, tree.children
    if kind in _LEAVES:
        return _LEAVES[kind](str(kids[0]))
    subtrees = [_build(k) for k in kids if isinstance(k, lark.Tree)]
    strings = [k for k in kids if isinstance(k, lark.Token) and k.type == "STRING"]
    return _NODES[kind](subtrees, strings)


_LEAVES: Final[dict[str, Callable[[str], Expr]]] = {
    "string": lambda t: Constant(_unquote(t)),
    "decimal": _decimal,
    "double": lambda t: Constant(float(t)),
    "true": lambda t: BooleanConstant(True),
    "false": lambda t: BooleanConstant(False),
    "null": lambda t: BooleanConstant(None),
    "prop": Property,
}

_NODES: Final[dict[str, Callable[[list[Expr], list[lark.Token]], Expr]]] = {
    "start": lambda e, s: _as_condition(e[0]),
    "or_": lambda e, s: Or(_as_condition(e[0]), _as_condition(e[1])),
    "and_": lambda e, s: And(_as_condition(e[0]), _as_condition(e[1])),
    "eq": lambda e, s: _equal(e[0], e[1]),
    "ne": lambda e, s: Not(_equal(e[0], e[1])),
    "is_null": lambda e, s: Equal(e[0], BooleanConstant(None)),
    "is_not_null": lambda e, s: Not(Equal(e[0], BooleanConstant(None))),
    "gt": lambda e, s: _ordering(">", e[0], e[1]),
    "ge": lambda e, s: _ordering(">=", e[0], e[1]),
    "lt": lambda e, s: _ordering("<", e[0], e[1]),
    "le": lambda e, s: _ordering("<=", e[0], e[1]),
    "between": lambda e, s: _between(e[0], e[1], e[2]),
    "not_between": lambda e, s: Or(_ordering("<", e[0], e[1]), _ordering(">", e[0], e[2])),
    "in_": lambda e, s: _in(e[0], s, False),
    "not_in": lambda e, s: _in(e[0], s, True),
    "neg": lambda e, s: Negate(e[0]),
    "not_": lambda e, s: Not(_as_condition(e[0])),
}


# --- parsing -------------------------------------------------------------------------------------


def _tokens(text: str) -> Iterator[lark.Token]:
    return _PARSER.lex(text, dont_ignore=False)


def _parse_tree(text: str) -> lark.Tree:
    """Feed tokens until one cannot continue the expression; stop there if it is complete.

    This is JavaCC's behaviour: an LL parser returns as soon as the next token fits no loop, so
    trailing input is never looked at beyond that one token. ``NOT`` after an operand continues
    only if ``BETWEEN`` or ``IN`` follows (JavaCC's two-token lookahead).
    """
    parser = _PARSER.parse_interactive(text)
    tokens = _tokens(text)
    pending: list[lark.Token] = []
    while True:
        token = pending.pop() if pending else next(tokens, None)
        if token is None:
            break
        accepts = parser.accepts()
        fits = token.type in accepts
        if fits and token.type == "NOT" and "BETWEEN" in accepts:
            following = next(tokens, None)
            fits = following is not None and following.type in _AFTER_NOT_INFIX
            if following is not None:
                pending.append(following)
        if not fits:
            if "$END" in accepts:
                break
            raise FilterSyntaxError(_encountered(token, accepts))
        parser.feed_token(token)
    try:
        return parser.feed_eof()
    except UnexpectedInput:
        raise FilterSyntaxError(f'Encountered "<EOF>" at line {_end_line(text)}, column {_end_column(text)}.')\
            from None


def _encountered(token: lark.Token, accepts: set[str]) -> str:
    expected = ", ".join(sorted(_terminal_text(a) for a in accepts if a != "$END"))
    return (f'Encountered "{token.value}" at line {token.line}, column {token.column}. '
            f"Was expecting one of: {expected}")


def _terminal_text(name: str) -> str:
    """How a terminal reads in an error message: its literal text, or its name for a pattern."""
    pattern = _PARSER.get_terminal(name).pattern
    return f'"{pattern.value}"' if pattern.type == "str" else f"<{name}>"


def _end_line(text: str) -> int:
    return text.count("\n") + 1


def _end_column(text: str) -> int:
    return len(text) - (text.rfind("\n") + 1) + 1


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled SQL92 selector."""

    text: str
    expression: BooleanExpr

    def matches(self, props: Properties) -> bool:
        """True only when the expression is exactly TRUE; an evaluation error is no match."""
        try:
            return self.expression.evaluate(props) is True
        except EvaluationError:
            return False

    def evaluate(self, props: Properties) -> Value:
        """The three-valued result (raises EvaluationError where Java throws)."""
        return self.expression.evaluate(props)


def parse(text: str) -> Selector:
    """Compile ``text`` (not cached); FilterSyntaxError names what went wrong and where."""
    try:
        tree = _parse_tree(text)
        expression = _build(tree)
    except _Refused as exc:
        raise FilterSyntaxError(str(exc)) from None
    except UnexpectedInput as exc:
        raise FilterSyntaxError(_lexical(text, exc)) from None
    except LarkError as exc:  # pragma: no cover - any other lark failure is still a bad selector
        raise FilterSyntaxError(str(exc)) from None
    assert isinstance(expression, BooleanExpr)
    return Selector(text, expression)


def _lexical(text: str, exc: UnexpectedInput) -> str:
    line, column = getattr(exc, "line", 1), getattr(exc, "column", 1)
    pos = getattr(exc, "pos_in_stream", None)
    char = text[pos] if isinstance(pos, int) and 0 <= pos < len(text) else "<EOF>"
    return f'Lexical error at line {line}, column {column}.  Encountered: "{char}"'


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _compile_cached(text: str) -> Selector | FilterSyntaxError:
    try:
        return parse(text)
    except FilterSyntaxError as exc:
        return exc


def compile_selector(text: str) -> Selector:
    """``parse`` with RocketMQ's cache: each distinct text is compiled once."""
    result = _compile_cached(text)
    if isinstance(result, FilterSyntaxError):
        raise FilterSyntaxError(str(result))
    return result

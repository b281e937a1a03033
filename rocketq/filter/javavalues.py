"""Java's boxed values as a RocketMQ SQL92 filter sees them, and its comparison with conversion.

A filter compares constants of the expression (Integer, Long, Double, String, Boolean) with
message properties, which are always Strings. RocketMQ compares them the way ActiveMQ's
``ComparisonExpression`` does: two values of different classes are converted up to a common
class first (Integer → Long → Double; a String becomes the other side's number type), and a
String that is not a number *throws*, which the broker counts as "no match". Python's ``int``
cannot tell Integer from Long, and the difference is visible (``'3000000000' = 1`` throws because
Integer.valueOf fails, ``'3000000000' = 1L`` does not), so the two Java integer classes are
distinct ``int`` subclasses here; a Double is a ``float``.
"""

from __future__ import annotations

import re
import struct
from typing import Final

INT_MIN: Final = -(2**31)
INT_MAX: Final = 2**31 - 1
LONG_MIN: Final = -(2**63)
LONG_MAX: Final = 2**63 - 1


class JInt(int):
    """A java.lang.Integer."""

    __slots__ = ()


class JLong(int):
    """A java.lang.Long."""

    __slots__ = ()


Value = JInt | JLong | float | str | bool | None
"""What an expression evaluates to; None is SQL's unknown (Java's null)."""


class EvaluationError(Exception):
    """Java threw while evaluating (a NumberFormatException, a ClassCastException): no match."""


_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
)
_JAVA_HEX_DOUBLE = re.compile(r"([+-]?)(0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+)[fFdD]?")


def _wrap(value: int, low: int, bits: int) -> int:
    """Two's-complement overflow, as Java's int and long arithmetic does."""
    return (value - low) % (1 << bits) + low


def negate(value: JInt | JLong) -> JInt | JLong:
    if type(value) is JInt:
        return JInt(_wrap(-value, INT_MIN, 32))
    return JLong(_wrap(-value, LONG_MIN, 64))


def parse_int(text: str) -> JInt:
    """Integer.valueOf: an optional sign and decimal digits, in range; nothing else (no spaces)."""
    number = _parse_integral(text)
    if not INT_MIN <= number <= INT_MAX:
        raise EvaluationError(f'For input string: "{text}"')
    return JInt(number)


def parse_long(text: str) -> JLong:
    number = _parse_integral(text)
    if not LONG_MIN <= number <= LONG_MAX:
        raise EvaluationError(f'For input string: "{text}"')
    return JLong(number)


def _parse_integral(text: str) -> int:
    if not _JAVA_INTEGER.fullmatch(text):
        raise EvaluationError(f'For input string: "{text}"')
    return int(text)


def parse_double(text: str) -> float:
    """Double.valueOf: Java trims chars <= U+0020, accepts NaN, Infinity, hex floats, d/f suffixes."""
    trimmed = text.strip("".join(chr(c) for c in range(0x21)))
    if _JAVA_DOUBLE.fullmatch(trimmed):
        # only a decimal number can end in a suffix letter: NaN and Infinity end in N and y
        return float(trimmed[:-1] if trimmed[-1] in "fFdD" else trimmed)
    hexed = _JAVA_HEX_DOUBLE.fullmatch(trimmed)
    if hexed:
        magnitude = float.fromhex(hexed.group(2))
        return -magnitude if hexed.group(1) == "-" else magnitude
    raise EvaluationError(f'For input string: "{text}"')


def parse_boolean(text: str) -> bool:
    """Boolean.valueOf: true only for "true" in any case; never throws."""
    return text.lower() == "true"


def _double_bits(value: float) -> int:
    """Double.doubleToLongBits: every NaN is the one canonical NaN."""
    if value != value:
        return 0x7FF8000000000000
    return int(struct.unpack(">q", struct.pack(">d", value))[0])


def _compare_same(left: object, right: object) -> int:
    if type(left) is float:
        assert isinstance(right, float)
        if left < right:
            return -1
        if left > right:
            return 1
        # equal, or NaN: Double.compareTo orders by bits (-0.0 < 0.0, NaN above everything)
        a, b = _double_bits(left), _double_bits(right)
        return (a > b) - (a < b)
    return (left > right) - (left < right)  # type: ignore[operator]


def java_equals(left: Value, right: Value) -> bool:
    """Object.equals of two non-null boxed values: same class and same value (Double by bits)."""
    if type(left) is not type(right):
        return False
    if type(left) is float:
        assert isinstance(right, float)
        return _double_bits(left) == _double_bits(right)
    return left == right


def compare(left: Value, right: Value) -> int:
    """ComparisonExpression.__compare with string conversion on: the sign of left - right.

    Values of classes with no conversion between them compare as -1 (so ``<`` holds and ``=``
    does not). Raises EvaluationError where Java throws.
    """
    lc, rc = type(left), type(right)
    if lc is not rc:
        if lc is bool:
            if rc is str:
                # Java casts the Boolean itself to String here: a ClassCastException
                raise EvaluationError("java.lang.Boolean cannot be cast to java.lang.String")
            return -1
        if lc is JInt:
            if rc is JLong:
                left = JLong(left)  # type: ignore[arg-type]
            elif rc is float:
                left = float(left)  # type: ignore[arg-type]
            elif rc is str:
                right = parse_int(right)  # type: ignore[arg-type]
            else:
                return -1
        elif lc is JLong:
            if rc is JInt:
                right = JLong(right)  # type: ignore[arg-type]
            elif rc is float:
                left = float(left)  # type: ignore[arg-type]
            elif rc is str:
                right = parse_long(right)  # type: ignore[arg-type]
            else:
                return -1
        elif lc is float:
            if rc is JInt or rc is JLong:
                right = float(right)  # type: ignore[arg-type]
            elif rc is str:
                right = parse_double(right)  # type: ignore[arg-type]
            else:
                return -1
        elif lc is str and rc in _STRING_TO:
            left = _STRING_TO[rc](left)  # type: ignore[arg-type]
        else:
            return -1
    return _compare_same(left, right)


_STRING_TO: Final = {bool: parse_boolean, JInt: parse_int, JLong: parse_long, float: parse_double}
"""How a String is converted to the class of the value it is compared with."""

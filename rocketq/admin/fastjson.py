"""Reading JSON the way Java's fastjson writes RocketMQ's admin bodies.

RocketMQ serialises its remoting bodies with fastjson, which goes beyond JSON in two places
that admin answers hit:

* A map keyed by an object is written with the object itself as the key. ``ConsumeStats``,
  ``TopicStatsTable`` and the reset-offset answer are ``Map<MessageQueue, ...>``, so they look
  like ``{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":5}}}``.
* A map keyed by a number is written with a bare number as the key:
  ``"brokerAddrs":{0:"10.0.0.1:10911"}``.

``loads`` reads standard JSON plus exactly these two key forms, and nothing else: no comments,
no single quotes, no trailing commas, no NaN. An object used as a key must hold only scalars
(strings, numbers, booleans, null), as a MessageQueue does; it becomes an ``ObjectKey``, which is
hashable and compares equal regardless of field order. A number key becomes an ``int``. Any
other deviation raises ``FastJsonError`` with the character position.

Standard JSON takes the fast path through orjson; only bodies orjson refuses are re-read by the
parser here. Either way the result is the same for the same text (the tests check this), with
one rule for repeated keys: the last one wins, as in fastjson and orjson.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

import orjson

MAX_DEPTH: Final = 128
"""Deepest nesting accepted; RocketMQ bodies nest a handful of levels."""
MAX_INPUT_SIZE: Final = 64 * 1024 * 1024
"""Largest text accepted; a remoting frame is at most 16 MiB anyway."""

Scalar = str | int | float | bool | None

_WHITESPACE = " \t\n\r"
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_LITERALS: Final = {"true": True, "false": False, "null": None}


class FastJsonError(ValueError):
    """The text is neither JSON nor fastjson's object-key / number-key extension of it."""


@dataclass(frozen=True, slots=True)
class ObjectKey:
    """An object written as a map key: its fields, sorted by name so order does not matter."""

    fields: tuple[tuple[str, Scalar], ...]

    @classmethod
    def of(cls, mapping: dict[str, Scalar]) -> ObjectKey:
        return cls(tuple(sorted(mapping.items(), key=lambda item: item[0])))

    def as_dict(self) -> dict[str, Scalar]:
        return dict(self.fields)

    def get(self, name: str, default: Scalar = None) -> Scalar:
        for key, value in self.fields:
            if key == name:
                return value
        return default


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a fastjson body. Objects become dicts whose keys are str, int or ObjectKey."""
    if len(data) > MAX_INPUT_SIZE:
        raise FastJsonError(f"body of {len(data)} bytes exceeds {MAX_INPUT_SIZE}")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FastJsonError(f"body is not UTF-8: {exc}") from None
    return parse(text)


def parse(text: str) -> Any:
    """The parser alone, without the orjson fast path (``loads`` falls back to it)."""
    if len(text) > MAX_INPUT_SIZE:
        raise FastJsonError(f"text of {len(text)} characters exceeds {MAX_INPUT_SIZE}")
    return _Parser(text).document()


class _Parser:
    """Recursive descent over the text; ``pos`` always points at the next unread character."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def document(self) -> Any:
        value = self.value(0)
        self.skip()
        if self.pos != len(self.text):
            self.fail("unexpected text after the value")
        return value

    def fail(self, what: str) -> None:
        raise FastJsonError(f"{what} at position {self.pos}")

    def skip(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            self.fail(f"expected {char!r}")
        self.pos += 1

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH}")
        char = self.peek()
        if char == "{":
            return self.object(depth + 1)
        if char == "[":
            return self.array(depth + 1)
        if char == '"':
            return self.string()
        if char == "-" or char.isdigit():
            return self.number()
        return self.literal()

    def object(self, depth: int) -> dict[Any, Any]:
        self.pos += 1
        out: dict[Any, Any] = {}
        if self.peek() == "}":
            self.pos += 1
            return out
        while True:
            key = self.key(depth)
            self.expect(":")
            out[key] = self.value(depth)
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}")
            return out

    def key(self, depth: int) -> str | int | ObjectKey:
        char = self.peek()
        if char == '"':
            return self.string()
        if char == "-" or char.isdigit():
            number = self.number()
            if not isinstance(number, int):
                self.fail("a number used as a key must be an integer")
            return int(number)
        if char == "{":
            start = self.pos
            fields = self.object(depth + 1)
            if not all(isinstance(k, str) and isinstance(v, Scalar) for k, v in fields.items()):
                self.pos = start
                self.fail("an object used as a key may hold only string keys and scalar values")
            return ObjectKey.of(fields)
        self.fail("expected a string, integer or object as key")
        raise AssertionError("unreachable")

    def array(self, depth: int) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        if self.peek() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value(depth))
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("]")
            return out

    def string(self) -> str:
        try:
            value, self.pos = json.decoder.scanstring(self.text, self.pos + 1, True)  # type: ignore[attr-defined]
        except json.JSONDecodeError as exc:
            raise FastJsonError(f"bad string at position {exc.pos}: {exc.msg}") from None
        if _SURROGATE.search(value):
            # "\ud800" alone is valid JSON escaping but not text; it could never be printed
            raise FastJsonError(f"string ending at position {self.pos} holds an unpaired surrogate")
        return str(value)

    def number(self) -> int | float:
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            self.fail("bad number")
            raise AssertionError("unreachable")
        self.pos = match.end()
        raw = match.group(0)
        try:
            if match.group(1) is None and match.group(2) is None:
                return int(raw)
            number = float(raw)
        except ValueError as exc:  # beyond Python's int digit limit
            raise FastJsonError(f"bad number at position {match.start()}: {exc}") from None
        if number in (float("inf"), float("-inf")):
            raise FastJsonError(f"number out of range at position {match.start()}")
        return number

    def literal(self) -> Any:
        for word, value in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return value
        self.fail("unexpected character" if self.pos < len(self.text) else "unexpected end of text")
        raise AssertionError("unreachable")

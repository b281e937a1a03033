"""Reading untrusted JSON (custom resources) into typed values, collecting every problem.

A ``Reader`` never raises on bad input: each accessor returns the default when a value is
missing or wrong and records a line ``<path>: <what is wrong>``. Parsers run every field
through one reader and hand back all lines at once, so a user fixes a spec in one edit
instead of one error per reconcile.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any, Final, TypeVar

DNS_1035: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_1123_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
SHOWN_LENGTH: Final = 60

E = TypeVar("E", bound=enum.Enum)


def shown(value: Any) -> str:
    """A value as it appears in an error line, cut short so a huge value cannot flood status."""
    text = repr(value)
    return text if len(text) <= SHOWN_LENGTH else text[: SHOWN_LENGTH - 3] + "..."


class Reader:
    """Reads typed fields out of untrusted JSON, remembering every problem with its path."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.errors.append(f"{path}: {message}")

    def mapping(self, raw: Any, path: str) -> Mapping[str, Any]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            self.fail(path, f"must be an object, got {shown(raw)}")
            return {}
        return raw

    def integer(self, raw: Any, path: str, default: int, low: int, high: int) -> int:
        if raw is None:
            return default
        if isinstance(raw, bool) or not isinstance(raw, int):
            self.fail(path, f"must be an integer, got {shown(raw)}")
            return default
        if not low <= raw <= high:
            self.fail(path, f"must be between {low} and {high}, got {raw}")
            return default
        return raw

    def boolean(self, raw: Any, path: str, default: bool) -> bool:
        if raw is None:
            return default
        if not isinstance(raw, bool):
            self.fail(path, f"must be true or false, got {shown(raw)}")
            return default
        return raw

    def string(self, raw: Any, path: str, default: str | None, pattern: re.Pattern[str] | None = None,
               max_length: int = 253) -> str | None:
        if raw is None:
            return default
        if not isinstance(raw, str) or not raw:
            self.fail(path, f"must be a non-empty string, got {shown(raw)}")
            return default
        if len(raw) > max_length:
            self.fail(path, f"must be at most {max_length} characters, got {len(raw)}")
            return default
        if pattern is not None and not pattern.match(raw):
            self.fail(path, f"{raw!r} does not match {pattern.pattern}")
            return default
        return raw

    def choice(self, raw: Any, path: str, kind: type[E], default: E) -> E:
        if raw is None:
            return default
        for member in kind:
            if member.value == raw:
                return member
        allowed = ", ".join(str(m.value) for m in kind)
        self.fail(path, f"must be one of {allowed}, got {shown(raw)}")
        return default

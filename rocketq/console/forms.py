"""Reading form and query values: each helper returns a typed value or raises ``InvalidInput``
naming the field, so a bad value becomes a 400 page that says which field and why."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rocketq.admin import adminbodies, timestamps
from rocketq.admin.errors import ArgumentError
from rocketq.console.failures import InvalidInput

Form = Mapping[str, Any]


def text(form: Form, name: str, *, required: bool = True, max_length: int = 4096) -> str:
    value = form.get(name, "")
    if not isinstance(value, str):
        raise InvalidInput(f"{name}: expected text")
    value = value.strip()
    if required and not value:
        raise InvalidInput(f"{name}: required")
    if len(value) > max_length:
        raise InvalidInput(f"{name}: at most {max_length} characters")
    return value


def integer(form: Form, name: str, *, low: int, high: int, default: int | None = None) -> int:
    raw = text(form, name, required=default is None)
    if not raw and default is not None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name}: {raw!r} is not a whole number") from None
    if not low <= value <= high:
        raise InvalidInput(f"{name}: {value} is outside {low}..{high}")
    return value


def flag(form: Form, name: str) -> bool:
    return text(form, name, required=False) in ("on", "true", "1", "yes")


def topic(form: Form, name: str = "topic") -> str:
    return _checked(form, name, adminbodies.check_topic)


def group(form: Form, name: str = "group") -> str:
    return _checked(form, name, adminbodies.check_group)


def _checked(form: Form, name: str, check: Callable[[str], str]) -> str:
    """A topic or group name, checked by RocketMQ's naming rules (``rocketq.protocol.namerules``)."""
    try:
        return check(text(form, name))
    except ArgumentError as exc:
        raise InvalidInput(f"{name}: {exc}") from None


def moment(form: Form, name: str) -> int:
    """A time as milliseconds: ``now``, epoch milliseconds, mqadmin's ``yyyy-MM-dd#HH:mm:ss:SSS``,
    or what an HTML ``datetime-local`` input sends (``2024-03-05T10:20`` or with seconds), local time."""
    raw = text(form, name)
    if "T" in raw and "#" not in raw:
        date, _, clock = raw.partition("T")
        hms = clock[:8] if clock.count(":") == 2 else f"{clock[:5]}:00"
        raw = f"{date}#{hms}:000"
    try:
        return timestamps.parse(raw)
    except (timestamps.TimestampError, ValueError) as exc:
        raise InvalidInput(f"{name}: {exc}") from None

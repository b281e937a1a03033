"""``whiteRemoteAddress`` patterns, as RocketMQ 4.9's ``RemoteAddressStrategyFactory`` reads them.

A pattern is one of:

* blank — matches nothing (an account with a blank pattern must sign);
* ``*``, ``*.*.*.*`` or ``*:*:*:*:*:*:*:*`` — matches every address;
* ``192.168.1.{1,2,3}`` — the last IPv4 segment as a set;
* ``10.0.0.1,10.0.0.2`` — a list of full addresses;
* an IPv4 pattern with ``*`` or a range ``a-b`` in segment 2, 3 or 4: the *first* such segment
  is the range, the segments before it must be equal, and the segments after it are ignored
  (``192.168.*.*``, ``192.168.1.10-20``, ``10.*`` — RocketMQ's own behaviour);
* a plain address — equal after normalising (IPv6 addresses are compared expanded).

A malformed pattern raises ``AddressPatternError``; the file parser names the field. IPv6
ranges are not supported (RocketMQ 4.9's are rarely used and its rules for them are irregular):
they are refused with that error rather than silently matching nothing.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final

MATCH_ALL: Final = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})
SEGMENT_MAX: Final = 255


class AddressPatternError(ValueError):
    """A ``whiteRemoteAddress`` or global white address that is not a RocketMQ pattern."""


@dataclass(frozen=True, slots=True)
class Pattern:
    """A parsed pattern; ``match`` takes the peer's IP without its port."""

    text: str
    everything: bool = False
    exact: frozenset[str] = frozenset()
    range_head: tuple[int, ...] | None = None
    """The segments before the range segment; None when the pattern is not a range."""
    range_low: int = 0
    range_high: int = SEGMENT_MAX

    def match(self, ip: str) -> bool:
        if self.everything:
            return True
        if self.range_head is not None:
            return _in_range(self, ip)
        return bool(self.exact) and _normal(ip) in self.exact


NEVER: Final = Pattern("")


def parse(text: object) -> Pattern:
    """The pattern for a YAML value (None and blanks match nothing)."""
    if text is None:
        return NEVER
    if not isinstance(text, str | int | float):
        raise AddressPatternError(f"expected an address pattern, got {type(text).__name__}")
    raw = str(text).strip()
    if not raw:
        return NEVER
    if raw in MATCH_ALL:
        return Pattern(raw, everything=True)
    if raw.endswith("}"):
        return _braces(raw)
    if "," in raw:
        return Pattern(raw, exact=frozenset(_address(part, raw) for part in raw.split(",")))
    if ("*" in raw or "-" in raw) and ":" not in raw:
        return _range(raw)
    return Pattern(raw, exact=frozenset({_address(raw, raw)}))


def _braces(raw: str) -> Pattern:
    head, sep, last = raw.rpartition(".{")
    if not sep or _segments(head, raw, 3) is None:
        raise AddressPatternError(f"{raw!r}: expected a.b.c.{{d,e,...}}")
    members = last[:-1].split(",")
    return Pattern(raw, exact=frozenset(_address(f"{head}.{m.strip()}", raw) for m in members))


def _range(raw: str) -> Pattern:
    parts = raw.split(".")
    if len(parts) > 4:
        raise AddressPatternError(f"{raw!r}: an IPv4 pattern has at most 4 segments")
    for index in range(1, len(parts)):
        segment = parts[index].strip()
        bounds = _bounds(segment, raw)
        if bounds is not None:
            head = _segments(".".join(parts[:index]), raw, index)
            assert head is not None
            return Pattern(raw, range_head=head, range_low=bounds[0], range_high=bounds[1])
    raise AddressPatternError(f"{raw!r}: '*' or a range may stand in segments 2 to 4 only")


def _bounds(segment: str, raw: str) -> tuple[int, int] | None:
    if segment == "*":
        return 0, SEGMENT_MAX
    if "-" not in segment:
        return None
    low_text, _, high_text = segment.partition("-")
    low, high = _number(low_text, raw), _number(high_text, raw)
    if low > high:
        raise AddressPatternError(f"{raw!r}: range {segment} runs backwards")
    return low, high


def _segments(text: str, raw: str, count: int) -> tuple[int, ...] | None:
    parts = text.split(".")
    if len(parts) != count:
        return None
    return tuple(_number(p, raw) for p in parts)


def _number(text: str, raw: str) -> int:
    text = text.strip()
    if not text.isdigit() or int(text) > SEGMENT_MAX:
        raise AddressPatternError(f"{raw!r}: {text!r} is not a number from 0 to {SEGMENT_MAX}")
    return int(text)


def _address(text: str, raw: str) -> str:
    try:
        return _checked(text.strip())
    except ValueError:
        raise AddressPatternError(f"{raw!r}: {text.strip()!r} is not an IP address") from None


def _checked(text: str) -> str:
    return ipaddress.ip_address(text).exploded


def _normal(ip: str) -> str:
    try:
        return _checked(ip.strip("[]"))
    except ValueError:
        return ip


def _in_range(pattern: Pattern, ip: str) -> bool:
    parts = ip.split(".")
    head = pattern.range_head or ()
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return False
    numbers = tuple(int(p) for p in parts)
    return numbers[:len(head)] == head and pattern.range_low <= numbers[len(head)] <= pattern.range_high

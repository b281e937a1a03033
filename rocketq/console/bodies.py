"""A message body in the three forms the message page offers: text, pretty JSON, hex.

Bodies are bytes from producers the console does not trust: text is decoded with replacement
characters, JSON is only offered when the body parses as JSON, and everything is cut at
``MAX_SHOWN`` bytes so one huge message cannot make a page of megabytes. Pure functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

MAX_SHOWN: Final = 64 * 1024
HEX_ROW: Final = 16


@dataclass(frozen=True, slots=True)
class BodyViews:
    size: int
    truncated: bool
    text: str
    json: str | None
    hex: str


def views(body: bytes) -> BodyViews:
    shown = body[:MAX_SHOWN]
    text = shown.decode("utf-8", errors="replace")
    return BodyViews(len(body), len(body) > MAX_SHOWN, text, pretty_json(shown), hex_dump(shown))


def pretty_json(body: bytes) -> str | None:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, (dict, list)):
        return None  # a bare number or string is better read as text
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def hex_dump(body: bytes) -> str:
    """``offset  hex bytes  printable`` rows of ``HEX_ROW`` bytes, like ``xxd``."""
    rows = []
    for start in range(0, len(body), HEX_ROW):
        chunk = body[start:start + HEX_ROW]
        printable = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        rows.append(f"{start:08x}  {chunk.hex(' '):<{HEX_ROW * 3 - 1}}  {printable}")
    return "\n".join(rows)

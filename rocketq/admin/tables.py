"""Aligned text output in mqadmin's style.

mqadmin prints with ``printf("%-32s  %-4s ...")``: a header row of ``#Name`` columns, then one
row per item, every column left-aligned and padded. Fixed widths break on long topic names, so
here each column is as wide as its widest cell; the look is the same. Key/value blocks
(``brokerStatus``, ``queryMsgById``) print ``key`` padded to a fixed width, then ``: value``.
Pure functions: values in, text out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

COLUMN_GAP: Final = "  "
KEY_WIDTH: Final = 32
"""Width of the key column in key/value blocks (mqadmin's ``%-32s: %s``)."""


def cell(value: object) -> str:
    """How a value reads in a table: no Python reprs, booleans as Java prints them."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("\n", "\\n").replace("\r", "\\r")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Rows under ``#``-prefixed headers, each column padded to its widest cell."""
    text_rows = [[cell(v) for v in row] for row in rows]
    head = [f"#{h}" for h in headers]
    for row in text_rows:
        if len(row) != len(head):
            raise ValueError(f"row has {len(row)} cells for {len(head)} columns")
    widths = [max([len(h)] + [len(row[i]) for row in text_rows]) for i, h in enumerate(head)]
    lines = [COLUMN_GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [head, *text_rows]]
    return "\n".join(lines)


def pairs(items: Iterable[tuple[str, object]], key_width: int = KEY_WIDTH) -> str:
    """``key<padding>: value`` lines."""
    return "\n".join(f"{key:<{key_width}}: {cell(value)}" for key, value in items)

"""The broker's versioned tables: topics.json and subscriptionGroup.json, and their stamps.

Both files are ``{"<table>": {name: entry}, "dataVersion": {...}}``. The stamp itself
(``DataVersion``: timestamp, counter, stateVersion, its JSON) is ``rocketq.protocol.sharedbodies``,
shared with the name servers, which rebuild a broker's routes only when the stamp it registers
with changed. What is the broker's own: the clock stamps are taken from, and how a table file
loads. An entry that cannot be read is skipped with a warning, and a stamp that cannot be read
is replaced by a fresh one (a new stamp only makes the name servers rebuild once); refusing the
whole file would lose every other entry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rocketq.protocol.sharedbodies import BodyError, DataVersion
from rocketq.store import configfiles

log = logging.getLogger(__name__)

Entry = TypeVar("Entry")


def fresh() -> DataVersion:
    return DataVersion.new(_now_ms())


def bump(version: DataVersion) -> DataVersion:
    """The stamp after a change: now, one more change."""
    return version.next(_now_ms())


def loaded(raw: Any, path: Path) -> DataVersion:
    """The stamp a table file holds, or a fresh one when it has none or an unreadable one."""
    if raw is None:
        return fresh()
    try:
        return DataVersion.from_json(raw)
    except BodyError as exc:
        log.warning("unreadable dataVersion in %s, starting a new one: %s", path, exc)
        return fresh()


def load_table(
    path: Path, key: str, parse: Callable[[Any, str], Entry]
) -> tuple[dict[str, Entry], DataVersion] | None:
    """The readable entries of the table under ``key`` and the file's stamp; None without a table."""
    return parse_table(configfiles.read_json(path), path, key, parse)


def parse_table(
    raw: Any, path: Path, key: str, parse: Callable[[Any, str], Entry]
) -> tuple[dict[str, Entry], DataVersion] | None:
    """``load_table`` for a document already read (``path`` names it in warnings)."""
    if raw is None:
        return None
    table = (raw.get(key) or {}) if isinstance(raw, dict) else None
    if not isinstance(table, dict):
        log.warning("ignoring %s: not a %s wrapper", path, key)
        return None
    entries = {}
    for name, entry in table.items():
        try:
            entries[str(name)] = parse(entry, f"{key}[{name!r}]")
        except BodyError as exc:
            log.warning("ignoring unreadable entry %r in %s: %s", name, path, exc)
    return entries, loaded(raw.get("dataVersion"), path)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000

"""The broker's stamps on its topic and group tables: ``DataVersion`` on the wall clock.

The value itself (timestamp, counter, stateVersion, its JSON) is ``rocketq.protocol.bodies``,
shared with the name servers, which rebuild a broker's routes only when the stamp it registers
with changed. What is the broker's own: the clock the stamps are taken from, and that a table
file whose stamp cannot be read still loads, under a fresh stamp (a new stamp only makes the
name servers rebuild once; refusing the file would lose its topics).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from rocketq.protocol.bodies import BodyError, DataVersion

log = logging.getLogger(__name__)


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


def _now_ms() -> int:
    return time.time_ns() // 1_000_000

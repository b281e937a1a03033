"""Reading a broker's whole table in pages: RocketMQ 5's split metadata, from the asker's side.

GET_ALL_TOPIC_CONFIG and GET_ALL_SUBSCRIPTIONGROUP_CONFIG can be asked for one page at a time
(``rocketq.broker.metadatapages`` answers them). The asker names where the page starts (how
many entries it has seen), how many entries it wants, and the DataVersion it is reading under;
every answer carries the table's DataVersion and size (``totalTopicNum``/``totalGroupNum``). The
walk, as RocketMQ 5's ``MQClientAPIImpl``/``BrokerOuterAPI`` do it:

- the next page starts after the entries seen, under the DataVersion of the first page;
- a page under another DataVersion means the table changed between two pages: what was read is
  dropped and the walk starts again from 0 (a table that keeps changing ends the walk with an
  error after ``MAX_RESTARTS``, where RocketMQ's broker gives up on its call timeout);
- an answer without the size (RocketMQ 4.x) held the whole table;
- the walk ends when it has seen as many entries as the size, or a page came back empty.

``read`` can skip a table the asker already holds: given the DataVersion it has, the first page
asks for a single entry, and when that page's DataVersion is the same the walk stops there, so
an unchanged 50 000-topic table costs one answer of a few hundred bytes. A slave's metadata sync
(``rocketq.ha.metasync``) reads this way; RocketMQ 5's slave reads the whole table every period
and only then compares the versions. ``rocketq admin`` (``AdminClient``) reads without a version.

This module does no I/O: the caller's ``fetch`` sends one request and parses its answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

import orjson

from rocketq.protocol.sharedbodies import BodyError, DataVersion

E = TypeVar("E")

MAX_RESTARTS: Final = 8
"""Walks restarted by a changed table before giving up on this attempt."""
PROBE_SIZE: Final = 1
"""Entries asked for by a first page that only checks whether the table changed."""


@dataclass(frozen=True, slots=True)
class Page(Generic[E]):
    """One answer: its entries, the table's DataVersion and size (None: a broker that does not
    page, whose answer is the whole table)."""

    entries: Mapping[str, E]
    version: DataVersion | None
    total: int | None


@dataclass(frozen=True, slots=True)
class Table(Generic[E]):
    entries: dict[str, E]
    version: DataVersion | None


Fetch = Callable[[int, DataVersion | None, int], Awaitable[Page[E]]]
"""Ask for the page starting at ``seq``, read under ``version`` (None on the first page), of at
most ``max_num`` entries."""


async def read(fetch: Fetch[E], page_size: int, *, held: DataVersion | None = None) -> Table[E] | None:
    """The whole table, page by page; None when its DataVersion is ``held`` (nothing to copy)."""
    table: dict[str, E] = {}
    version: DataVersion | None = None
    restarts = 0
    size = PROBE_SIZE if held is not None else page_size
    while True:
        page = await fetch(len(table), version, size)
        size = page_size
        if held is not None and not table and version is None and page.version == held:
            return None  # the first answer: the asker holds this version already
        if page.total is None:
            return Table(dict(page.entries), page.version)
        if version is not None and page.version != version:
            restarts += 1
            if restarts > MAX_RESTARTS:
                raise BodyError(f"the table changed {restarts} times while it was read page by page")
            table, version = {}, page.version
            continue
        version = page.version
        table.update(page.entries)
        if len(table) >= page.total or not page.entries:
            return Table(table, version)


def version_text(version: DataVersion | None) -> str:
    """A page request's ``dataVersion`` field: the version as JSON, empty on the first page."""
    return orjson.dumps(version.to_json()).decode() if version is not None else ""


def total_of(field: str | None) -> int | None:
    """An answer's ``totalTopicNum``/``totalGroupNum``: None when absent (a broker that does not page)."""
    return int(field) if field is not None and field.isdigit() else None

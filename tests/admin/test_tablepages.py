"""Reading a table page by page (``rocketq.admin.tablepages``) against the broker's own paging
rules (``rocketq.broker.metadatapages``): the walk returns exactly the table, restarts when the
table changes under it, and stops after one small page when the asker holds the version."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.admin import tablepages
from rocketq.broker import metadatapages
from rocketq.protocol.sharedbodies import BodyError, DataVersion


class PagedServer:
    """A table served as a broker serves it; ``changes`` maps a request number to a new table
    that replaces the old one just before that request is answered."""

    def __init__(self, table: dict[str, int], changes: dict[int, dict[str, int]] | None = None,
                 *, pages: bool = True) -> None:
        self.table = table
        self.version = DataVersion(1000, 1)
        self.changes = changes or {}
        self.pages = pages
        self.asked: list[tuple[int, int]] = []
        """(seq, max_num) of every request, in order."""

    async def fetch(self, seq: int, version: DataVersion | None, max_num: int) -> tablepages.Page[int]:
        if len(self.asked) in self.changes:
            self.table = self.changes[len(self.asked)]
            self.version = self.version.next(self.version.timestamp + 1)
        self.asked.append((seq, max_num))
        if not self.pages:  # RocketMQ 4.x: the whole table, no total
            return tablepages.Page(dict(self.table), self.version, None)
        request = metadatapages.requested(seq, tablepages.version_text(version) or None, max_num)
        assert request is not None
        names = metadatapages.page_names(sorted(self.table), self.version, request)
        return tablepages.Page({n: self.table[n] for n in names}, self.version, len(self.table))


def table_of(size: int, tag: int = 0) -> dict[str, int]:
    return {f"T{i:05d}": i + tag for i in range(size)}


@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 60), page=st.integers(1, 9), change_at=st.integers(0, 12),
       new_size=st.integers(0, 60))
async def test_the_walk_returns_the_table_as_it_ends_up(size: int, page: int, change_at: int, new_size: int) -> None:
    server = PagedServer(table_of(size), {change_at: table_of(new_size, 1000)})
    table = await tablepages.read(server.fetch, page)
    assert table is not None
    assert table.entries == server.table
    assert table.version == server.version


async def test_an_unchanged_table_costs_one_probe_of_one_entry() -> None:
    server = PagedServer(table_of(5000))
    assert await tablepages.read(server.fetch, 2000, held=DataVersion(1000, 1)) is None
    assert server.asked == [(0, tablepages.PROBE_SIZE)]


async def test_a_changed_table_is_read_on_from_the_probe() -> None:
    server = PagedServer(table_of(5000))
    table = await tablepages.read(server.fetch, 2000, held=DataVersion(999, 0))
    assert table is not None and table.entries == server.table
    assert server.asked == [(0, 1), (1, 2000), (2001, 2000), (4001, 2000)]


async def test_a_broker_that_does_not_page_answers_whole_and_is_compared_by_version() -> None:
    server = PagedServer(table_of(30), pages=False)
    assert await tablepages.read(server.fetch, 7, held=DataVersion(1000, 1)) is None
    table = await tablepages.read(server.fetch, 7, held=DataVersion(5, 5))
    assert table is not None and table.entries == server.table
    assert len(server.asked) == 2


async def test_a_table_that_never_stops_changing_ends_the_walk() -> None:
    server = PagedServer(table_of(10), {n: table_of(10, n) for n in range(1, 40)})
    with pytest.raises(BodyError, match="changed"):
        await tablepages.read(server.fetch, 3)

"""Whole-table admin answers in pages: RocketMQ 5's split metadata.

GET_ALL_TOPIC_CONFIG and GET_ALL_SUBSCRIPTIONGROUP_CONFIG answer a broker's whole table. At
50 000 topics that is one 8 MB body; RocketMQ 5 (``enableSplitMetadata``, on by default) lets
the asker page through it instead, and its clients and slaves do (``MQClientAPIImpl.
getAllTopicConfig``, ``BrokerOuterAPI``). The rules, as RocketMQ 5's ``AdminBrokerProcessor``
and ``TopicConfigManager.subTopicConfigTable`` apply them:

- A request with none of ``topicSeq``, ``dataVersion``, ``maxTopicNum`` (every 4.x asker) gets
  the whole table, as before.
- Otherwise the entries are taken in name order, ``[seq, seq + n)`` with
  ``n = min(SPLIT_METADATA_SIZE, maxTopicNum)``. ``seq`` counts from 0 and only holds while the
  asker's ``dataVersion`` is the table's: a missing or different one restarts at 0, and the asker
  (which sees the new version in the body) starts over.
- Every answer, whole or paged, carries ``totalTopicNum`` (the table's size) in its header: an
  asker stops when it has seen that many. Groups are the same with ``groupSeq``/``maxGroupNum``/
  ``totalGroupNum``.

Where rocketq differs: the names are sorted once per change of the table (``SortedNames``), not
for every page, so a page costs its own size; a page size below 1 counts as 1 (Java fails on
it), and a negative ``seq`` as 0. ``enableSplitMetadata`` and ``splitMetadataSize`` are not
settings: paging is always offered, at RocketMQ's default page size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson

from rocketq.protocol.sharedbodies import BodyError, DataVersion

SPLIT_METADATA_SIZE: Final = 2000
"""Most entries in one page (RocketMQ 5's ``splitMetadataSize`` default), whatever is asked."""


class Entry(Protocol):
    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class PageRequest:
    seq: int
    data_version: str | None
    max_num: int | None


def requested(seq: int | None, data_version: str | None, max_num: int | None) -> PageRequest | None:
    """The page a request asks for; None when it asks for the whole table (no paging field)."""
    if seq is None and data_version is None and max_num is None:
        return None
    return PageRequest(seq or 0, data_version, max_num)


class SortedNames:
    """A table's names in order, sorted again only after the table changed.

    "Changed" is seen without help from the table's owner: every change sets a new DataVersion
    object, and a slave adopting its master's table sets a new dict too.
    """

    def __init__(self) -> None:
        self._table: Mapping[str, Any] | None = None
        self._version: DataVersion | None = None
        self._names: list[str] = []

    def of(self, table: Mapping[str, Any], version: DataVersion) -> list[str]:
        if table is not self._table or version is not self._version or len(table) != len(self._names):
            self._names = sorted(table)
            self._table, self._version = table, version
        return self._names


def page_names(names: Sequence[str], version: DataVersion, request: PageRequest) -> Sequence[str]:
    """The names on the requested page (``names`` sorted, ``version`` the table's)."""
    begin = max(request.seq, 0) if _same_version(request.data_version, version) else 0
    size = min(SPLIT_METADATA_SIZE, request.max_num if request.max_num is not None else SPLIT_METADATA_SIZE)
    return names[begin:begin + max(size, 1)]


def page_document(table: Mapping[str, Entry], version: DataVersion, names: Sequence[str],
                  table_key: str) -> dict[str, Any]:
    """The answer's body for one page: the wrapper the whole table is sent in, holding ``names``."""
    return {table_key: {name: table[name].to_json() for name in names}, "dataVersion": version.to_json()}


def _same_version(text: str | None, version: DataVersion) -> bool:
    if not text:
        return False
    try:
        return DataVersion.from_json(orjson.loads(text)) == version
    except (orjson.JSONDecodeError, BodyError):
        return False

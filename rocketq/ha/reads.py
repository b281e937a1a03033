"""Which broker of a group a consumer should pull from next (PULL_MESSAGE's suggestWhichBrokerId).

A master serves pulls from memory as long as consumers read recent messages. A consumer far
behind reads old CommitLog pages from disk, which competes with the writes. With
``slaveReadEnable`` the master tells such a consumer to pull from a slave instead: a pull counts
as far behind when the bytes between the last message it got and the end of the CommitLog
exceed ``accessMessageInMemoryMaxRatio`` percent of the machine's memory. The suggestion is the
group's ``whichBrokerWhenConsumeSlowly`` (default 1), otherwise the group's ``brokerId``
(default 0, the master). Without ``slaveReadEnable`` it is always the master, and the SDK
pulls from a slave only when the route has no master (RocketMQ's rules; see
reference/semantics-facts.md §1).
"""

from __future__ import annotations

import os
import struct
from functools import cache

from rocketq.protocol import storedrecords
from rocketq.protocol.codes import MASTER_ID
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig
from rocketq.store.results import GetResult

_I64 = struct.Struct(">q")
FALLBACK_MEMORY = 8 << 30
"""Bytes of memory assumed when the machine will not say."""


@cache
def total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return FALLBACK_MEMORY


def behind_bytes(result: GetResult, commitlog_end: int) -> int:
    """CommitLog bytes after the last record of a pull answer (0 without records)."""
    if not result.buffers:
        return 0
    (phys,) = _I64.unpack_from(result.buffers[-1], storedrecords.PHYSICAL_OFFSET_POS)
    return max(0, commitlog_end - int(phys))


def suggest_broker_id(result: GetResult, commitlog_end: int, group: SubscriptionGroupConfig | None, *,
                      slave_read_enable: bool, max_ratio_percent: int, memory: int | None = None) -> int:
    if not slave_read_enable:
        return MASTER_ID
    limit = (memory if memory is not None else total_memory()) * max_ratio_percent // 100
    if behind_bytes(result, commitlog_end) > limit:
        return group.which_broker_when_consume_slowly if group is not None else 1
    return group.broker_id if group is not None else MASTER_ID

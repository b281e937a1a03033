"""A ``BrokerAdmin`` that shares each broker's topic and group tables between passes.

Every RocketMQTopic pass asks "what does this master have?" (``list_topics``, i.e. one
GET_ALL_TOPIC_CONFIG walk of the broker's whole table) to decide whether to write. With N topic
objects on a broker that is N full-table reads per round of passes: N^2 configs moved. This
wrapper answers ``list_topics`` / ``list_groups`` from one read per broker per ``ttl`` seconds
(``rocketq.ttlcache.TtlCache``: concurrent passes wait for the same read) and keeps that copy true to
the operator's own writes: a successful create/update or delete changes the cached table in
place. So a round of passes over N objects of one broker costs one table read plus one write
per object that differs, whatever N is.

What is not cached: every other call (permissions, lag, runtime info, registrations, DLedger
state) goes straight through; those drive failover, rolls and drains and must be current. A
call that fails drops the broker's cached tables, so the retry reads the broker again. Someone
else's change on a broker (mqadmin, another operator) is seen within ``ttl`` seconds.

The tables handed out are read-only views of the cached dicts (no copy per call); they may
change under a caller that holds one across an ``await``: read what you need at once.
"""

from __future__ import annotations

import time
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, TypeVar

from rocketq.ttlcache import TtlCache
from rocketq_operator import brokeradmin
from rocketq_operator.brokeradmin import BrokerAdminError, BrokerRuntime, DLedgerMember, GroupConfig, TopicConfig

TOPICS: Final = "topics"
GROUPS: Final = "groups"

C = TypeVar("C", TopicConfig, GroupConfig)
T = TypeVar("T")


class CachingBrokerAdmin:
    def __init__(self, inner: brokeradmin.BrokerAdmin, ttl: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._inner = inner
        self._topics: TtlCache[str, dict[str, TopicConfig]] = TtlCache(ttl, clock=clock)
        self._groups: TtlCache[str, dict[str, GroupConfig]] = TtlCache(ttl, clock=clock)

    def _forget(self, broker: str) -> None:
        self._topics.drop(broker)
        self._groups.drop(broker)

    async def _through(self, broker: str, call: Awaitable[T]) -> T:
        """``call``'s answer; if it fails, the broker's tables are read again next time."""
        try:
            return await call
        except BrokerAdminError:
            self._forget(broker)
            raise

    async def _read_topics(self, broker: str) -> dict[str, TopicConfig]:
        return dict(await self._through(broker, self._inner.list_topics(broker)))

    async def _read_groups(self, broker: str) -> dict[str, GroupConfig]:
        return dict(await self._through(broker, self._inner.list_groups(broker)))

    async def list_topics(self, broker: str) -> Mapping[str, TopicConfig]:
        return types.MappingProxyType(await self._topics.get(broker, lambda: self._read_topics(broker)))

    async def list_groups(self, broker: str) -> Mapping[str, GroupConfig]:
        return types.MappingProxyType(await self._groups.get(broker, lambda: self._read_groups(broker)))

    async def get_group(self, broker: str, name: str) -> GroupConfig | None:
        """Read through, and the cached table made to agree with what the broker said."""
        group = await self._through(broker, self._inner.get_group(broker, name))
        _written(self._groups.peek(broker), name, group)
        return group

    async def create_or_update_topic(self, broker: str, topic: TopicConfig) -> None:
        await self._through(broker, self._inner.create_or_update_topic(broker, topic))
        _written(self._topics.peek(broker), topic.name, topic)

    async def delete_topic(self, broker: str, name: str) -> None:
        await self._through(broker, self._inner.delete_topic(broker, name))
        _written(self._topics.peek(broker), name, None)

    async def create_or_update_group(self, broker: str, group: GroupConfig) -> None:
        await self._through(broker, self._inner.create_or_update_group(broker, group))
        _written(self._groups.peek(broker), group.name, group)

    async def delete_group(self, broker: str, name: str) -> None:
        await self._through(broker, self._inner.delete_group(broker, name))
        _written(self._groups.peek(broker), name, None)

    # -- not cached: these drive failover, rolls and drains ---------------------------------

    async def delete_topic_in_namesrv(self, namesrv: str, name: str) -> None:
        await self._inner.delete_topic_in_namesrv(namesrv, name)

    async def get_broker_permission(self, broker: str) -> int:
        return await self._inner.get_broker_permission(broker)

    async def set_broker_permission(self, broker: str, perm: int) -> None:
        await self._inner.set_broker_permission(broker, perm)

    async def consumer_lag(self, broker: str, group: str) -> int:
        return await self._inner.consumer_lag(broker, group)

    async def broker_runtime(self, broker: str) -> BrokerRuntime:
        return await self._inner.broker_runtime(broker)

    async def change_role(self, broker: str, role: str, broker_id: int = 0, epoch_above: int = 0) -> None:
        await self._inner.change_role(broker, role, broker_id, epoch_above)

    async def cluster_brokers(self, namesrv: str, cluster: str) -> Mapping[str, Mapping[int, str]]:
        return await self._inner.cluster_brokers(namesrv, cluster)

    async def dledger_member(self, broker: str) -> DLedgerMember:
        return await self._inner.dledger_member(broker)

    async def transfer_leadership(self, broker: str, transferee: str) -> None:
        await self._inner.transfer_leadership(broker, transferee)

    async def close(self) -> None:
        await self._inner.close()


def _written(table: dict[str, C] | None, name: str, config: C | None) -> None:
    """Make a cached table say what the broker now has (nothing to do when none is cached)."""
    if table is None:
        return
    if config is None:
        table.pop(name, None)
    else:
        table[name] = config

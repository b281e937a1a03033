"""POP consumption as one part of a broker: its handlers, its revive task and its saved state.

``PopConsumption`` puts together what ``rocketq.broker.pop`` (POP_MESSAGE and long polling),
``rocketq.broker.popack`` (ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME), ``rocketq.broker.revive``
and ``rocketq.broker.orderinfo`` need, so the broker server wires POP with a few lines: create it
once the store and metadata are loaded, install ``handlers()`` on a master, start the revive task
on a master (``start_revive``/``stop_revive`` follow role changes), ``persist`` with the consumer
offsets, ``close`` at shutdown. A slave answers POP requests REQUEST_CODE_NOT_SUPPORTED: it must
not write checkpoints.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from rocketq.broker import revivelog
from rocketq.broker.filters import ConsumerFilters
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.orderinfo import OrderInfoTable
from rocketq.broker.pop import PopHandlers
from rocketq.broker.popack import PopAckHandlers
from rocketq.broker.revive import RETRY_QUEUE_NUMS, ReviveService
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import codes
from rocketq.remoting.connection import Handler
from rocketq.store.messagestore import MessageStore
from rocketq.tasks import OwnedTask

ORDER_INFO_FILE: Final = "consumerOrderInfo.json"


class PopConsumption:
    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetManager,
        filters: ConsumerFilters,
        behaviour: BrokerBehaviour,
        *,
        cluster: str,
        broker_name: str,
        store_host: tuple[str, int],
        config_dir: Path,
        broker_permission: Callable[[], int],
        on_topic_created: Callable[[], Awaitable[None]],
    ) -> None:
        self._topics = topics
        self._offsets = offsets
        self._on_topic_created = on_topic_created
        topic = revivelog.revive_topic(cluster)
        if topics.get(topic) is None:
            topics.ensure(topic, behaviour.revive_queue_num)
        queue_nums = topics.get(topic).read_queue_nums  # type: ignore[union-attr]
        self.writer = revivelog.ReviveWriter(store, topic, queue_nums, store_host)
        self.order_infos = OrderInfoTable(config_dir / ORDER_INFO_FILE)
        self.order_infos.load()
        self.pop = PopHandlers(store, topics, groups, offsets, filters, behaviour, self.writer, self.order_infos,
                               broker_name=broker_name, broker_permission=broker_permission)
        self.acks = PopAckHandlers(store, topics, offsets, self.writer, self.order_infos, broker_name=broker_name,
                                   wake=self.pop.wake)
        self.revive = ReviveService(
            store, offsets, revive_topic=topic, queue_nums=queue_nums, interval_s=behaviour.revive_interval / 1000,
            retry_v2=behaviour.enable_retry_topic_v2, ensure_retry_topic=self._ensure_retry_topic,
            persist_offsets=self._persist_offsets)
        self.revive.load()
        self._revive_task = OwnedTask("broker-pop-revive", self.revive.run)

    def handlers(self) -> dict[int, Handler]:
        return {**self.pop.handlers(), **self.acks.handlers()}

    def start_revive(self) -> None:
        if not self._revive_task.running:
            self._revive_task.start()

    async def stop_revive(self) -> None:
        await self._revive_task.stop()

    def persist(self, force: bool = False) -> None:
        self.order_infos.persist(force)

    async def close(self) -> None:
        await self.stop_revive()
        await self.pop.close()
        await asyncio.to_thread(self.persist, True)

    async def _ensure_retry_topic(self, name: str) -> bool:
        """The POP retry topic, created on first revive (1 queue, RW) and registered at once."""
        existing = self._topics.get(name)
        if existing is None:
            existing = self._topics.ensure(name, RETRY_QUEUE_NUMS, codes.PERM_READ_WRITE)
            await self._on_topic_created()
        return bool(existing.perm & codes.Perm.WRITE)

    async def _persist_offsets(self) -> None:
        await asyncio.to_thread(self._offsets.persist)

"""Topic configuration on one broker: the table behind topics.json and the routes it registers.

A topic's queues exist on a broker once it is in this table. Topics are created explicitly
(UPDATE_AND_CREATE_TOPIC), on first send when ``autoCreateTopicEnable`` lets a producer borrow
``TBW102``, or by the broker itself for system topics (%RETRY%group on a consumer heartbeat).
Every change bumps the ``DataVersion`` so the name servers rebuild routes on the next register.
The ``TopicConfig`` value, its JSON and its rules are ``rocketq.protocol.sharedbodies`` (shared with
name servers and admin tools); a broker applies them with its own ``TopicError``, whose text
becomes the remark of the refusing response, and keeps a topic whose queue counts are zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rocketq.broker import dataversion
from rocketq.protocol import codes, namerules
from rocketq.protocol.sharedbodies import TopicConfig
from rocketq.store import configfiles


class TopicError(namerules.RuleError):
    """A topic name or configuration is not acceptable; its text is the broker's remark."""


def validate_topic_name(topic: str) -> None:
    namerules.check_topic(topic, TopicError)


class TopicConfigManager:
    """The topic table, persisted atomically to ``<store>/config/topics.json`` on every change."""

    def __init__(self, path: Path, on_change: Callable[[], None] | None = None) -> None:
        self._path = path
        self._on_change = on_change
        self.table: dict[str, TopicConfig] = {}
        self.data_version = dataversion.fresh()

    def load(self) -> None:
        found = dataversion.load_table(self._path, "topicConfigTable", TopicConfig.from_json)
        if found is not None:
            self.table.update(found[0])
            self.data_version = found[1]

    def ensure_system_topics(
        self, cluster: str, broker_name: str, *, auto_create: bool, trace_topic: str | None
    ) -> None:
        wanted = [
            TopicConfig(codes.SELF_TEST_TOPIC, 1, 1),
            TopicConfig(cluster, 16, 16, perm=codes.PERM_READ_WRITE | int(codes.Perm.INHERIT)),
            TopicConfig(broker_name, 1, 1, perm=codes.PERM_READ_WRITE | int(codes.Perm.INHERIT)),
            TopicConfig("OFFSET_MOVED_EVENT", 1, 1),
            TopicConfig(codes.SCHEDULE_TOPIC, 18, 18),
            TopicConfig(codes.reply_topic(cluster), 1, 1),
        ]
        if auto_create:
            wanted.append(TopicConfig(codes.AUTO_CREATE_TOPIC_KEY, 8, 8, perm=codes.PERM_READ_WRITE | 1))
        if trace_topic:
            wanted.append(TopicConfig(trace_topic, 1, 1))
        changed = False
        for config in wanted:
            if config.topic_name not in self.table:
                self.table[config.topic_name] = config
                changed = True
        if changed:
            self._changed()

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def upsert(self, config: TopicConfig) -> TopicConfig:
        config.validate(TopicError)
        if self.table.get(config.topic_name) != config:
            self.table[config.topic_name] = config
            self._changed()
        return config

    def create_from_default(
        self, topic: str, default_topic: str, queue_nums: int, default_queue_nums: int
    ) -> TopicConfig | None:
        """A producer's first send to an unknown topic, borrowing TBW102's permission to inherit."""
        default = self.table.get(default_topic)
        if default is None or not default.perm & codes.Perm.INHERIT:
            return None
        nums = max(1, min(queue_nums, default.write_queue_nums, default_queue_nums))
        return self.upsert(TopicConfig(topic, nums, nums, perm=default.perm & ~int(codes.Perm.INHERIT)))

    def ensure(self, topic: str, queue_nums: int, perm: int = codes.PERM_READ_WRITE) -> TopicConfig:
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        return self.upsert(TopicConfig(topic, queue_nums, queue_nums, perm=perm))

    def delete(self, topics: Iterable[str]) -> list[str]:
        removed = [t for t in topics if self.table.pop(t, None) is not None]
        if removed:
            self._changed()
        return removed

    def serialize_wrapper(self, broker_perm: int) -> dict[str, Any]:
        """The topicConfigSerializeWrapper registered with name servers.

        A broker made read-only (draining) or write-only registers every topic with its perm
        narrowed, which is how RocketMQ drains a broker without touching topic configs.
        """
        table = {}
        for name, config in self.table.items():
            entry = config.to_json()
            if broker_perm != codes.PERM_READ_WRITE:
                entry["perm"] = config.perm & broker_perm
            table[name] = entry
        return {"topicConfigTable": table, "dataVersion": self.data_version.to_json()}

    def to_json(self) -> dict[str, Any]:
        """topics.json, and the GET_ALL_TOPIC_CONFIG answer: every topic as it is configured."""
        return self.serialize_wrapper(codes.PERM_READ_WRITE)

    def persist(self) -> None:
        configfiles.write_json_atomic(self._path, self.to_json())

    def bump_version(self) -> None:
        """Something the registered routes depend on changed (brokerPermission): re-announce them.

        Name servers rebuild a broker's queue data only when its DataVersion moves.
        """
        self._changed()

    def _changed(self) -> None:
        self.data_version = dataversion.bump(self.data_version)
        self.persist()
        if self._on_change is not None:
            self._on_change()

"""Topic configuration on one broker: the table behind topics.json and the routes it registers.

A topic's queues exist on a broker once it is in this table. Topics are created explicitly
(UPDATE_AND_CREATE_TOPIC), on first send when ``autoCreateTopicEnable`` lets a producer borrow
``TBW102``, or by the broker itself for system topics (%RETRY%group on a consumer heartbeat).
Every change bumps the ``DataVersion`` so the name servers rebuild routes on the next register.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rocketq.broker.dataversion import DataVersion
from rocketq.protocol import codes
from rocketq.store import configfiles

log = logging.getLogger(__name__)

TOPIC_NAME_PATTERN: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")
MAX_TOPIC_LENGTH: Final = 127
MAX_QUEUE_NUMS: Final = 1024


class TopicError(ValueError):
    """A topic name or configuration is not acceptable."""


def validate_topic_name(topic: str) -> None:
    if not topic:
        raise TopicError("topic is blank")
    if len(topic) > MAX_TOPIC_LENGTH:
        raise TopicError(f"topic {topic[:20]}... is longer than {MAX_TOPIC_LENGTH} characters")
    if not TOPIC_NAME_PATTERN.match(topic):
        raise TopicError(f"topic {topic!r} contains characters outside [%|a-zA-Z0-9_-]")


@dataclass(frozen=True, slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = codes.PERM_READ_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def validate(self) -> None:
        validate_topic_name(self.topic_name)
        for name, n in (("readQueueNums", self.read_queue_nums), ("writeQueueNums", self.write_queue_nums)):
            if not 0 <= n <= MAX_QUEUE_NUMS:
                raise TopicError(f"{name}={n} outside [0, {MAX_QUEUE_NUMS}]")
        if self.perm & ~7:
            raise TopicError(f"perm={self.perm} is not a combination of READ(4) WRITE(2) INHERIT(1)")

    @property
    def queue_count(self) -> int:
        return max(self.read_queue_nums, self.write_queue_nums)

    def to_json(self) -> dict[str, Any]:
        return {
            "topicName": self.topic_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": self.topic_sys_flag,
            "order": self.order,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TopicConfig:
        return cls(
            topic_name=str(raw["topicName"]),
            read_queue_nums=int(raw.get("readQueueNums", 16)),
            write_queue_nums=int(raw.get("writeQueueNums", 16)),
            perm=int(raw.get("perm", codes.PERM_READ_WRITE)),
            topic_filter_type=str(raw.get("topicFilterType", "SINGLE_TAG")),
            topic_sys_flag=int(raw.get("topicSysFlag", 0)),
            order=bool(raw.get("order", False)),
        )


class TopicConfigManager:
    """The topic table, persisted atomically to ``<store>/config/topics.json`` on every change."""

    def __init__(self, path: Path, on_change: Callable[[], None] | None = None) -> None:
        self._path = path
        self._on_change = on_change
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion.new()

    def load(self) -> None:
        raw = configfiles.read_json(self._path)
        if raw is None:
            return
        table = raw.get("topicConfigTable", {}) if isinstance(raw, dict) else {}
        for name, entry in table.items():
            try:
                self.table[name] = TopicConfig.from_json(entry)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("ignoring unreadable topic %r in %s: %s", name, self._path, exc)
        self.data_version = DataVersion.from_json(raw.get("dataVersion"))

    def ensure_system_topics(
        self, cluster: str, broker_name: str, *, auto_create: bool, trace_topic: str | None
    ) -> None:
        wanted = [
            TopicConfig(codes.SELF_TEST_TOPIC, 1, 1),
            TopicConfig(cluster, 16, 16, perm=codes.PERM_READ_WRITE | int(codes.Perm.INHERIT)),
            TopicConfig(broker_name, 1, 1, perm=codes.PERM_READ_WRITE | int(codes.Perm.INHERIT)),
            TopicConfig("OFFSET_MOVED_EVENT", 1, 1),
            TopicConfig(codes.SCHEDULE_TOPIC, 18, 18),
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
        config.validate()
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

    def persist(self) -> None:
        body = {
            "topicConfigTable": {name: c.to_json() for name, c in self.table.items()},
            "dataVersion": self.data_version.to_json(),
        }
        configfiles.write_json_atomic(self._path, body)

    def _changed(self) -> None:
        self.data_version = self.data_version.next()
        self.persist()
        if self._on_change is not None:
            self._on_change()

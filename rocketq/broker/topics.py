"""Topic configuration on one broker: the table behind topics.json and the routes it registers.

A topic's queues exist on a broker once it is in this table. Topics are created explicitly
(UPDATE_AND_CREATE_TOPIC), on first send when ``autoCreateTopicEnable`` lets a producer borrow
``TBW102``, or by the broker itself for system topics (%RETRY%group on a consumer heartbeat).
Every change bumps the ``DataVersion`` and tells ``on_change`` which topics changed, so the
broker registers just those with the name servers (RocketMQ's registerIncrementBrokerData);
``None`` means "all of them" (brokerPermission changed every topic's registered perm). The file
is kept by ``configjournal.JournaledFile``: a change is appended to a journal beside the file by
group commit, the whole file is rewritten only now and then, and whoever answers a client about a
change awaits ``flush`` first, so an acknowledged change is on disk.
The ``TopicConfig`` value, its JSON and its rules are ``rocketq.protocol.sharedbodies`` (shared with
name servers and admin tools); a broker applies them with its own ``TopicError``, whose text
becomes the remark of the refusing response, and keeps a topic whose queue counts are zero.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

from rocketq.broker import dataversion
from rocketq.namesrv.registerbodies import RegisterBrokerBody
from rocketq.protocol import codes, namerules
from rocketq.protocol.sharedbodies import TopicConfig
from rocketq.store import configjournal

ChangeListener = Callable[[Collection[str] | None], None]
"""Told the names of the topics that changed (created, updated or deleted), or None for all."""


class TopicError(namerules.RuleError):
    """A topic name or configuration is not acceptable; its text is the broker's remark."""


def validate_topic_name(topic: str) -> None:
    namerules.check_topic(topic, TopicError)


class TopicConfigManager:
    """The topic table, in ``<store>/config/topics.json`` and its journal (every change durable)."""

    def __init__(self, path: Path, on_change: ChangeListener | None = None) -> None:
        self._path = path
        self._on_change = on_change
        self.table: dict[str, TopicConfig] = {}
        self.data_version = dataversion.fresh()
        self._json: dict[str, tuple[TopicConfig, dict[str, Any]]] = {}
        """Each topic's JSON, kept while its config is the same object: a write of 50 000 topics
        then costs a dict walk, not 50 000 ``to_json`` calls."""
        self._file = configjournal.JournaledFile(path, "topicConfigTable", self.to_json)

    def load(self) -> None:
        document = self._file.read()
        found = dataversion.parse_table(document, self._path, "topicConfigTable", TopicConfig.from_json)
        if found is not None:
            self.table.update(found[0])
            self.data_version = found[1]
        if self._file.has_journals():  # left by a crash: fold them into the file
            self._file.write_now()

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
        added = [config.topic_name for config in wanted if config.topic_name not in self.table]
        for config in wanted:
            self.table.setdefault(config.topic_name, config)
        if added:
            self._changed(added)

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def upsert(self, config: TopicConfig) -> TopicConfig:
        config.validate(TopicError)
        if self.table.get(config.topic_name) != config:
            self.table[config.topic_name] = config
            self._changed([config.topic_name])
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
            self._changed(removed)
        return removed

    def register_body(self, broker_perm: int, names: Collection[str] | None = None) -> RegisterBrokerBody:
        """What REGISTER_BROKER carries: every topic, or only ``names`` (an increment; names no
        longer in the table are left out), at the current DataVersion.

        A broker made read-only (draining) or write-only registers every topic with its perm
        narrowed, which is how RocketMQ drains a broker without touching topic configs.
        """
        if names is None:
            configs: Iterable[TopicConfig] = self.table.values()
        else:
            configs = (c for c in (self.table.get(n) for n in names) if c is not None)
        if broker_perm != codes.PERM_READ_WRITE:
            configs = (dataclasses.replace(c, perm=c.perm & broker_perm) for c in configs)
        return RegisterBrokerBody(tuple(configs), self.data_version)

    def serialize_wrapper(self, broker_perm: int) -> dict[str, Any]:
        """The register body's topicConfigSerializeWrapper as JSON (every topic)."""
        body = self.register_body(broker_perm)
        return {"topicConfigTable": {c.topic_name: c.to_json() for c in body.topic_configs},
                "dataVersion": body.data_version.to_json()}

    def to_json(self) -> dict[str, Any]:
        """topics.json, and the GET_ALL_TOPIC_CONFIG answer: every topic as it is configured.

        A fresh outer dict each call; the per-topic dicts are shared with later calls and must
        not be edited by the caller (a write serialises them in another thread)."""
        cache = self._json
        table = {name: self._json_of(name, config) for name, config in self.table.items()}
        if len(cache) > len(table):  # topics deleted, or the table replaced by a slave's sync
            for gone in cache.keys() - table.keys():
                del cache[gone]
        return {"topicConfigTable": table, "dataVersion": self.data_version.to_json()}

    def _json_of(self, name: str, config: TopicConfig) -> dict[str, Any]:
        cached = self._json.get(name)
        if cached is None or cached[0] is not config:
            cached = self._json[name] = (config, config.to_json())
        return cached[1]

    def persist(self) -> None:
        """Write now, on this thread (start-up, shutdown, a slave adopting its master's table)."""
        self._file.write_now()

    async def flush(self) -> None:
        """Return once every change made before the call is on disk (OSError if it cannot be)."""
        await self._file.write()

    @property
    def writes(self) -> int:
        """Journal appends and file rewrites done so far (tests compare it with the changes made)."""
        return self._file.appends + self._file.rewrites

    async def close(self) -> None:
        """Let a write in flight finish, then write what is left (shutdown)."""
        await self._file.close()
        self.persist()

    def bump_version(self) -> None:
        """Something the registered routes depend on changed (brokerPermission): re-announce them.

        Name servers rebuild a broker's queue data only when its DataVersion moves.
        """
        self._changed(None)

    def _changed(self, names: Collection[str] | None) -> None:
        self.data_version = dataversion.bump(self.data_version)
        if names is None:  # only the stamp moved
            self._file.record(self.data_version.to_json())
        else:
            table = self.table
            self._file.record(self.data_version.to_json(),
                              put={n: self._json_of(n, table[n]) for n in names if n in table},
                              delete=[n for n in names if n not in table])
        if self._on_change is not None:
            self._on_change(names)

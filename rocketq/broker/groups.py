"""Subscription groups: per consumer group settings behind subscriptionGroup.json.

A group decides whether it may consume at all, whether it is broadcast, how many times a failed
message is retried before the DLQ, and how many retry queues it has. Groups are created by
admins (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) or, with ``autoCreateSubscriptionGroup``, on a
consumer's first heartbeat. The ``SubscriptionGroupConfig`` value, its JSON and its rules are
``rocketq.protocol.sharedbodies``, shared with admin tools; the broker applies them with its own
``GroupError``, whose text becomes the remark of the refusing response. The file is written by
a journal, as topics.json is (``configjournal.JournaledFile``): an admin change is answered
after ``flush``, and changes made meanwhile share the append.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rocketq.broker import dataversion
from rocketq.protocol import namerules
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig
from rocketq.store import configjournal


class GroupError(namerules.RuleError):
    """A group name or configuration is not acceptable; its text is the broker's remark."""


def validate_group_name(group: str) -> None:
    namerules.check_group(group, GroupError)


class SubscriptionGroupManager:
    def __init__(self, path: Path) -> None:
        self._path = path
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = dataversion.fresh()
        self._file = configjournal.JournaledFile(path, "subscriptionGroupTable", self.to_json)

    def load(self) -> None:
        document = self._file.read()
        found = dataversion.parse_table(document, self._path, "subscriptionGroupTable",
                                        SubscriptionGroupConfig.from_json)
        if found is not None:
            self.table.update(found[0])
            self.data_version = found[1]
        if self._file.has_journals():  # left by a crash: fold them into the file
            self._file.write_now()

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        return self.table.get(group)

    def find_or_create(self, group: str, *, auto_create: bool) -> SubscriptionGroupConfig | None:
        config = self.table.get(group)
        if config is None and auto_create:
            config = self.upsert(SubscriptionGroupConfig(group_name=group))
        return config

    def upsert(self, config: SubscriptionGroupConfig) -> SubscriptionGroupConfig:
        config.validate(GroupError)
        if self.table.get(config.group_name) != config:
            self.table[config.group_name] = config
            self._changed(config.group_name)
        return config

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self._changed(group)
        return True

    def _changed(self, group: str) -> None:
        self.data_version = dataversion.bump(self.data_version)
        config = self.table.get(group)
        self._file.record(self.data_version.to_json(),
                          put={group: config.to_json()} if config is not None else None,
                          delete=() if config is not None else (group,))

    def to_json(self) -> dict[str, Any]:
        return {
            "subscriptionGroupTable": {name: c.to_json() for name, c in self.table.items()},
            "dataVersion": self.data_version.to_json(),
        }

    def persist(self) -> None:
        """Write now, on this thread (start-up, shutdown, a slave adopting its master's table)."""
        self._file.write_now()

    async def flush(self) -> None:
        """Return once every change made before the call is on disk (OSError if it cannot be)."""
        await self._file.write()

    async def close(self) -> None:
        await self._file.close()
        self.persist()

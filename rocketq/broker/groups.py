"""Subscription groups: per consumer group settings behind subscriptionGroup.json.

A group decides whether it may consume at all, whether it is broadcast, how many times a failed
message is retried before the DLQ, and how many retry queues it has. Groups are created by
admins (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) or, with ``autoCreateSubscriptionGroup``, on a
consumer's first heartbeat. The ``SubscriptionGroupConfig`` value, its JSON and its rules are
``rocketq.protocol.bodies``, shared with admin tools; the broker applies them with its own
``GroupError``, whose text becomes the remark of the refusing response.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rocketq.broker import dataversion
from rocketq.protocol import names
from rocketq.protocol.bodies import BodyError, SubscriptionGroupConfig
from rocketq.store import configfiles

log = logging.getLogger(__name__)


class GroupError(names.RuleError):
    """A group name or configuration is not acceptable; its text is the broker's remark."""


def validate_group_name(group: str) -> None:
    names.check_group(group, GroupError)


class SubscriptionGroupManager:
    def __init__(self, path: Path) -> None:
        self._path = path
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = dataversion.fresh()

    def load(self) -> None:
        raw = configfiles.read_json(self._path)
        if raw is None:
            return
        table = (raw.get("subscriptionGroupTable") or {}) if isinstance(raw, dict) else None
        if not isinstance(table, dict):
            log.warning("ignoring %s: not a subscriptionGroupTable wrapper", self._path)
            return
        for name, entry in table.items():
            try:
                self.table[name] = SubscriptionGroupConfig.from_json(entry, f"subscriptionGroupTable[{name!r}]")
            except BodyError as exc:
                log.warning("ignoring unreadable group %r in %s: %s", name, self._path, exc)
        self.data_version = dataversion.loaded(raw.get("dataVersion"), self._path)

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
            self.data_version = dataversion.bump(self.data_version)
            self.persist()
        return config

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self.data_version = dataversion.bump(self.data_version)
        self.persist()
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "subscriptionGroupTable": {name: c.to_json() for name, c in self.table.items()},
            "dataVersion": self.data_version.to_json(),
        }

    def persist(self) -> None:
        configfiles.write_json_atomic(self._path, self.to_json())

"""Subscription groups: per consumer group settings behind subscriptionGroup.json.

A group decides whether it may consume at all, whether it is broadcast, how many times a failed
message is retried before the DLQ, and how many retry queues it has. Groups are created by
admins (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) or, with ``autoCreateSubscriptionGroup``, on a
consumer's first heartbeat.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rocketq.broker.dataversion import DataVersion
from rocketq.store import configfiles

log = logging.getLogger(__name__)

GROUP_NAME_PATTERN: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")
MAX_GROUP_LENGTH: Final = 255


class GroupError(ValueError):
    """A group name or configuration is not acceptable."""


def validate_group_name(group: str) -> None:
    if not group or len(group) > MAX_GROUP_LENGTH or not GROUP_NAME_PATTERN.match(group):
        raise GroupError(f"group {group[:40]!r} must match [%|a-zA-Z0-9_-]{{1,{MAX_GROUP_LENGTH}}}")


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    _WIRE = (
        ("group_name", "groupName"),
        ("consume_enable", "consumeEnable"),
        ("consume_from_min_enable", "consumeFromMinEnable"),
        ("consume_broadcast_enable", "consumeBroadcastEnable"),
        ("retry_queue_nums", "retryQueueNums"),
        ("retry_max_times", "retryMaxTimes"),
        ("broker_id", "brokerId"),
        ("which_broker_when_consume_slowly", "whichBrokerWhenConsumeSlowly"),
        ("notify_consumer_ids_changed_enable", "notifyConsumerIdsChangedEnable"),
    )

    def validate(self) -> None:
        validate_group_name(self.group_name)
        if not 0 <= self.retry_queue_nums <= 64:
            raise GroupError(f"retryQueueNums={self.retry_queue_nums} outside [0, 64]")
        if not -1 <= self.retry_max_times <= 64:
            raise GroupError(f"retryMaxTimes={self.retry_max_times} outside [-1, 64]")

    def to_json(self) -> dict[str, Any]:
        return {wire: getattr(self, name) for name, wire in self._WIRE}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> SubscriptionGroupConfig:
        if not isinstance(raw, dict) or not isinstance(raw.get("groupName"), str):
            raise GroupError("subscription group config needs a groupName string")
        kwargs: dict[str, Any] = {}
        defaults = cls(group_name=raw["groupName"])
        for name, wire in cls._WIRE:
            value = raw.get(wire, getattr(defaults, name))
            expected = type(getattr(defaults, name))
            if expected is bool and not isinstance(value, bool):
                raise GroupError(f"{wire} must be a boolean")
            if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
                raise GroupError(f"{wire} must be an integer")
            kwargs[name] = value
        return cls(**kwargs)


class SubscriptionGroupManager:
    def __init__(self, path: Path) -> None:
        self._path = path
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = DataVersion.new()

    def load(self) -> None:
        raw = configfiles.read_json(self._path)
        if not isinstance(raw, dict):
            return
        for name, entry in (raw.get("subscriptionGroupTable") or {}).items():
            try:
                self.table[name] = SubscriptionGroupConfig.from_json(entry)
            except GroupError as exc:
                log.warning("ignoring unreadable group %r in %s: %s", name, self._path, exc)
        self.data_version = DataVersion.from_json(raw.get("dataVersion"))

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        return self.table.get(group)

    def find_or_create(self, group: str, *, auto_create: bool) -> SubscriptionGroupConfig | None:
        config = self.table.get(group)
        if config is None and auto_create:
            config = self.upsert(SubscriptionGroupConfig(group_name=group))
        return config

    def upsert(self, config: SubscriptionGroupConfig) -> SubscriptionGroupConfig:
        config.validate()
        if self.table.get(config.group_name) != config:
            self.table[config.group_name] = config
            self.data_version = self.data_version.next()
            self.persist()
        return config

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self.data_version = self.data_version.next()
        self.persist()
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "subscriptionGroupTable": {name: c.to_json() for name, c in self.table.items()},
            "dataVersion": self.data_version.to_json(),
        }

    def persist(self) -> None:
        configfiles.write_json_atomic(self._path, self.to_json())

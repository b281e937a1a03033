"""UPDATE_BROKER_CONFIG's rules (``rocketq.broker.runtimeconfig``) without a broker process."""

from __future__ import annotations

import re

import pytest

from rocketq.broker import runtimeconfig
from rocketq.broker.runtimeconfig import ConfigUpdateError
from rocketq.broker.settings import BrokerBehaviour
from rocketq.store.settings import StoreSettings


def shared() -> tuple[BrokerBehaviour, StoreSettings]:
    return BrokerBehaviour(), StoreSettings(store_path_root_dir="/tmp/unused-store")


def test_live_keys_change_the_shared_objects_in_place() -> None:
    behaviour, store = shared()
    held_by_a_handler = behaviour
    changed = runtimeconfig.apply({"autoCreateTopicEnable": "false", "brokerPermission": "4",
                                   "fileReservedTime": "1"}, behaviour, store)
    assert sorted(changed) == ["auto_create_topic_enable", "broker_permission", "file_reserved_time"]
    assert held_by_a_handler.auto_create_topic_enable is False and held_by_a_handler.broker_permission == 4
    assert store.file_reserved_time == 1


@pytest.mark.parametrize("updates, remark", [
    ({"listenPort": "1"}, "listenPort: read only at broker start"),
    ({"flushDiskType": "SYNC_FLUSH"}, "flushDiskType: read only at broker start"),
    ({"noSuchKey": "1"}, "unknown broker config key(s): noSuchKey"),
    ({"defaultTopicQueueNums": "0"}, "defaultTopicQueueNums=0: must be positive"),
    ({"brokerPermission": "x"}, "brokerPermission"),
])
def test_other_keys_and_bad_values_are_refused_and_nothing_changes(updates: dict[str, str], remark: str) -> None:
    behaviour, store = shared()
    with pytest.raises(ConfigUpdateError, match=re.escape(remark)) as refused:
        runtimeconfig.apply({"autoCreateTopicEnable": "false", **updates}, behaviour, store)
    assert not refused.value.blacklisted
    assert behaviour.auto_create_topic_enable is True


def test_the_blacklist_is_refused_as_rocketmq_does() -> None:
    behaviour, store = shared()
    with pytest.raises(ConfigUpdateError, match="Can not update config in black list") as refused:
        runtimeconfig.apply({"brokerConfigPath": "/etc/x"}, behaviour, store)
    assert refused.value.blacklisted

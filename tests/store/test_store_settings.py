"""StoreSettings: RocketMQ keys and defaults, derived paths, validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq import settings as settings_mod
from rocketq.settings import SettingsError
from rocketq.store.settings import FlushDiskType, StoreSettings, parse_delay_levels, parse_delete_when


def test_defaults_match_rocketmq() -> None:
    s = StoreSettings()
    assert s.mapped_file_size_commit_log == 1 << 30
    assert s.mapped_file_size_consume_queue == 6_000_000
    assert s.max_message_size == 4 << 20
    assert s.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    assert (s.flush_interval_commit_log, s.sync_flush_timeout) == (500, 5000)
    assert (s.flush_commit_log_least_pages, s.flush_consume_queue_least_pages) == (4, 2)
    assert (s.file_reserved_time, s.delete_when, s.disk_max_used_space_ratio) == (72, "04", 75)
    assert (s.max_hash_slot_num, s.max_index_num) == (5_000_000, 20_000_000)
    assert s.message_index_enable and s.os_page_cache_busy_timeout_mills == 1000
    assert s.root_dir == Path.home() / "store"
    assert s.commitlog_dir == Path.home() / "store" / "commitlog"
    s.validate()


def test_build_from_broker_conf_keys(tmp_path: Path) -> None:
    values = {"storePathRootDir": str(tmp_path), "flushDiskType": "SYNC_FLUSH", "deleteWhen": "01;13",
              "mappedFileSizeCommitLog": "1048576", "storePathCommitLog": str(tmp_path / "cl"),
              "diskSpaceWarningLevelRatio": "95", "messageIndexEnable": "false"}
    s = settings_mod.build(StoreSettings, values, environ={})
    assert s.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert s.delete_hours == frozenset({1, 13})
    assert s.commitlog_dir == tmp_path / "cl"
    assert s.consumequeue_dir == tmp_path / "consumequeue"
    assert (s.index_dir, s.config_dir) == (tmp_path / "index", tmp_path / "config")
    assert (s.checkpoint_path, s.abort_path, s.lock_path) == (tmp_path / "checkpoint", tmp_path / "abort",
                                                              tmp_path / "lock")
    assert s.disk_space_warning_level_ratio == 95 and not s.message_index_enable
    with pytest.raises(SettingsError):
        settings_mod.build(StoreSettings, {"flushDiskType": "SOMETIMES"}, environ={})


@pytest.mark.parametrize("overrides", [
    {"max_message_size": 10}, {"mapped_file_size_commit_log": 50}, {"mapped_file_size_consume_queue": 10},
    {"sync_flush_timeout": 0}, {"disk_max_used_space_ratio": 0}, {"disk_space_warning_level_ratio": 101},
    {"delete_when": "25"}, {"delete_when": "x"}, {"delete_when": ";"}, {"file_reserved_time": -1},
    {"message_delay_level": "1s 5x"}, {"message_delay_level": ""}, {"max_index_num": 0},
    {"store_path_root_dir": " "}, {"flush_commit_log_least_pages": -1}, {"flush_consume_queue_least_pages": -1},
    {"mapped_file_size_commit_log": 1 << 31}, {"max_index_num": 1 << 31}, {"max_hash_slot_num": 1 << 31},
])
def test_validation(overrides: dict[str, object]) -> None:
    with pytest.raises(SettingsError) as raised:
        StoreSettings(**overrides).validate()  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)


def test_parsers() -> None:
    assert parse_delete_when("04") == frozenset({4})
    assert parse_delete_when(" 01; 02 ;") == frozenset({1, 2})
    assert parse_delay_levels("1s 5m 2h 1d") == (1000, 300_000, 7_200_000, 86_400_000)
    assert len(StoreSettings().delay_levels_ms) == 18

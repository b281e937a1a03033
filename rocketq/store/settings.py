"""Store settings: where the store lives, how big its files are, how it flushes and cleans up.

One frozen dataclass declared with RocketMQ's own ``MessageStoreConfig`` keys and defaults, so a
broker.conf written for Apache RocketMQ configures rocketq's store unchanged. Derived paths
(``commitlog_dir`` ...) and parsed forms (``delete_hours``) are properties, computed from the
fields; ``validate`` refuses combinations the store cannot run with.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocketq.protocol import storedrecords
from rocketq.settings import SettingsError, setting

MAX_I32: Final = 0x7FFFFFFF
"""Largest segment size and index geometry the on-disk formats (i32 fields) can describe."""


class FlushDiskType(enum.Enum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    """A put is acknowledged once in the page cache; a task fsyncs every flushIntervalCommitLog."""
    SYNC_FLUSH = "SYNC_FLUSH"
    """A put is acknowledged once fsynced; concurrent puts share one fsync (group commit)."""


@dataclass(frozen=True)
class StoreSettings:
    store_path_root_dir: str = setting(
        "storePathRootDir", "~/store",
        "Root of the store: commitlog/, consumequeue/, index/, config/, checkpoint, abort, lock.")
    store_path_commit_log: str = setting(
        "storePathCommitLog", "",
        "CommitLog directory; empty means <storePathRootDir>/commitlog.")
    mapped_file_size_commit_log: int = setting(
        "mappedFileSizeCommitLog", 1024 * 1024 * 1024,
        "Bytes per CommitLog segment file (1 GiB). Segments are named by their start offset.")
    mapped_file_size_consume_queue: int = setting(
        "mappedFileSizeConsumeQueue", 300000 * 20,
        "Bytes per ConsumeQueue file: 300 000 units of 20 bytes. Rounded down to whole units.")
    max_message_size: int = setting(
        "maxMessageSize", storedrecords.DEFAULT_MAX_MESSAGE_SIZE,
        "Largest stored record in bytes (4 MiB); bigger puts get MESSAGE_ILLEGAL.")
    flush_disk_type: FlushDiskType = setting(  # noqa: RUF009 - setting() returns a dataclass field
        "flushDiskType", FlushDiskType.ASYNC_FLUSH,
        "ASYNC_FLUSH acknowledges from the page cache; SYNC_FLUSH only after fsync.")
    flush_interval_commit_log: int = setting(
        "flushIntervalCommitLog", 500, "ASYNC_FLUSH: milliseconds between CommitLog flush checks.")
    sync_flush_timeout: int = setting(
        "syncFlushTimeout", 5000,
        "SYNC_FLUSH: milliseconds a put waits for its fsync before answering FLUSH_DISK_TIMEOUT.")
    flush_commit_log_least_pages: int = setting(
        "flushCommitLogLeastPages", 4,
        "ASYNC_FLUSH: flush only when this many 4 KiB pages are dirty (or the thorough interval passed).")
    flush_consume_queue_least_pages: int = setting(
        "flushConsumeQueueLeastPages", 2,
        "Flush a ConsumeQueue file only when this many pages are dirty (or the thorough interval passed).")
    flush_interval_consume_queue: int = setting(
        "flushIntervalConsumeQueue", 1000,
        "Milliseconds between ConsumeQueue/IndexFile flushes; each is followed by a checkpoint write.")
    file_reserved_time: int = setting(
        "fileReservedTime", 72, "Hours a CommitLog segment is kept after its last write.")
    delete_when: str = setting(
        "deleteWhen", "04",
        "Hours of the day (local time, two digits, ';'-separated) when expired segments are deleted.")
    disk_max_used_space_ratio: int = setting(
        "diskMaxUsedSpaceRatio", 75,
        "Percent of the disk in use above which the oldest segments are deleted at once, expired or not.")
    disk_space_warning_level_ratio: int = setting(
        "diskSpaceWarningLevelRatio", 90,
        "High-water mark, percent of the disk in use, above which the store refuses writes (DISK_FULL) "
        "until cleanup brings usage back down. RocketMQ has it as a JVM property (0.90); here it is "
        "a broker.conf key in percent like diskMaxUsedSpaceRatio.")
    max_hash_slot_num: int = setting(
        "maxHashSlotNum", 5000000, "Hash slots per IndexFile (4 bytes each).")
    max_index_num: int = setting(
        "maxIndexNum", 20000000, "Entries per IndexFile (20 bytes each); a full file rolls to a new one.")
    message_index_enable: bool = setting(
        "messageIndexEnable", True, "Build IndexFile entries for UNIQ_KEY and KEYS (QUERY_MESSAGE).")
    message_delay_level: str = setting(
        "messageDelayLevel", "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
        "Delay of each level (1-based). A message put to SCHEDULE_TOPIC_XXXX with DELAY=n gets its "
        "delivery time (store time + level n) as its ConsumeQueue tag code.")
    check_crc_on_recover: bool = setting(
        "checkCRCOnRecover", True,
        "Check each record's body CRC when recovery walks the CommitLog, after a crash and after a "
        "clean stop alike: the first record that fails ends the log.")
    os_page_cache_busy_timeout_mills: int = setting(
        "osPageCacheBusyTimeOutMills", 1000,
        "A put that holds the write path this long marks the page cache busy: the broker answers "
        "SYSTEM_BUSY for as long again.")

    # --- derived values -----------------------------------------------------------------------

    @property
    def root_dir(self) -> Path:
        return Path(os.path.expanduser(self.store_path_root_dir))

    @property
    def commitlog_dir(self) -> Path:
        if self.store_path_commit_log:
            return Path(os.path.expanduser(self.store_path_commit_log))
        return self.root_dir / "commitlog"

    @property
    def consumequeue_dir(self) -> Path:
        return self.root_dir / "consumequeue"

    @property
    def index_dir(self) -> Path:
        return self.root_dir / "index"

    @property
    def config_dir(self) -> Path:
        return self.root_dir / "config"

    @property
    def checkpoint_path(self) -> Path:
        return self.root_dir / "checkpoint"

    @property
    def abort_path(self) -> Path:
        return self.root_dir / "abort"

    @property
    def lock_path(self) -> Path:
        return self.root_dir / "lock"

    @property
    def delete_hours(self) -> frozenset[int]:
        return parse_delete_when(self.delete_when)

    @property
    def delay_levels_ms(self) -> tuple[int, ...]:
        return parse_delay_levels(self.message_delay_level)

    def validate(self) -> None:
        """Raise SettingsError (one line) for values the store cannot work with. Cheap and free
        of I/O: the broker's command line calls it when it loads the configuration."""
        if not self.store_path_root_dir.strip():
            raise SettingsError("storePathRootDir is empty")
        if self.max_message_size < storedrecords.MIN_RECORD_SIZE:
            raise SettingsError(f"maxMessageSize={self.max_message_size}: too small for any message")
        if self.mapped_file_size_commit_log < storedrecords.MIN_RECORD_SIZE + 8:
            raise SettingsError(f"mappedFileSizeCommitLog={self.mapped_file_size_commit_log}: too small")
        for key, value in (("mappedFileSizeCommitLog", self.mapped_file_size_commit_log),
                           ("maxHashSlotNum", self.max_hash_slot_num), ("maxIndexNum", self.max_index_num)):
            if value > MAX_I32:  # record and blank TOTALSIZE, index entry numbers: i32 on disk
                raise SettingsError(f"{key}={value}: at most {MAX_I32}")
        if self.mapped_file_size_consume_queue < 20:
            raise SettingsError(f"mappedFileSizeConsumeQueue={self.mapped_file_size_consume_queue}: "
                                "must hold at least one 20-byte unit")
        positive = {
            "flushIntervalCommitLog": self.flush_interval_commit_log,
            "syncFlushTimeout": self.sync_flush_timeout,
            "flushIntervalConsumeQueue": self.flush_interval_consume_queue,
            "maxHashSlotNum": self.max_hash_slot_num,
            "maxIndexNum": self.max_index_num,
            "osPageCacheBusyTimeOutMills": self.os_page_cache_busy_timeout_mills,
        }
        for key, value in positive.items():
            if value <= 0:
                raise SettingsError(f"{key}={value}: must be positive")
        for key, value in (("flushCommitLogLeastPages", self.flush_commit_log_least_pages),
                           ("flushConsumeQueueLeastPages", self.flush_consume_queue_least_pages)):
            if value < 0:
                raise SettingsError(f"{key}={value}: must not be negative")
        for key, value in (("diskMaxUsedSpaceRatio", self.disk_max_used_space_ratio),
                           ("diskSpaceWarningLevelRatio", self.disk_space_warning_level_ratio)):
            if not 1 <= value <= 100:
                raise SettingsError(f"{key}={value}: a percentage from 1 to 100")
        if self.file_reserved_time < 0:
            raise SettingsError(f"fileReservedTime={self.file_reserved_time}: must not be negative")
        parse_delete_when(self.delete_when)
        parse_delay_levels(self.message_delay_level)


def parse_delete_when(text: str) -> frozenset[int]:
    """RocketMQ's deleteWhen: "04" or "01;02" (hours 0-23)."""
    hours = set()
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or not 0 <= int(part) <= 23:
            raise SettingsError(f"deleteWhen={text!r}: expected hours 00-23 separated by ';'")
        hours.add(int(part))
    if not hours:
        raise SettingsError(f"deleteWhen={text!r}: no hour given")
    return frozenset(hours)


_DELAY_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> tuple[int, ...]:
    """RocketMQ's messageDelayLevel ("1s 5s ... 2h") as milliseconds per level."""
    levels = []
    for part in text.split():
        number, unit = part[:-1], part[-1:]
        if unit not in _DELAY_UNITS or not number.isdigit():
            raise SettingsError(f"messageDelayLevel={text!r}: {part!r} is not like 10s, 5m, 2h or 1d")
        levels.append(int(number) * _DELAY_UNITS[unit])
    if not levels:
        raise SettingsError(f"messageDelayLevel={text!r}: no level given")
    return tuple(levels)

"""HA settings: RocketMQ's replication keys (MessageStoreConfig / BrokerConfig names).

``haListenPort`` stays with the broker's other ports (``BrokerIdentity``) and
``syncFlushTimeout`` with the store: a SYNC_MASTER send waits for its slave as long as a
SYNC_FLUSH send waits for the disk, as in RocketMQ 4.9.0-4.9.2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rocketq.protocol import addresses
from rocketq.settings import SettingsError, setting

MIN_TRANSFER_BATCH: Final = 1024
MAX_TRANSFER_BATCH: Final = 1024 * 1024
"""A master frame's body is at most this; the slave refuses larger frames before reading them."""


@dataclass(frozen=True, slots=True)
class HASettings:
    ha_master_address: str = setting(
        "haMasterAddress", "", "a slave's master HA host:port; empty = learn it from the name server"
    )
    ha_send_heartbeat_interval: int = setting(
        "haSendHeartbeatInterval", 5000, "ms between a slave's offset reports and a master's empty frames when idle"
    )
    ha_housekeeping_interval: int = setting(
        "haHousekeepingInterval", 20000, "ms without a byte from the peer before an HA connection is closed"
    )
    ha_transfer_batch_size: int = setting(
        "haTransferBatchSize", 32768, "largest body of one master-to-slave frame (bytes)"
    )
    ha_max_gap_not_in_sync: int = setting(
        "haMaxGapNotInSync", 256 * 1024 * 1024,
        "bytes a slave may lag before SYNC_MASTER answers SLAVE_NOT_AVAILABLE (4.9: haSlaveFallbehindMax)",
    )
    slave_read_enable: bool = setting(
        "slaveReadEnable", False, "a master tells consumers far behind to pull from its slave"
    )
    access_message_in_memory_max_ratio: int = setting(
        "accessMessageInMemoryMaxRatio", 40, "percent of RAM a pull may lag before it counts as far behind"
    )
    enable_dleger_commit_log: bool = setting(
        "enableDLegerCommitLog", False, "the broker is a member of a DLedger (Raft) group (rocketq.dledger)"
    )

    def __post_init__(self) -> None:
        for key, value in (("haSendHeartbeatInterval", self.ha_send_heartbeat_interval),
                           ("haHousekeepingInterval", self.ha_housekeeping_interval),
                           ("haMaxGapNotInSync", self.ha_max_gap_not_in_sync)):
            if value <= 0:
                raise SettingsError(f"{key}={value}: must be positive")
        if not MIN_TRANSFER_BATCH <= self.ha_transfer_batch_size <= MAX_TRANSFER_BATCH:
            raise SettingsError(f"haTransferBatchSize={self.ha_transfer_batch_size}: expected "
                                f"{MIN_TRANSFER_BATCH}..{MAX_TRANSFER_BATCH}")
        if not 1 <= self.access_message_in_memory_max_ratio <= 100:
            raise SettingsError(f"accessMessageInMemoryMaxRatio={self.access_message_in_memory_max_ratio}: "
                                "expected a percentage 1..100")
        if self.ha_master_address and not addresses.is_host_port(self.ha_master_address):
            raise SettingsError(f"haMasterAddress={self.ha_master_address!r}: expected host:port")


"""The broker's HA service: the one replication object a broker owns.

A master (brokerId 0) runs the ``HAServer`` on ``haListenPort`` and, as SYNC_MASTER, holds the
``ReplicaWaiters`` its sends wait in. A slave runs the ``HAClient`` towards its master's HA
address and the ``SlaveSynchronizer`` towards its master's remoting address. Both addresses come
from registration (``Registrar.master_addr`` / ``ha_server_addr``) unless ``haMasterAddress``
pins the HA one. The service also answers what the broker reports about replication: the keys
of GET_BROKER_RUNTIME_INFO (``runtime_info``) and the values the metrics read (``status``).

Lag in bytes is exact on a master (its end minus the best slave acknowledgement). Lag in
seconds is how long ago the slave last held everything the master had at some moment: a
``LagClock`` marks the master's end and the time when it sees the slave behind, and moves the
mark on when an acknowledgement passes it, so under steady load it reads about one replication
delay, and it grows by the second when a slave stops acknowledging.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

from rocketq.ha.epochs import EpochHistory
from rocketq.ha.master import HAServer
from rocketq.ha.settings import HASettings
from rocketq.ha.slave import HAClient
from rocketq.ha.syncwait import ReplicaWaiters
from rocketq.protocol import messageproperties
from rocketq.ratelimit import LogLimiter
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import BatchPutRequest, PutRequest, PutResult, PutStatus

log = logging.getLogger(__name__)
_limited = LogLimiter(log, interval=60.0)


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicationStatus:
    """What a broker says about its replication, for runtime info and metrics."""

    is_master: bool
    connections: int
    """Master: slaves connected. Slave: 1 while connected to its master."""
    ack_offset: int
    """Master: highest offset a slave acknowledged (-1: none). Slave: its own end."""
    behind_bytes: int
    behind_seconds: float
    in_sync: bool
    """Master: a slave is connected and within haMaxGapNotInSync. Slave: connected."""
    master_ha_addr: str


class LagClock:
    """Seconds a slave has been missing bytes the master had (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._mark: tuple[int, float] | None = None

    def observe(self, master_end: int, acked: int) -> float:
        now = self._clock()
        if self._mark is not None and acked >= self._mark[0]:
            self._mark = None
        if self._mark is None and master_end > acked:
            self._mark = (master_end, now)
        return now - self._mark[1] if self._mark is not None else 0.0


class HAService:
    def __init__(self, store: MessageStore, settings: HASettings, *, is_master: bool, sync_master: bool,
                 listen_host: str, advertised_host: str, ha_port: int, sync_timeout_ms: int,
                 master_ha_addr: Callable[[], str | None]) -> None:
        self._store = store
        self.settings = settings
        self.is_master = is_master
        self.sync_master = sync_master and is_master
        self._advertised_host = advertised_host
        self._timeout = sync_timeout_ms / 1000
        self.waiters = ReplicaWaiters()
        self._lag = LagClock()
        self.epochs = EpochHistory(store.settings.config_dir).load()
        self.server = (HAServer(store, settings, listen_host, ha_port, self._acknowledged, self.epochs)
                       if is_master else None)
        self.client = None if is_master else HAClient(store, settings, master_ha_addr, self.epochs)
        self._ha_port = ha_port

    async def start(self) -> None:
        if self.server is not None:
            await self.server.start()
            self._ha_port = self.server.port
            self._store.add_arrival_listener(self._appended, self.server.connections)  # (none: no slave)
        if self.client is not None:
            self.client.start()

    async def close(self) -> None:
        """Stop replicating; waiting sends are answered FLUSH_SLAVE_TIMEOUT. Idempotent."""
        self.waiters.release_all()
        self._store.remove_arrival_listener(self._appended)  # a demoted master keeps its store
        if self.server is not None:
            await self.server.close()
        if self.client is not None:
            await self.client.close()

    @property
    def ha_server_addr(self) -> str:
        """What a master registers as haServerAddr: where its slaves connect."""
        return f"{self._advertised_host}:{self._ha_port}"

    def _appended(self, _topic: str, _queue_id: int, _next_offset: int) -> None:
        assert self.server is not None
        self.server.notify()

    def _acknowledged(self, offset: int) -> None:
        self.waiters.acknowledge(offset)

    # --- SYNC_MASTER ------------------------------------------------------------------------

    def in_sync(self, end: int) -> bool:
        """A slave is connected and less than haMaxGapNotInSync behind ``end``."""
        if self.server is None or not self.server.connections:
            return False
        return end - self.waiters.acked < self.settings.ha_max_gap_not_in_sync

    async def wait_for_slave(self, requests: list[PutRequest] | BatchPutRequest, result: PutResult) -> PutResult:
        """Under SYNC_MASTER, hold a stored send until a slave has it (see ``syncwait``).

        A send whose last message says WAIT=false is answered at once, as RocketMQ does.
        """
        if not self.sync_master or not result.appended or not _wants_wait(requests):
            return result
        end = result.wrote_offsets[-1] + result.wrote_sizes[-1]
        if not self.in_sync(end):
            _limited.warning("not-in-sync", "SYNC_MASTER: %s; sends are stored here only and answered "
                             "SLAVE_NOT_AVAILABLE", self._why_not_in_sync(end))
            return _with_status(result, PutStatus.SLAVE_NOT_AVAILABLE)
        if not await self.waiters.wait(end, self._timeout):
            return _with_status(result, PutStatus.FLUSH_SLAVE_TIMEOUT)
        return result

    def _why_not_in_sync(self, end: int) -> str:
        if self.server is None or not self.server.connections:
            return "no slave is connected"
        return (f"the best slave is {end - self.waiters.acked} bytes behind, more than haMaxGapNotInSync "
                f"({self.settings.ha_max_gap_not_in_sync})")

    # --- state ------------------------------------------------------------------------------

    def status(self) -> ReplicationStatus:
        end = self._store.max_phy_offset
        if self.server is not None:
            connections = len(self.server.connections)
            acked = max((c.ack_offset for c in self.server.connections), default=-1)
            behind = max(0, end - acked) if connections else 0
            seconds = self._lag.observe(end, acked) if connections else 0.0
            return ReplicationStatus(True, connections, acked, behind, seconds,
                                     connections > 0 and self.in_sync(end), "")
        assert self.client is not None
        connected = self.client.connected_to is not None
        behind = max(0, self.client.master_offset - end)
        return ReplicationStatus(False, int(connected), end, behind, 0.0, connected, self.client.address or "")

    def runtime_info(self) -> dict[str, str]:
        """Replication keys of GET_BROKER_RUNTIME_INFO."""
        s = self.status()
        info = {
            "haConnectionCount": str(s.connections),
            "haSlaveAckOffset" if s.is_master else "haSlaveMaxOffset": str(s.ack_offset),
            "haBehindBytes": str(s.behind_bytes),
            "haInSync": "true" if s.in_sync else "false",
            "haEpoch": str(self.epochs.current.number),  # a slave's: its master's, as last adopted
        }
        if s.is_master:
            info["haListenAddr"] = self.ha_server_addr
            info["haBehindSeconds"] = f"{s.behind_seconds:.3f}"
        else:
            assert self.client is not None
            info["haMasterAddress"] = s.master_ha_addr
            info["haClientState"] = self.client.state.value
            info["haLastFrameTimestamp"] = str(int(self.client.last_frame_at * 1000))
        return info


def _wants_wait(requests: list[PutRequest] | BatchPutRequest) -> bool:
    """RocketMQ's waitStoreMsgOK: the WAIT property of the last message, true unless "false"."""
    props = requests.messages[-1][2] if isinstance(requests, BatchPutRequest) else requests[-1].properties
    if isinstance(props, str):
        value = messageproperties.property_value(props, messageproperties.WAIT)
    else:
        value = props.get(messageproperties.WAIT)
    return value != "false"


def _with_status(result: PutResult, status: PutStatus) -> PutResult:
    return dataclasses.replace(result, status=status)

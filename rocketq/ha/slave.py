"""The slave's HA client (RocketMQ's HAClient): report where the log ends, append what comes.

The client connects to the master's HA address (``haMasterAddress`` if set, otherwise the
``haServerAddr`` the name server hands back at registration) and reports its CommitLog end at
once, then after every frame it appends and every ``haSendHeartbeatInterval`` when idle. Each
transfer frame must start exactly at the slave's end (an empty slave takes the first frame's
offset, the start of the master's newest segment); its bytes go through
``MessageStore.append_replicated``, which writes them at the same offsets and builds the
ConsumeQueues and index as the records complete.

Anything unexpected closes the connection and the client reconnects with a backoff doubling
from ``RECONNECT_MIN_S`` to ``RECONNECT_MAX_S``: a refused connection, silence for
``haHousekeepingInterval``, a frame at the wrong offset or over the size limit. Two cases are
repaired before reconnecting: an empty frame *behind* the slave's end means the master's log is
shorter (an old master rejoining as a slave): the slave truncates to it; bytes that are not the
master's records (``ReplicaRecordError``) are cut back to the last whole record.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable
from typing import Final

from rocketq.ha import epochs, protocol
from rocketq.ha.settings import MAX_TRANSFER_BATCH, HASettings
from rocketq.protocol import addresses
from rocketq.ratelimit import LogLimiter
from rocketq.store.commitlog import ReplicaOffsetError
from rocketq.store.messagestore import MessageStore
from rocketq.store.reput import ReplicaRecordError
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)
limited = LogLimiter(log)

RECONNECT_MIN_S: Final = 0.2
RECONNECT_MAX_S: Final = 5.0
"""RocketMQ waits 5 s after every failure; starting lower makes a restarted master's slave
resume within a fraction of a second."""
CONNECT_TIMEOUT_S: Final = 3.0
NO_MASTER_RECHECK_S: Final = 1.0
"""How often a slave that does not know its master yet asks again (registration learns it)."""


class ClientState(enum.Enum):
    NO_MASTER = "no master address"
    CONNECTING = "connecting"
    TRANSFERRING = "transferring"
    CLOSED = "closed"


class _Resync(Exception):
    """The connection ends after a truncation; ``at_once``: reconnect without a backoff (the
    master said where its log ends), otherwise back off (its bytes were not records)."""

    def __init__(self, *, at_once: bool) -> None:
        super().__init__()
        self.at_once = at_once


class HAClient:
    """Owner of the slave's replication task."""

    def __init__(self, store: MessageStore, settings: HASettings, master_address: Callable[[], str | None],
                 history: epochs.EpochHistory) -> None:
        self._store = store
        self._epochs = history
        self._settings = settings
        self._master_address = master_address
        self._task = OwnedTask("ha-client", self._run)
        self.state = ClientState.NO_MASTER
        self.connected_to: str | None = None
        self.master_offset = 0
        """End of the newest frame from the master: the master's end when it was sent."""
        self.last_frame_at = 0.0
        """Wall time of the newest frame (heartbeats included)."""
        self.connects = 0
        self.received_bytes = 0

    def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.stop()
        self.state = ClientState.CLOSED

    @property
    def address(self) -> str | None:
        return self._settings.ha_master_address or self._master_address()

    async def _run(self) -> None:
        backoff = RECONNECT_MIN_S
        while True:
            address = self.address
            if not address:
                self.state = ClientState.NO_MASTER
                await asyncio.sleep(NO_MASTER_RECHECK_S)
                continue
            self.state = ClientState.CONNECTING
            try:
                await self._session(address)
                backoff = RECONNECT_MIN_S
            except _Resync as resync:
                if resync.at_once:
                    backoff = RECONNECT_MIN_S
                    continue
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                # ValueError: HAProtocolError, ReplicaOffsetError, or an address that is no host:port
                limited.warning(address, "HA: replication from master %s interrupted: %s", address,
                                protocol.describe_failure(exc))
            finally:
                self.connected_to = None
            await asyncio.sleep(backoff)
            backoff = min(RECONNECT_MAX_S, backoff * 2)

    async def _session(self, address: str) -> None:
        host, port = addresses.parse_host_port(address)
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            reader, writer = await asyncio.open_connection(host, port)
        self.connects += 1
        self.connected_to = address
        self.master_offset = 0  # learnt again from this connection's frames
        self.state = ClientState.TRANSFERRING
        reports = OwnedTask("ha-client-reports", lambda: self._report_periodically(writer))
        try:
            writer.write(protocol.encode_epoch_request())
            await self._match_epochs(reader, address)
            log.info("HA: connected to master %s, reporting offset %d", address, self._store.max_phy_offset)
            writer.write(protocol.encode_report(self._store.max_phy_offset))
            reports.start()
            await self._receive(reader, writer)
        finally:
            await reports.stop()
            writer.close()
            with contextlib.suppress(OSError):
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()

    async def _match_epochs(self, reader: asyncio.StreamReader, address: str) -> None:
        """Cut what the master's epoch history does not contain, then take that history (ha/epochs.py)."""
        async with asyncio.timeout(self._settings.ha_housekeeping_interval / 1000):
            size = protocol.decode_epoch_answer_header(await reader.readexactly(protocol.TRANSFER_HEADER_SIZE))
            theirs, their_end = epochs.decode(await reader.readexactly(size))
        mine = self._store.max_phy_offset
        point = epochs.consistent_point(self._epochs.entries, mine, theirs, their_end)
        if mine > point:
            dropped = await self._store.truncate(point)
            log.warning("HA: master %s (epoch %d) does not hold this log's bytes beyond %d: truncating, "
                        "dropped %d bytes (%d messages)", address, theirs[-1].number, point, mine - point, dropped)
        self._epochs.adopt(theirs)

    async def _report_periodically(self, writer: asyncio.StreamWriter) -> None:
        interval = self._settings.ha_send_heartbeat_interval / 1000
        while True:
            await asyncio.sleep(interval)
            writer.write(protocol.encode_report(self._store.max_phy_offset))

    async def _receive(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        idle = self._settings.ha_housekeeping_interval / 1000
        store = self._store
        while True:
            async with asyncio.timeout(idle):
                raw = await reader.readexactly(protocol.TRANSFER_HEADER_SIZE)
                header = protocol.decode_transfer_header(raw, MAX_TRANSFER_BATCH)
                body = await reader.readexactly(header.size) if header.size else b""
            self.last_frame_at = time.time()
            mine = store.max_phy_offset
            if not header.size and header.offset < mine:
                log.warning("HA: the master's log ends at %d, this slave's at %d: truncating to the master's",
                            header.offset, mine)
                await store.truncate(header.offset)
                raise _Resync(at_once=True)
            if mine and header.offset != mine:
                raise ReplicaOffsetError(f"the master sent offset {header.offset}, this slave's log ends at {mine}")
            self.master_offset = max(self.master_offset, header.end)
            if not header.size:
                continue
            try:
                end = store.append_replicated(header.offset, body)
            except ReplicaRecordError as exc:
                log.error("HA: %s; cutting back to the last whole record at %d", exc, store.dispatched_offset)
                await store.truncate(store.dispatched_offset)
                raise _Resync(at_once=False) from None
            self.received_bytes += header.size
            writer.write(protocol.encode_report(end))
            await writer.drain()  # a master that stops reading reports must not grow our buffer


"""The master's HA server: one streaming connection per slave (RocketMQ's HAConnection).

A slave connects to ``haListenPort`` and reports the end of its CommitLog. The connection then
runs two loops:

- **reports** (slave -> master): every 8-byte report is the slave's new end, which
  acknowledges everything below it (SYNC_MASTER sends waiting in ``syncwait`` are released).
  A report beyond the master's own end after the first, or silence for
  ``haHousekeepingInterval``, closes the connection.
- **stream** (master -> slave): from the first report's offset (an empty slave gets the
  master's newest segment from its start, as in RocketMQ) the CommitLog is sent in frames of
  at most ``haTransferBatchSize`` bytes, never across a segment end. It waits for the socket to
  drain after each frame, so a slow slave makes the master wait, never buffer: at most one
  frame plus the transport's high-water mark is queued per slave. With nothing new it sleeps
  until the store appends (``notify``), and sends an empty heartbeat frame every
  ``haSendHeartbeatInterval``. A slave that reports an end beyond the master's gets one empty
  frame at the master's end (``protocol``: it truncates) and the connection closes.

The server knows nothing of roles or sends: ``service`` owns it and reads its state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final

from rocketq.ha import epochs, protocol
from rocketq.ha.settings import HASettings
from rocketq.ratelimit import LogLimiter
from rocketq.store.messagestore import MessageStore
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)
limited = LogLimiter(log)

IDLE_CHECK_S: Final = 1.0
"""Longest sleep of an idle stream between looks at the log (appends wake it sooner)."""
MAX_SLAVES: Final = 64
"""Connections accepted at once; more are closed at once (a group has a handful of slaves)."""


class SlaveConnection:
    """One slave: its reported offsets and the stream of CommitLog bytes it is sent."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, store: MessageStore,
                 settings: HASettings, on_ack: Callable[[int], None],
                 on_end: Callable[[SlaveConnection], None], history: epochs.EpochHistory) -> None:
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._reader = reader
        self._writer = writer
        self._store = store
        self._settings = settings
        self._on_ack = on_ack
        self._on_end = on_end
        self._epochs = history
        self.request_offset = -1
        """Where the slave asked the stream to start (its first report)."""
        self.ack_offset = -1
        """The slave's last reported end: it holds everything below."""
        self.next_transfer = -1
        """Offset of the next byte the stream sends."""
        self.connected_at = time.time()
        self._requested = asyncio.Event()
        self._data = asyncio.Event()
        self._ended = asyncio.Event()
        self._reports = OwnedTask(f"ha-reports {self.peer}", lambda: self._until_end(self._read_reports()))
        self._stream = OwnedTask(f"ha-stream {self.peer}", lambda: self._until_end(self._stream_log()))
        self._task = OwnedTask(f"ha-slave {self.peer}", self._run)

    def start(self) -> None:
        self._task.start()

    def notify(self) -> None:
        """The store appended: wake the stream if it is idle."""
        self._data.set()

    async def close(self) -> None:
        await self._task.stop()

    async def _until_end(self, loop: Coroutine[Any, Any, None]) -> None:
        try:
            await loop
        finally:
            self._ended.set()

    async def _run(self) -> None:
        """Both loops run until either ends (the peer left, or a protocol error): then both stop."""
        try:
            self._reports.start()
            self._stream.start()
            await self._ended.wait()
        finally:
            await self._reports.stop()
            await self._stream.stop()
            self._writer.close()
            with contextlib.suppress(OSError):
                async with asyncio.timeout(1.0):
                    await self._writer.wait_closed()
            self._on_end(self)
            log.info("HA connection from slave %s closed (acknowledged %d)", self.peer, self.ack_offset)

    async def _read_reports(self) -> None:
        idle = self._settings.ha_housekeeping_interval / 1000
        try:
            while True:
                async with asyncio.timeout(idle):
                    raw = await self._reader.readexactly(protocol.REPORT_SIZE)
                offset = protocol.decode_report(raw)
                first = self.request_offset < 0
                if offset == protocol.EPOCH_REQUEST:
                    if not first:
                        raise protocol.HAProtocolError("an epoch request after the first report")
                    self._writer.write(protocol.encode_epoch_answer(
                        epochs.encode(self._epochs.entries, self._store.max_phy_offset)))
                    continue
                if first:
                    self.request_offset = offset
                    self._requested.set()
                if offset > self._store.max_phy_offset:
                    if first:
                        continue  # the stream tells the slave to truncate, then ends
                    limited.warning(self.peer, "slave %s acknowledged %d beyond this log's end %d: closing",
                                    self.peer, offset, self._store.max_phy_offset)
                    return
                self.ack_offset = offset
                self._on_ack(offset)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError, protocol.HAProtocolError) as exc:
            limited.warning(self.peer, "HA connection from slave %s ends: %s", self.peer,
                            protocol.describe_failure(exc))

    async def _stream_log(self) -> None:
        idle = self._settings.ha_housekeeping_interval / 1000
        try:
            async with asyncio.timeout(idle):
                await self._requested.wait()
        except TimeoutError:
            limited.warning(self.peer, "slave %s sent no offset report in %.0f s: closing", self.peer, idle)
            return
        start = self._start_offset()
        if start is None:
            return
        self.next_transfer = start
        log.info("HA: streaming the commitlog to slave %s from offset %d", self.peer, start)
        try:
            await self._send_from(start)
        except ConnectionError as exc:
            limited.warning(self.peer, "HA stream to slave %s ends: %s", self.peer, protocol.describe_failure(exc))

    def _start_offset(self) -> int | None:
        commitlog = self._store.commitlog
        end = commitlog.max_offset
        requested = self.request_offset
        if requested > end:
            log.warning("slave %s holds commitlog bytes up to %d, this master only up to %d: "
                        "telling it to truncate", self.peer, requested, end)
            self._writer.write(protocol.encode_transfer_header(end, 0))
            return None
        start = requested if requested > 0 else end - end % commitlog.segment_size
        if start < commitlog.min_offset:
            limited.warning(self.peer, "slave %s needs offset %d, but this master's log starts at %d: "
                            "the slave cannot catch up (start it with an empty store)", self.peer, start,
                            commitlog.min_offset)
            return None
        return start

    async def _send_from(self, offset: int) -> None:
        commitlog = self._store.commitlog
        batch = self._settings.ha_transfer_batch_size
        heartbeat = self._settings.ha_send_heartbeat_interval / 1000
        writer = self._writer
        last_write = time.monotonic()
        while True:
            view = commitlog.read_replica(offset, batch)
            if view is None:
                limited.warning(self.peer, "offset %d for slave %s is no longer in this master's log",
                                offset, self.peer)
                return
            if view:
                # a copy: the transport may keep what it cannot send yet, and must not pin the map
                writer.write(protocol.encode_transfer_header(offset, len(view)) + view)
                offset += len(view)
                self.next_transfer = offset
                last_write = time.monotonic()
                await writer.drain()
                continue
            self._data.clear()
            quiet = time.monotonic() - last_write
            if quiet >= heartbeat:
                writer.write(protocol.encode_transfer_header(offset, 0))
                await writer.drain()
                last_write = time.monotonic()
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(IDLE_CHECK_S, heartbeat - quiet)):
                    await self._data.wait()


class HAServer:
    """The HA port of a master and its slave connections."""

    def __init__(self, store: MessageStore, settings: HASettings, host: str, port: int,
                 on_ack: Callable[[int], None], history: epochs.EpochHistory) -> None:
        self._store = store
        self._epochs = history
        self._settings = settings
        self._host = host
        self._port = port
        self._on_ack = on_ack
        self._server: asyncio.Server | None = None
        self.connections: set[SlaveConnection] = set()
        self.port = port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self._host, self._port)
        self.port = self._server.sockets[0].getsockname()[1]
        # not "listening on": that phrase is the process's ready line, which launchers wait for
        log.info("HA server: slaves connect to %s:%d", self._host, self.port)

    def notify(self) -> None:
        for connection in self.connections:
            connection.notify()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.connections) >= MAX_SLAVES:
            limited.warning("accept", "HA server: %d slaves connected already, refusing another", MAX_SLAVES)
            writer.close()
            return
        connection = SlaveConnection(reader, writer, self._store, self._settings, self._on_ack,
                                     self.connections.discard, self._epochs)
        self.connections.add(connection)
        log.info("HA connection from slave %s", connection.peer)
        connection.start()

    async def close(self) -> None:
        """Stop accepting, close every slave connection. Idempotent."""
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            await connection.close()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None


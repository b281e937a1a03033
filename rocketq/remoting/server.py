"""A TCP server that hands every accepted connection the same table of request handlers.

Start-up comes in two steps so that a process can learn its port before anyone can connect:
``bind`` reserves the address (a bound socket that does not listen: a client's connect is
refused, as if nothing were there), ``start`` begins listening and accepting. A broker binds
first (its port is part of every message id its store writes), opens and recovers its store,
installs its handlers, and only then starts: no client ever talks to a half-started broker.

It also owns what bounds a server's connections (``limits``): it refuses connections over the
cap or inside the descriptor reserve (closed at once, one rate-limited log line), closes those
silent for ``idle_seconds`` (``idle``), and counts both in ``stats`` for its metrics
(``collector``). Its connections guard their backlog: they stop reading from a peer that does
not read its answers (``connection``).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Mapping
from typing import Final

from rocketq import ratelimit
from rocketq.protocol import frames
from rocketq.remoting import idle, limits
from rocketq.remoting.connection import Connection, Handler
from rocketq.remoting.limits import ConnectionLimits
from rocketq.remoting.metrics import RemotingCollector
from rocketq.remoting.stats import RemotingStats

log = logging.getLogger(__name__)
CLOSE_GRACE_SECONDS: Final = 5.0
"""How long ``close`` lets connections write what is queued before it aborts them."""
LISTEN_BACKLOG: Final = 1024
"""Pending connections the kernel queues before the server accepts them."""
_limit_log = ratelimit.LogLimiter(log)


class RemotingServer:
    def __init__(
        self,
        handlers: Mapping[int, Handler],
        *,
        host: str = "0.0.0.0",
        port: int = 0,
        max_frame_size: int = frames.DEFAULT_MAX_FRAME_SIZE,
        name: str = "remoting",
        on_connection_closed: Callable[[Connection], None] | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self._handlers = handlers
        self._host = host
        self._requested_port = port
        self._max_frame_size = max_frame_size
        self._name = name
        self._on_closed = on_connection_closed
        self._limits = limits or ConnectionLimits()
        self._server: asyncio.Server | None = None
        self._bound: socket.socket | None = None
        self.connections: set[Connection] = set()
        self.stats = RemotingStats()
        self._idle = idle.IdleCloser(lambda: self.connections, self._limits.idle_seconds, name, self._closing_idle)
        self.max_connections = self._limits.max_connections
        """Set at ``start`` when the limits leave it to the descriptor limit."""
        self._first_reserved_fd = 1 << 62

    @property
    def port(self) -> int:
        if self._server is not None:
            return int(self._server.sockets[0].getsockname()[1])
        if self._bound is not None:
            return int(self._bound.getsockname()[1])
        raise RuntimeError("server not bound")

    async def bind(self) -> None:
        """Reserve the address without listening; OSError if it is taken. Idempotent."""
        if self._bound is not None or self._server is not None:
            return
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(self._host, self._requested_port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
        family, kind, proto, _name, address = infos[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
        except OSError as exc:
            sock.close()
            raise OSError(exc.errno, f"cannot bind {self._host}:{self._requested_port}: {exc.strerror}") from None
        except BaseException:
            sock.close()
            raise
        self._bound = sock

    async def start(self) -> None:
        """Listen and accept (binding first unless ``bind`` already did)."""
        soft_limit = limits.raise_nofile_limit()
        self._first_reserved_fd = limits.first_reserved_descriptor(soft_limit)
        if not self.max_connections:
            self.max_connections = limits.derived_max_connections(soft_limit)
        await self.bind()
        sock, self._bound = self._bound, None
        assert sock is not None
        loop = asyncio.get_running_loop()
        try:
            # listen here, not in create_server: a port taken meanwhile (another process bound
            # it between bind and listen) is then an OSError naming it on every event loop
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.listen(LISTEN_BACKLOG)
        except OSError as exc:
            sock.close()
            raise OSError(exc.errno, f"cannot listen on {self._host}:{self._requested_port}: {exc.strerror}") from None
        try:
            self._server = await loop.create_server(self._new_connection, sock=sock, backlog=LISTEN_BACKLOG)
        except BaseException:
            sock.close()
            raise
        self._idle.start()

    def _new_connection(self) -> Connection:
        conn = Connection(self._handlers, max_frame_size=self._max_frame_size, name=self._name,
                          guard_backlog=True, stats=self.stats, admit=self._admit)
        self.connections.add(conn)
        conn.add_close_callback(self._forget)
        return conn

    def _admit(self, transport: asyncio.BaseTransport) -> bool:
        sock = transport.get_extra_info("socket")
        fd = sock.fileno() if sock is not None else -1
        if len(self.connections) <= self.max_connections and fd < self._first_reserved_fd:
            return True
        self.stats.refused += 1
        _limit_log.warning("refused", "%s: refusing connection from %s: %d connections open (cap %d), "
                           "descriptor %d (reserve from %d)", self._name,
                           transport.get_extra_info("peername"), len(self.connections) - 1,
                           self.max_connections, fd, self._first_reserved_fd)
        return False

    def _forget(self, conn: Connection) -> None:
        self.connections.discard(conn)
        if self._on_closed is not None:
            self._on_closed(conn)

    def _closing_idle(self, conn: Connection) -> None:
        self.stats.idle_closed += 1
        _limit_log.log(logging.INFO, "idle", "%s: closing connection %s: no traffic for %g s",
                       self._name, conn.remote_addr, self._limits.idle_seconds)

    def collector(self) -> RemotingCollector:
        """A Prometheus collector of this server's counters, for its process's registry."""
        return RemotingCollector(self.stats, lambda: len(self.connections), self._name)

    async def close(self) -> None:
        """Stop accepting, close every connection, wait for them. Idempotent."""
        bound, self._bound = self._bound, None
        if bound is not None:
            bound.close()
        await self._idle.close()
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        conns = list(self.connections)
        try:
            async with asyncio.timeout(CLOSE_GRACE_SECONDS):
                await asyncio.gather(*(conn.close() for conn in conns), return_exceptions=True)
        except TimeoutError:  # peers that read nothing would keep their answers, and us, forever
            for conn in conns:
                conn.abort()
            await asyncio.gather(*(conn.wait_closed() for conn in conns), return_exceptions=True)
        await server.wait_closed()

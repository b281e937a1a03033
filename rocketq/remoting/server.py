"""A TCP server that hands every accepted connection the same table of request handlers."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Mapping

from rocketq.protocol import frames
from rocketq.remoting.connection import Connection, Handler

log = logging.getLogger(__name__)


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
    ) -> None:
        self._handlers = handlers
        self._host = host
        self._requested_port = port
        self._max_frame_size = max_frame_size
        self._name = name
        self._on_closed = on_connection_closed
        self._server: asyncio.Server | None = None
        self.connections: set[Connection] = set()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._new_connection, self._host, self._requested_port, reuse_address=True, backlog=1024
        )
        for sock in self._server.sockets:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _new_connection(self) -> Connection:
        conn = Connection(self._handlers, max_frame_size=self._max_frame_size, name=self._name)
        self.connections.add(conn)
        conn.add_close_callback(self._forget)
        return conn

    def _forget(self, conn: Connection) -> None:
        self.connections.discard(conn)
        if self._on_closed is not None:
            self._on_closed(conn)

    async def close(self) -> None:
        """Stop accepting, close every connection, wait for them. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        await asyncio.gather(*(conn.close() for conn in list(self.connections)), return_exceptions=True)
        await server.wait_closed()

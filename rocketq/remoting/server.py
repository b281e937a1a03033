"""A TCP server that hands every accepted connection the same table of request handlers.

Start-up comes in two steps so that a process can learn its port before anyone can connect:
``bind`` reserves the address (a bound socket that does not listen: a client's connect is
refused, as if nothing were there), ``start`` begins listening and accepting. A broker binds
first (its port is part of every message id its store writes), opens and recovers its store,
installs its handlers, and only then starts: no client ever talks to a half-started broker.
"""

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
        self._bound: socket.socket | None = None
        self.connections: set[Connection] = set()

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
        await self.bind()
        sock, self._bound = self._bound, None
        assert sock is not None
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(self._new_connection, sock=sock, backlog=1024)
        except BaseException:
            sock.close()
            raise
        for listening in self._server.sockets:
            listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

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
        bound, self._bound = self._bound, None
        if bound is not None:
            bound.close()
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        await asyncio.gather(*(conn.close() for conn in list(self.connections)), return_exceptions=True)
        await server.wait_closed()

"""Moving ``wire`` frames between members: one listener, one outgoing connection per peer.

:class:`PeerServer` accepts connections on this member's peer port and answers each request with
the handler it was given, in order. The handler is synchronous: a member's state changes in one
step per message, with no other message in between. A frame that does not decode closes that
connection (one rate-limited warning); the handler refusing a request (another group, an
unknown sender) does the same.

Requests from one member are handled in the order it sent them, even across reconnects: once a
member's request arrives on a new connection, whatever is still unread on its older ones is
dropped unanswered. (A stale TRUNCATE from before a reconnect, handled after the newer pushes,
would otherwise drop entries the leader already counts as replicated.)

:class:`PeerClient` is a member's line to one peer: ``call`` sends a request and waits for its
answer. Several calls may be in flight at once (a vote and a push); answers find their caller
by request id. A broken connection fails every pending call with :class:`PeerUnavailable` and
the next call opens a new one, so a peer that restarts is reached again without any
bookkeeping by the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import logging
from collections.abc import Callable

from rocketq.dledger import wire
from rocketq.ratelimit import LogLimiter

log = logging.getLogger(__name__)
limited = LogLimiter(log)

Handler = Callable[[wire.Request], wire.Answer]


class PeerUnavailable(ConnectionError):
    """No answer from the peer: not reachable, connection lost, or too slow."""


class Refused(ValueError):
    """A request this member will not serve on this connection (wrong group, unknown sender)."""


class PeerServer:
    def __init__(self, host: str, port: int, handler: Handler) -> None:
        self._host = _bind_host(host)
        self._port = port
        self._handler = handler
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._connection_ids = itertools.count(1)
        self._newest: dict[str, int] = {}
        """Each member's newest connection: requests still arriving on an older one are dropped."""

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self._host, self._port, reuse_address=True)

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        # Closing a connection ends its task with a read error; cancelling the task instead would
        # make asyncio's stream callback log the cancellation as an error.
        for writer in self._connections.values():
            writer.close()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        connection = next(self._connection_ids)
        sender: str | None = None
        peername = writer.get_extra_info("peername")
        peer = str(peername[0]) if isinstance(peername, tuple) else str(peername)  # one log key per host
        try:
            while True:
                request_id, msg = wire.decode(await wire.read_frame(reader))
                if isinstance(msg, wire.Answer):
                    raise wire.WireError("an answer where a request was expected")
                if sender is not None and msg.sender != sender:
                    raise wire.WireError(f"{msg.sender!r} on a connection of {sender!r}")
                if sender is not None and self._newest.get(sender) != connection:
                    log.debug("DLedger %s reconnected; dropping its older connection", sender)
                    return
                writer.write(wire.encode(request_id, self._handler(msg)))
                if sender is None:  # registered only once the handler accepted the sender
                    sender = msg.sender
                    self._newest[sender] = connection
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            log.debug("DLedger peer %s disconnected: %s", peer, exc or type(exc).__name__)
        except (wire.WireError, Refused) as exc:
            limited.warning(peer, "closing DLedger peer connection from %s: %s", peer, exc)
        except Exception:  # a bug in a handler must cost one connection, not the member
            log.exception("DLedger request from %s failed; closing its connection", peer)
        finally:
            self._connections.pop(task, None)
            if sender is not None and self._newest.get(sender) == connection:
                del self._newest[sender]
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def _bind_host(host: str) -> str | None:
    """Listen on the listed host if it is an IP (loopback stays loopback), else on every
    interface: a DNS name (a pod's stable name) may not resolve to this host while it starts."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return None
    return host


class PeerClient:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._connect_lock = asyncio.Lock()
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[wire.Answer]] = {}
        self._next_id = 0
        self._closed = False

    async def call(self, request: wire.Request, timeout: float) -> wire.Answer:
        """The peer's answer; PeerUnavailable when it cannot be had within ``timeout`` seconds."""
        if self._closed:
            raise PeerUnavailable("closed")
        self._next_id = (self._next_id + 1) & wire.MAX_REQUEST_ID
        request_id = self._next_id
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(timeout):
                writer = await self._connected()
                # Registered only once connected: a lost connection fails exactly the calls sent on it.
                future: asyncio.Future[wire.Answer] = asyncio.get_running_loop().create_future()
                self._pending[request_id] = future
                writer.write(wire.encode(request_id, request))
                await writer.drain()
                return await future
        except TimeoutError:
            raise PeerUnavailable(f"no answer from {self.host}:{self.port} within {timeout:.3f}s") from None
        except PeerUnavailable:
            raise
        except OSError as exc:  # connect refused, reset while writing
            if writer is not None:
                self._drop(exc, writer)
            raise PeerUnavailable(f"{self.host}:{self.port}: {exc}") from None
        finally:
            self._pending.pop(request_id, None)

    async def _connected(self) -> asyncio.StreamWriter:
        async with self._connect_lock:
            if self._writer is None:
                reader, writer = await asyncio.open_connection(self.host, self.port)
                self._writer = writer
                self._reader_task = asyncio.get_running_loop().create_task(
                    self._read_answers(reader, writer), name=f"dledger-peer-{self.host}:{self.port}")
            return self._writer

    async def _read_answers(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_id, msg = wire.decode(await wire.read_frame(reader))
                if not isinstance(msg, wire.Answer):
                    raise wire.WireError("a request where an answer was expected")
                future = self._pending.get(request_id)
                if future is not None and not future.done():
                    future.set_result(msg)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self._drop(exc, writer)
        except wire.WireError as exc:
            limited.warning(f"{self.host}:{self.port}", "closing DLedger connection to %s:%d: %s",
                            self.host, self.port, exc)
            self._drop(exc, writer)

    def _drop(self, exc: BaseException, writer: asyncio.StreamWriter | None) -> None:
        """Forget the connection (if it is still ``writer``; None: whichever is open) and fail
        every call waiting on it."""
        if writer is not None and writer is not self._writer:
            return
        if self._writer is not None:
            self._writer.close()
        self._writer = None
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(PeerUnavailable(f"{self.host}:{self.port}: {exc or 'connection lost'}"))

    async def close(self) -> None:
        self._closed = True
        self._drop(PeerUnavailable("closed"), None)
        task, self._reader_task = self._reader_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

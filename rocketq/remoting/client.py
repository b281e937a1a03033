"""The client side: one reused connection per peer address.

Connections are opened on first use, shared by every caller, and dropped from the table when
they close, so the next call reconnects: after a server closed an idle one, after a network
error, or after this client closed it for having been idle itself for ``idle_seconds``
(RocketMQ's clientChannelMaxIdleTimeSeconds, 120 s). Handlers given here answer requests that servers send
to clients (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...).
An ``rpc_hook`` (RocketMQ's RPCHook.doBeforeRequest) sees every outgoing request just before
it is sent: the ACL signer (rocketq/acl/signing.py) adds AccessKey and Signature there.
Responses this client sends are never passed to it.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Mapping

from rocketq.protocol import addresses, frames
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting import idle, limits
from rocketq.remoting.connection import COALESCE_FRAMES, AnswerCallback, ClientConnection, Connection, Handler
from rocketq.remoting.errors import RemotingConnectError

RpcHook = Callable[[RemotingCommand], None]


def split_addr(addr: str) -> tuple[str, int]:
    """``host:port`` for a connection; RemotingConnectError when it is not one."""
    try:
        return addresses.parse_host_port(addr)
    except ValueError as exc:
        raise RemotingConnectError(str(exc)) from None


class RemotingClient:
    def __init__(
        self,
        handlers: Mapping[int, Handler] | None = None,
        *,
        connect_timeout: float = 3.0,
        max_frame_size: int = frames.DEFAULT_MAX_FRAME_SIZE,
        name: str = "client",
        idle_seconds: float = limits.DEFAULT_IDLE_SECONDS,
        rpc_hook: RpcHook | None = None,
    ) -> None:
        self._rpc_hook = rpc_hook
        self._handlers: Mapping[int, Handler] = handlers or {}
        self._connect_timeout = connect_timeout
        self._max_frame_size = max_frame_size
        self._name = name
        self._connections: dict[str, ClientConnection] = {}
        self._connecting: dict[str, asyncio.Future[ClientConnection]] = {}
        self._closed = False
        self._idle = idle.IdleCloser(self._connections.values, idle_seconds, name)

    async def connection(self, addr: str) -> ClientConnection:
        conn = self._connections.get(addr)
        if conn is not None and not conn.closed:
            return conn
        if self._closed:
            raise RemotingConnectError("client is closed")
        pending = self._connecting.get(addr)
        if pending is None:
            pending = asyncio.ensure_future(self._connect(addr))
            self._connecting[addr] = pending
            pending.add_done_callback(lambda _f: self._connecting.pop(addr, None))
        return await asyncio.shield(pending)

    async def _connect(self, addr: str) -> ClientConnection:
        host, port = split_addr(addr)
        loop = asyncio.get_running_loop()
        try:
            _transport, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: ClientConnection(self._handlers, max_frame_size=self._max_frame_size, name=self._name,
                                             flush_after_frames=COALESCE_FRAMES),
                    host,
                    port,
                ),
                self._connect_timeout,
            )
        except (OSError, TimeoutError) as exc:
            raise RemotingConnectError(f"cannot connect to {addr}: {exc or 'timeout'}") from None
        sock = _transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._connections[addr] = conn
        conn.add_close_callback(lambda c: self._forget(addr, c))
        self._idle.start()
        return conn

    def _forget(self, addr: str, conn: Connection) -> None:
        if self._connections.get(addr) is conn:
            del self._connections[addr]

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        conn = self._connections.get(addr)
        if conn is None or conn.closed:  # the open connection is the common case: no extra await
            conn = await self.connection(addr)
        if self._rpc_hook is not None:
            self._rpc_hook(cmd)
        return await conn.invoke(cmd, timeout)

    def request_now(self, addr: str, cmd: RemotingCommand, timeout: float,
                    on_answer: AnswerCallback) -> ClientConnection | None:
        """Send ``cmd`` at once on the open connection to ``addr``; ``on_answer`` is told its
        outcome (``Connection.request_callback``; ``cmd.opaque`` then names it for
        ``Connection.forget``). None, having sent nothing, when that would need a wait first
        (no connection yet, or one whose peer is slow to read): ``invoke`` then."""
        conn = self._connections.get(addr)
        if conn is None or not conn.ready:
            return None
        if self._rpc_hook is not None:
            self._rpc_hook(cmd)
        conn.request_callback(cmd, timeout, on_answer)
        return conn

    def ready_connection(self, addr: str) -> ClientConnection | None:
        """The open connection to ``addr`` when a request encoded by the caller may be sent on it
        now (``Connection.send_frame``): None when that needs a wait first (``request_now``'s
        cases), or when an rpc hook must see each request as a command (then ``request_now``)."""
        conn = self._connections.get(addr)
        if conn is None or self._rpc_hook is not None or not conn.ready:
            return None
        return conn

    def invoke_async(
        self,
        addr: str,
        cmd: RemotingCommand,
        timeout: float,
        callback: Callable[[asyncio.Task[RemotingCommand]], None] | None = None,
    ) -> asyncio.Task[RemotingCommand]:
        """Start an RPC and return at once: a task that ends with the response or the error.

        The caller owns the task (await it or cancel it); ``callback`` runs when it ends,
        like RocketMQ's InvokeCallback.
        """
        task = asyncio.get_running_loop().create_task(self.invoke(addr, cmd, timeout))
        if callback is not None:
            task.add_done_callback(callback)
        return task

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        conn = self._connections.get(addr)
        if conn is None or conn.closed:
            conn = await self.connection(addr)
        await conn.invoke_oneway(self.prepare(cmd))

    def prepare(self, cmd: RemotingCommand) -> RemotingCommand:
        """``cmd`` as it must leave: passed through the rpc hook. For a request sent on a
        connection directly (an answer to a broker's check-back goes back on its connection)."""
        if self._rpc_hook is not None:
            self._rpc_hook(cmd)
        return cmd

    def close_connection(self, addr: str) -> None:
        conn = self._connections.pop(addr, None)
        if conn is not None:
            conn.abort()

    async def close(self) -> None:
        """Close every connection. Idempotent."""
        self._closed = True
        await self._idle.close()
        conns = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

"""One TCP connection carrying remoting frames both ways.

A ``Connection`` is symmetric: either side may send requests (``invoke``, ``invoke_oneway``)
and either side may receive them — a broker calls NOTIFY_CONSUMER_IDS_CHANGED on a consumer's
connection exactly like a client calls SEND_MESSAGE on the broker's. Responses are matched to
waiting futures by ``opaque``; requests are dispatched to ``handlers`` by ``code``.

Writes are batched: frames queued during one event-loop turn leave in one ``writelines``, or
every ``FLUSH_AFTER_FRAMES`` frames when a turn queues many (so the peer can start early).
A handler runs *eagerly*: its first step runs inside ``data_received``, and only a handler
that actually waits (a SYNC_FLUSH group commit, a name-server call) becomes a task. Most
requests (an ASYNC_FLUSH send, a pull, a heartbeat) finish in that first step, so they cost
neither a task nor an extra loop turn; see ``_Resumed`` for how the rest keep a task's
semantics (exceptions, cancellation on connection loss).
Every buffer is capped: a frame larger than ``max_frame_size`` or any undecodable byte closes
the connection (with a log line), too many requests in flight from one peer are answered
SYSTEM_BUSY, and a caller waits while the kernel send buffer is full.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from typing import Any, Final

from rocketq.protocol import frames
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import ONEWAY_FLAG, RESPONSE_FLAG, FrameError, RemotingCommand
from rocketq.protocol.headers import HeaderError
from rocketq.remoting.errors import RemotingSendError, RemotingTimeoutError, RemotingTooMuchRequestError

log = logging.getLogger(__name__)

Handler = Callable[["Connection", RemotingCommand], Awaitable[RemotingCommand | None]]
"""A request handler: the response to send, or None (oneway, or answered later)."""

MAX_REQUESTS_IN_FLIGHT: Final = 8192
"""Requests from one peer being handled at once; more are refused with SYSTEM_BUSY."""
MAX_PENDING_INVOKES: Final = 65536
"""Outgoing requests awaiting responses on one connection."""
FLUSH_AFTER_FRAMES: Final = 4
"""Frames queued in one event-loop turn before they are written without waiting for its end.
Answering a read of 30 requests in one write at the end made client and broker take turns
(each idle while the other worked); slices of 4 let them overlap, for two syscalls more per
ten requests (docs/benchmarks.md)."""


class Connection(asyncio.Protocol):
    def __init__(
        self,
        handlers: Mapping[int, Handler],
        *,
        max_frame_size: int = frames.DEFAULT_MAX_FRAME_SIZE,
        name: str = "remoting",
    ) -> None:
        self._handlers = handlers
        self._loop = asyncio.get_running_loop()
        self._decoder = frames.FrameDecoder(max_frame_size)
        self._name = name
        self._transport: asyncio.Transport | None = None
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaques = itertools.count(1)
        self._outbox: list[bytes] = []
        self._flush_scheduled = False
        self._writable = asyncio.Event()
        self._writable.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self._closed_future: asyncio.Future[None] = self._loop.create_future()
        self.remote_addr = "?"
        self.local_addr = "?"
        self.closed = False

    # --- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport is not a subclass
        self.remote_addr = _addr(transport.get_extra_info("peername"))
        self.local_addr = _addr(transport.get_extra_info("sockname"))

    def data_received(self, data: bytes) -> None:
        try:
            for cmd in self._decoder.feed(data):
                if cmd.flag & RESPONSE_FLAG:
                    self._complete(cmd)
                else:
                    self._dispatch(cmd)
        except FrameError as exc:
            log.warning("%s: closing connection %s: bad frame: %s", self._name, self.remote_addr, exc)
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._transport = None
        self._writable.set()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(RemotingSendError(f"connection to {self.remote_addr} closed"))
        self._pending.clear()
        for task in self._tasks:
            task.cancel()
        if not self._closed_future.done():
            self._closed_future.set_result(None)
        for cb in self._close_callbacks:
            try:
                cb(self)
            except Exception:
                log.exception("%s: close callback failed", self._name)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # --- sending --------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self._transport is None:
            return
        outbox = self._outbox
        outbox.append(data)
        if len(outbox) >= FLUSH_AFTER_FRAMES:
            # A long burst (a read full of requests) is answered in slices: the peer starts on
            # the first answers while the rest are still being worked out here.
            self._transport.writelines(outbox)
            self._outbox = []
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._transport is not None and self._outbox:
            self._transport.writelines(self._outbox)
        self._outbox = []

    def send_response(self, cmd: RemotingCommand) -> None:
        """Send a response now (handlers that answer later, e.g. held long-poll pulls)."""
        try:
            self._write(cmd.encode())
        except FrameError as exc:
            log.error("%s: response to %s not encodable: %s", self._name, self.remote_addr, exc)

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request and wait for its response; RemotingTimeoutError after ``timeout`` s."""
        if self.closed:
            raise RemotingSendError(f"connection to {self.remote_addr} is closed")
        if len(self._pending) >= MAX_PENDING_INVOKES:
            raise RemotingTooMuchRequestError(f"{len(self._pending)} requests pending on {self.remote_addr}")
        if not self._writable.is_set():
            await self._writable.wait()
        cmd.opaque = opaque = next(self._opaques) & 0x7FFFFFFF
        cmd.flag &= ~ONEWAY_FLAG
        fut: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self._pending[opaque] = fut
        # A timer on the future itself, not asyncio.wait_for: that wraps every call in a
        # second future and callbacks, which costs more than the rest of a send.
        timer = self._loop.call_later(timeout, _time_out, fut, self.remote_addr, cmd.code, timeout)
        try:
            self._write(cmd.encode())
            return await fut
        finally:
            timer.cancel()
            self._pending.pop(opaque, None)

    async def invoke_oneway(self, cmd: RemotingCommand) -> None:
        if self.closed:
            raise RemotingSendError(f"connection to {self.remote_addr} is closed")
        if not self._writable.is_set():
            await self._writable.wait()
        cmd.opaque = next(self._opaques) & 0x7FFFFFFF
        cmd.flag |= ONEWAY_FLAG
        self._write(cmd.encode())

    def _complete(self, response: RemotingCommand) -> None:
        fut = self._pending.pop(response.opaque, None)
        if fut is None:
            log.debug("%s: response for unknown opaque %d from %s", self._name, response.opaque, self.remote_addr)
        elif not fut.done():
            fut.set_result(response)

    # --- receiving requests ---------------------------------------------------------------

    def _dispatch(self, request: RemotingCommand) -> None:
        handler = self._handlers.get(request.code)
        if handler is None:
            self._reply(request, request.response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"))
            return
        if len(self._tasks) >= MAX_REQUESTS_IN_FLIGHT:
            self._reply(request, request.response(
                ResponseCode.SYSTEM_BUSY, "[OVERLOAD]system busy, too many requests in flight"))
            return
        run = self._run(handler, request)
        try:
            yielded = run.send(None)
        except StopIteration:
            return  # answered without waiting: the common case
        except asyncio.CancelledError:
            return  # the handler cancelled itself; a task would have ended cancelled, unanswered
        task = self._loop.create_task(_finish(_Resumed(run, yielded)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, handler: Handler, request: RemotingCommand) -> None:
        try:
            response = await handler(self, request)
        except HeaderError as exc:
            response = request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("%s: handler for code %d from %s failed", self._name, request.code, self.remote_addr)
            response = request.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if response is not None and not request.flag & ONEWAY_FLAG:
            self.send_response(response)

    def _reply(self, request: RemotingCommand, response: RemotingCommand) -> None:
        if not request.is_oneway:
            self.send_response(response)

    # --- lifecycle ------------------------------------------------------------------------

    def add_close_callback(self, cb: Callable[[Connection], None]) -> None:
        if self.closed:
            cb(self)
        else:
            self._close_callbacks.append(cb)

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    async def close(self) -> None:
        """Flush what is queued, close, and wait until the connection is gone. Idempotent."""
        if self._transport is not None:
            self._flush()
            self._transport.close()
        await asyncio.shield(self._closed_future)


def _time_out(fut: asyncio.Future[RemotingCommand], addr: str, code: int, timeout: float) -> None:
    if not fut.done():
        fut.set_exception(RemotingTimeoutError(f"no response from {addr} to code {code} within {timeout:.3f}s"))


class _Resumed:
    """The rest of a coroutine whose first step already ran outside any task.

    ``_dispatch`` runs a handler's first step itself (asyncio in 3.11 has no eager tasks).
    When that step suspends on a future, the coroutine is handed to a task through this
    awaitable, which re-yields that future and then relays every value sent and every
    exception thrown (cancellation included) to the coroutine, exactly as ``await`` would.

    ``await fut`` marks the future as awaited (``_asyncio_future_blocking``) just before
    yielding it, and the task that receives it clears the mark. Here the task receives it a
    turn later, so the mark is cleared at once (another handler may await the same future in
    the meantime, which needs it clear) and set again just before the task receives it.
    """

    __slots__ = ("_blocking", "_coro", "_yielded")

    def __init__(self, coro: Coroutine[Any, Any, None], yielded: Any) -> None:
        self._coro = coro
        self._yielded = yielded
        self._blocking = getattr(yielded, "_asyncio_future_blocking", None) is True
        if self._blocking:
            yielded._asyncio_future_blocking = False

    def __await__(self) -> Generator[Any, Any, None]:
        coro, value = self._coro, self._yielded
        if self._blocking:
            value._asyncio_future_blocking = True
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # relayed to the coroutine (cancellation too), not handled
                try:
                    value = coro.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    value = coro.send(sent)
                except StopIteration:
                    return


async def _finish(resumed: _Resumed) -> None:
    await resumed


def _addr(sockaddr: object) -> str:
    if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
        return f"{sockaddr[0]}:{sockaddr[1]}"
    return str(sockaddr)

"""One TCP connection carrying remoting frames both ways.

A ``Connection`` is symmetric: either side may send requests (``invoke``, ``invoke_oneway``)
and either side may receive them — a broker calls NOTIFY_CONSUMER_IDS_CHANGED on a consumer's
connection exactly like a client calls SEND_MESSAGE on the broker's. Responses are matched to
waiting futures by ``opaque``; requests are dispatched to ``handlers`` by ``code``.

Writes are batched: frames queued during one event-loop turn leave in one ``writelines``, or
every ``FLUSH_AFTER_FRAMES`` frames when a turn queues many (so the peer can start early; a
client coalesces up to ``COALESCE_FRAMES``).
A handler runs *eagerly*: its first step runs inside ``data_received``, and only a handler
that actually waits (a SYNC_FLUSH group commit, a name-server call) becomes a task. Most
requests (an ASYNC_FLUSH send, a pull, a heartbeat) finish in that first step, so they cost
neither a task nor an extra loop turn; see ``_Resumed`` for how the rest keep a task's
semantics (exceptions, cancellation on connection loss).
Consecutive requests of one read for a ``GroupedHandler`` (the broker's sends) are handed to it
together and answered in one write (``grouping``).
Every buffer is capped:

* a frame larger than ``max_frame_size`` or any undecodable byte closes the connection (with a
  log line rate-limited per peer host, and a count in ``RemotingStats.bad_frames``);
* requests in flight from one peer — handlers that wait (tasks) and handlers that answer later
  (a held long-poll pull returns None and answers through ``send_response``) — are capped at
  ``MAX_REQUESTS_IN_FLIGHT``; more are answered SYSTEM_BUSY;
* answers waiting to be written are capped on a server's connections (``guard_backlog``): a
  peer that sends requests but does not read the answers fills the transport's buffer past
  ``WRITE_HIGH_WATER``; the connection then stops reading (``pause_reading``; frames of the
  current read that are not dispatched yet stay in the decoder) until the peer has drained it
  below ``WRITE_LOW_WATER`` (``resume_writing``). Answers of handlers already running still
  go out; past ``MAX_BACKLOG`` the peer is taken for dead and the connection is aborted.
  A client's connection never stops reading: if both sides did, each could wait for the other;
* a caller of ``invoke`` waits while the transport's buffer is over the high-water mark.

Requests this side sends are timed by one timer per connection, not one per request: each
waiting request keeps its deadline in ``_pending``, and the timer is armed for the earliest
(``_sweep_timeouts`` fails what is due and re-arms). A timer per request (``call_later``, and
a done callback to cancel it) cost ~4 µs of a pipelined send's ~45 µs (docs/benchmarks.md).

The transport's buffer is the whole backlog: the outbox holds fewer than
``FLUSH_AFTER_FRAMES`` frames (``COALESCE_FRAMES`` on a client's connection) and is handed
over by the end of the loop turn.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import struct
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from typing import Any, Final, TypeAlias

from rocketq import ratelimit
from rocketq.protocol import frames, nativecodecs
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import ONEWAY_FLAG, RESPONSE_FLAG, FrameError, RemotingCommand
from rocketq.protocol.headers import HeaderError
from rocketq.remoting import grouping
from rocketq.remoting.errors import RemotingSendError, RemotingTimeoutError, RemotingTooMuchRequestError
from rocketq.remoting.grouping import MAX_GROUP, GroupedHandler
from rocketq.remoting.stats import RemotingStats
from rocketq.remoting.storedanswers import answer_at

_found_answer_at: Final = nativecodecs.native.found_answer_at if nativecodecs.native is not None else None
"""``(opaque, end)`` of a plain FOUND pull answer's frame, or None (native/pullanswer.c); without
the native codecs every such frame takes the general path."""

log = logging.getLogger(__name__)
_FRAME_LENGTH = struct.Struct(">i")
"""A frame's length field (a ``ClientConnection``'s read steps over frames it does not decode)."""
_peer_log = ratelimit.LogLimiter(log)
"""Lines a peer can cause (bad frames, a backlog it does not read): one per peer host per 10 s."""

_NEVER: Final = float("inf")
OPAQUE_MASK: Final = 0x7FFFFFFF
"""Request opaques are Java ints kept non-negative: the counter's value masked."""

Handler = Callable[["Connection", RemotingCommand], Awaitable[RemotingCommand | None]]
"""A request handler: the response to send, or None (oneway, or answered later)."""

MAX_REQUESTS_IN_FLIGHT: Final = 8192
"""Requests from one peer not answered yet — handlers that wait, and handlers that returned
None to answer later (held long-poll pulls); more are refused with SYSTEM_BUSY. A handler that
answers in its first step is never in flight: its answer is queued before the next frame."""
MAX_PENDING_INVOKES: Final = 65536
"""Outgoing requests awaiting responses on one connection."""
FLUSH_AFTER_FRAMES: Final = 4
"""Frames queued in one event-loop turn before they are written without waiting for its end.
Answering a read of 30 requests in one write at the end made client and broker take turns
(each idle while the other worked); slices of 4 let them overlap, for two syscalls more per
ten requests (docs/benchmarks.md)."""
COALESCE_FRAMES: Final = 64
"""A client's ``FLUSH_AFTER_FRAMES``: its requests of one loop turn (``send_async`` calls, the
tasks a read of answers woke) leave in one write, up to this many frames per write. Writing
them in slices of 4 made the syscalls most of a pipelined producer's CPU."""
WRITE_HIGH_WATER: Final = 4 * 1024 * 1024
"""Bytes buffered for a peer past which a server's connection stops reading its requests
(Netty's writeBufferHighWaterMark in RocketMQ)."""
WRITE_LOW_WATER: Final = 1024 * 1024
"""Bytes buffered below which reading resumes."""
MAX_BACKLOG: Final = 64 * 1024 * 1024
"""Bytes buffered for a peer that stopped reading past which its connection is aborted: the
answers of handlers already running when reading stopped (at most ``MAX_REQUESTS_IN_FLIGHT``)
still go out, and a peer that reads none of them is not coming back."""
TIMEOUT_EARLY: Final = 0.001
"""A request due this soon is failed by the timer firing now: event-loop timers may fire up to
a millisecond before their time (uvloop rounds to milliseconds)."""
SWEEP_MIN_GAP: Final = 0.01
"""The timeout timer fires at most this often: requests with many different deadlines (a
dead peer with 60 000 waiting) are failed in passes of 10 ms, each one scan of ``_pending``,
rather than one scan per deadline. A timeout therefore ends at most 10 ms late."""

AnswerCallback: TypeAlias = Callable[[RemotingCommand | None, BaseException | None], None]
"""Told a request's outcome (``request_callback``): ``(response, None)`` or ``(None, error)``."""
_Waiter: TypeAlias = "asyncio.Future[RemotingCommand] | AnswerCallback"
_Waiting: TypeAlias = "tuple[_Waiter, float, int, float]"
"""A request waiting for its answer: who is told (a future or a callback), deadline (loop
time), request code, timeout."""


class Connection(asyncio.Protocol):
    def __init__(
        self,
        handlers: Mapping[int, Handler],
        *,
        max_frame_size: int = frames.DEFAULT_MAX_FRAME_SIZE,
        name: str = "remoting",
        guard_backlog: bool = False,
        stats: RemotingStats | None = None,
        admit: Callable[[asyncio.BaseTransport], bool] | None = None,
        flush_after_frames: int = FLUSH_AFTER_FRAMES,
    ) -> None:
        """``guard_backlog``: stop reading while the peer does not read (a server's side).
        ``stats``: where rare events are counted. ``admit``: asked once the socket exists;
        False closes it at once (a server over its connection cap). ``flush_after_frames``:
        frames queued in one loop turn before they are written (``FLUSH_AFTER_FRAMES``)."""
        self._flush_after = flush_after_frames
        self._handlers = handlers
        self._loop = asyncio.get_running_loop()
        self._decoder = frames.FrameDecoder(max_frame_size)
        self._max_frame_size = max_frame_size
        self._name = name
        self._transport: asyncio.Transport | None = None
        self._pending: dict[int, _Waiting] = {}
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_at = _NEVER
        """When ``_sweep`` fires: no later than the earliest deadline in ``_pending``."""
        self._forget_cancelled_cb = self._forget_cancelled
        """Added to each request's future and removed before this side ends it: it runs only
        when the caller cancels the future (one bound method, not one per request)."""
        self.opaques = itertools.count(1)
        """Request opaques: ``next(opaques) & OPAQUE_MASK`` is a fresh one (``next_opaque``; a
        producer's send takes one per message without the call)."""
        self._outbox: list[bytes | memoryview] = []
        self._flush_scheduled = False
        self._writable = asyncio.Event()
        self._writable.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting_in_groups = 0
        """Requests in waiting groups beyond one per group's task (``_in_flight``)."""
        self._deferred: set[int] = set()
        """Opaques of requests whose handler returned None: answered later by ``send_response``."""
        self._guard_backlog = guard_backlog
        self._stats = stats if stats is not None else RemotingStats()
        self._admit = admit
        self.reading_paused = False
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self._closed_future: asyncio.Future[None] = self._loop.create_future()
        self.remote_addr = "?"
        self.remote_host = "?"
        self.local_addr = "?"
        self.closed = False
        self.active = False
        """Set by every read and write; the idle sweep (``idle.py``) clears it and closes
        connections it finds still clear a whole idle period later."""
        self.quiet_since = self._loop.time()

    # --- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport is not a subclass
        peer = transport.get_extra_info("peername")
        self.remote_addr = _addr(peer)
        self.remote_host = str(peer[0]) if isinstance(peer, tuple) and peer else self.remote_addr
        self.local_addr = _addr(transport.get_extra_info("sockname"))
        if self._admit is not None and not self._admit(transport):
            transport.close()
            return
        if self._guard_backlog:
            self._transport.set_write_buffer_limits(high=WRITE_HIGH_WATER, low=WRITE_LOW_WATER)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        self.active = True
        decoder = self._decoder
        commands = decoder.split(data)  # every whole frame of the read, in one call
        if len(commands) == 1:  # one frame (a peer sending one request at a time)
            lone = commands[0]
            if lone.flag & RESPONSE_FLAG:
                self._complete(lone)
            else:
                handler = self._handlers.get(lone.code)
                if type(handler) is GroupedHandler:
                    self._dispatch_group(handler, commands)
                else:
                    self._dispatch(lone)
        elif commands:
            self._dispatch_all(commands)
        if decoder.error is not None and not decoder.buffered:
            self._bad_frame(decoder.error)  # after the frames before it, as they came

    def _dispatch_all(self, commands: list[RemotingCommand]) -> None:
        """The requests and answers of one read, in order: consecutive requests for one
        ``GroupedHandler`` together. A read that stops reading (``reading_paused``) gives the
        commands not dispatched yet back to the decoder (``hold``), for when it resumes."""
        handlers = self._handlers
        code = commands[0].code
        handler = handlers.get(code)
        if type(handler) is GroupedHandler:
            for cmd in commands:  # (a loop, not a set of the codes: no comprehension's frame per read)
                if cmd.code != code or cmd.flag & RESPONSE_FLAG:
                    break
            else:  # requests of one code (a producer's sends): in slices
                for start in range(0, len(commands), MAX_GROUP):
                    self._dispatch_group(handler, commands[start:start + MAX_GROUP])
                    if self.reading_paused:
                        self._decoder.hold(commands[start + MAX_GROUP:])
                        return
                return
        group: list[RemotingCommand] = []
        grouped: GroupedHandler | None = None
        """Consecutive requests of this read for one ``GroupedHandler``, not dispatched yet."""
        for i, cmd in enumerate(commands):
            if cmd.flag & RESPONSE_FLAG:
                self._complete(cmd)
                continue
            handler = handlers.get(cmd.code)
            if type(handler) is GroupedHandler:
                if handler is not grouped and group:
                    self._dispatch_group(grouped, group)  # type: ignore[arg-type]
                    group = []
                grouped = handler
                group.append(cmd)
                if len(group) < MAX_GROUP:
                    continue
                self._dispatch_group(handler, group)
                group = []
            else:
                if group:
                    self._dispatch_group(grouped, group)  # type: ignore[arg-type]
                    group = []
                self._dispatch(cmd)
            if self.reading_paused:
                self._decoder.hold(commands[i + 1:])
                return
        if group:
            self._dispatch_group(grouped, group)  # type: ignore[arg-type]

    def _bad_frame(self, exc: FrameError) -> None:
        self._stats.bad_frames += 1
        _peer_log.warning(self.remote_host, "%s: closing connection %s: bad frame: %s",
                          self._name, self.remote_addr, exc)
        self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._transport = None
        self._writable.set()
        waiting = list(self._pending.values())
        self._pending.clear()
        self._disarm()
        for fut, _deadline, _code, _timeout in waiting:
            self._end(fut, exc=RemotingSendError(f"connection to {self.remote_addr} closed"))
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
        if self._guard_backlog and not self.reading_paused and self._transport is not None:
            self.reading_paused = True
            self._stats.reads_paused += 1
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._writable.set()
        if self.reading_paused:
            self.reading_paused = False
            if self._transport is not None:
                self._transport.resume_reading()
                # frames read before the pause wait in the decoder; no new read may ever come
                self._loop.call_soon(self._read_buffered)

    def _read_buffered(self) -> None:
        if not self.reading_paused and self._transport is not None and self._decoder.buffered:
            self.data_received(b"")

    @property
    def busy(self) -> bool:
        """Requests are under way on it, either direction: not idle, however long they take."""
        return bool(self._pending or self._tasks or self._deferred)

    # --- sending --------------------------------------------------------------------------

    def _write(self, data: bytes | memoryview) -> None:
        if self._transport is None:
            return
        self.active = True
        if self.reading_paused:
            self._check_backlog()
        outbox = self._outbox
        outbox.append(data)
        if len(outbox) >= self._flush_after:
            # A long burst (a read full of requests) is answered in slices: the peer starts on
            # the first answers while the rest are still being worked out here.
            self._transport.writelines(outbox)
            self._outbox = []
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _write_group(self, frames_out: list[bytes | memoryview]) -> None:
        """Queue a group's answers and write them in one go, with what the outbox held."""
        if self._transport is None:
            return
        self.active = True
        if self.reading_paused:
            self._check_backlog()
        self._outbox.extend(frames_out)
        if self._transport is not None:  # the backlog check may have aborted it
            self._transport.writelines(self._outbox)
        self._outbox = []

    def _write_buffers(self, buffers: list[bytes | memoryview]) -> None:
        """Queue one frame given as several buffers (a header and a body's views)."""
        if self._transport is None:
            return
        self._outbox.extend(buffers[:-1])
        self._write(buffers[-1])

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._transport is not None and self._outbox:
            self._transport.writelines(self._outbox)
        self._outbox = []

    def _check_backlog(self) -> None:
        transport = self._transport
        if transport is not None and transport.get_write_buffer_size() > MAX_BACKLOG:
            self._stats.backlog_aborts += 1
            _peer_log.warning(self.remote_host, "%s: aborting connection %s: it reads none of %d bytes of answers",
                              self._name, self.remote_addr, transport.get_write_buffer_size())
            self.abort()

    def send_response(self, cmd: RemotingCommand) -> None:
        """Send a response now (handlers that answer later, e.g. held long-poll pulls)."""
        buffers = self._later_answer(cmd)
        if buffers:
            self._write_buffers(buffers)

    def send_later_frames(self, opaques: Sequence[int], buffers: list[bytes | memoryview]) -> None:
        """Answers given later, already encoded (held pulls woken together): the requests of
        ``opaques`` no longer wait, and their frames' ``buffers`` go out in one write."""
        deferred = self._deferred
        if deferred:
            for opaque in opaques:
                deferred.discard(opaque)
        if buffers:
            self._write_group(buffers)

    def _later_answer(self, cmd: RemotingCommand) -> list[bytes | memoryview]:
        """The buffers of an answer given later (its request no longer waits for one); none
        when it cannot be encoded (logged)."""
        if self._deferred:
            self._deferred.discard(cmd.opaque)
        try:
            return cmd.encode_buffers() if cmd.body_parts else [cmd.encode()]
        except FrameError as exc:
            log.error("%s: response to %s not encodable: %s", self._name, self.remote_addr, exc)
            return []

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request and wait for its response; RemotingTimeoutError after ``timeout`` s."""
        if self.closed:
            raise RemotingSendError(f"connection to {self.remote_addr} is closed")
        if not self._writable.is_set():
            await self._writable.wait()
        return await self.request(cmd, timeout)

    @property
    def writable(self) -> bool:
        """Open, and its transport's buffer under the high-water mark: ``request`` may be
        called without waiting first."""
        return not self.closed and self._writable.is_set()

    def request(self, cmd: RemotingCommand, timeout: float) -> asyncio.Future[RemotingCommand]:
        """Send a request now and return the future of its response, without a coroutine.

        The future ends with the response, RemotingTimeoutError after ``timeout`` s, or
        RemotingSendError when the connection is lost; cancelling it forgets the request.
        Unlike ``invoke`` it does not wait while the peer is slow to read: check ``writable``.
        """
        fut: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self._send_request(cmd, timeout, fut)
        fut.add_done_callback(self._forget_cancelled_cb)
        return fut

    def request_callback(self, cmd: RemotingCommand, timeout: float, on_answer: AnswerCallback) -> int:
        """Send a request now; ``on_answer`` is told its outcome once, from inside the read that
        brings the answer (or the timeout timer, or the connection's loss): no future and no loop
        turn in between, for the producer's pipelined sends. Returns the request's opaque, which
        ``forget`` takes to withdraw it (``on_answer`` is then never called). Errors as ``request``."""
        return self._send_request(cmd, timeout, on_answer)

    def forget(self, opaque: int) -> None:
        """Withdraw a ``request_callback`` request: its answer, if one comes, is dropped."""
        self._pending.pop(opaque, None)

    def next_opaque(self) -> int:
        """A fresh request opaque, for a caller that encodes its request itself (``send_frame``)."""
        return next(self.opaques) & OPAQUE_MASK

    def send_frame(self, frame: bytes, opaque: int, code: int, timeout: float, waiter: _Waiter) -> None:
        """Send a request the caller encoded with ``opaque`` (from ``next_opaque``) and request
        code ``code``; ``waiter`` is told its outcome as ``request_callback``'s (or ``request``'s
        future). The producer's SEND_MESSAGE_V2 frames are made this way, from a template.

        A request on a connection with nothing in flight and nothing queued (a producer sending
        one message at a time) is written at once: waiting for the end of the loop turn would
        coalesce nothing and cost a loop iteration (an ``epoll_wait``) per request."""
        if self.closed:
            raise RemotingSendError(f"connection to {self.remote_addr} is closed")
        pending = self._pending
        if len(pending) >= MAX_PENDING_INVOKES:
            raise RemotingTooMuchRequestError(f"{len(pending)} requests pending on {self.remote_addr}")
        transport = self._transport
        if not pending and not self._outbox and transport is not None and not self.reading_paused:
            self.active = True
            transport.writelines((frame,))
        else:
            self._write(frame)
        deadline = self._loop.time() + timeout
        pending[opaque] = (waiter, deadline, code, timeout)
        if deadline < self._sweep_at:
            self._arm(deadline)

    def _send_request(self, cmd: RemotingCommand, timeout: float, waiter: _Waiter) -> int:
        if self.closed:
            raise RemotingSendError(f"connection to {self.remote_addr} is closed")
        cmd.opaque = opaque = next(self.opaques) & OPAQUE_MASK
        cmd.flag &= ~ONEWAY_FLAG
        self.send_frame(cmd.encode(), opaque, cmd.code, timeout, waiter)
        return opaque

    def _end(self, waiter: _Waiter, response: RemotingCommand | None = None,
             exc: BaseException | None = None) -> None:
        """Tell a request's outcome: settle its future (unless its caller cancelled it, and
        without the cancel callback) or call its callback."""
        if not isinstance(waiter, asyncio.Future):
            try:
                waiter(response, exc)
            except Exception:
                log.exception("%s: answer callback for %s failed", self._name, self.remote_addr)
            return
        if waiter.done():
            return
        waiter.remove_done_callback(self._forget_cancelled_cb)
        if exc is not None:
            waiter.set_exception(exc)
        else:
            waiter.set_result(response)  # type: ignore[arg-type]

    def _forget_cancelled(self, fut: asyncio.Future[RemotingCommand]) -> None:
        """The caller cancelled a request's future: forget the request (a late answer is dropped).
        A scan, but only on cancellation, which is rare; answers and timeouts never come here."""
        for opaque, waiting in self._pending.items():
            if waiting[0] is fut:
                del self._pending[opaque]
                return

    def _arm(self, when: float) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
        self._sweep_at = when
        self._sweep = self._loop.call_at(when, self._sweep_timeouts)

    def _disarm(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
        self._sweep, self._sweep_at = None, _NEVER

    def _sweep_timeouts(self) -> None:
        """Fail the requests that are due; re-arm for the earliest of the rest."""
        self._sweep, self._sweep_at = None, _NEVER
        now = self._loop.time()
        due = now + TIMEOUT_EARLY
        expired = [opaque for opaque, waiting in self._pending.items() if waiting[1] <= due]
        for opaque in expired:
            fut, _deadline, code, timeout = self._pending.pop(opaque)
            self._end(fut, exc=RemotingTimeoutError(
                f"no response from {self.remote_addr} to code {code} within {timeout:.3f}s"))
        if self._pending:
            earliest = min(waiting[1] for waiting in self._pending.values())
            self._arm(max(earliest, now + SWEEP_MIN_GAP))

    async def invoke_oneway(self, cmd: RemotingCommand) -> None:
        if self.closed:
            raise RemotingSendError(f"connection to {self.remote_addr} is closed")
        if not self._writable.is_set():
            await self._writable.wait()
        cmd.opaque = next(self.opaques) & OPAQUE_MASK
        cmd.flag |= ONEWAY_FLAG
        self._write(cmd.encode())

    def _complete(self, response: RemotingCommand) -> None:
        waiting = self._pending.pop(response.opaque, None)
        if waiting is None:
            log.debug("%s: response for unknown opaque %d from %s", self._name, response.opaque, self.remote_addr)
        else:
            self._end(waiting[0], response)

    # --- receiving requests ---------------------------------------------------------------

    def _dispatch(self, request: RemotingCommand) -> None:
        handler = self._handlers.get(request.code)
        if handler is None:
            self._reply(request, request.response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"))
            return
        if self._in_flight() >= MAX_REQUESTS_IN_FLIGHT:
            self._refuse_busy(request)
            return
        self._start(self._run(handler, request), 1)

    def _dispatch_group(self, handler: GroupedHandler, requests: list[RemotingCommand]) -> None:
        # _in_flight(), inline: once per read of sends
        if len(self._tasks) + len(self._deferred) + self._waiting_in_groups + len(requests) > MAX_REQUESTS_IN_FLIGHT:
            for request in requests:
                self._refuse_busy(request)
            return
        now = handler.now
        if now is None:
            self._start(self._run_group(handler, requests), len(requests))
            return
        try:  # the common case: answered by a plain call, no coroutine
            answers = now(self, requests)
        except Exception as exc:
            answers = self._group_failed(requests, exc)
        if answers is None:  # nothing done: ``group`` runs
            self._start(self._run_group(handler, requests), len(requests))
            return
        transport = self._transport
        if len(answers) == 1 and type(answer := answers[0]) is bytes and not self._outbox \
                and not self.reading_paused and transport is not None and not requests[0].flag & ONEWAY_FLAG:
            transport.write(answer)  # a lone send answered from a template: one write, at once
        else:
            self._send_answers(requests, answers)

    def _in_flight(self) -> int:
        return len(self._tasks) + len(self._deferred) + self._waiting_in_groups

    def _refuse_busy(self, request: RemotingCommand) -> None:
        self._reply(request, request.response(
            ResponseCode.SYSTEM_BUSY, "[OVERLOAD]system busy, too many requests in flight"))

    def _start(self, run: Coroutine[Any, Any, None], requests: int) -> None:
        """Run a handler's first step now; a task for the rest only if it waits."""
        try:
            yielded = run.send(None)
        except StopIteration:
            return  # answered without waiting: the common case
        except asyncio.CancelledError:
            return  # the handler cancelled itself; a task would have ended cancelled, unanswered
        task = self._loop.create_task(_finish(_Resumed(run, yielded)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if requests > 1:  # a waiting group holds all its requests in flight, not one
            self._waiting_in_groups += requests - 1
            task.add_done_callback(functools.partial(self._group_done, requests - 1))

    def _group_done(self, extra: int, _task: asyncio.Task[None]) -> None:
        self._waiting_in_groups -= extra

    async def _run_group(self, handler: GroupedHandler, requests: list[RemotingCommand]) -> None:
        answers: Sequence[grouping.Answer]
        try:
            answers = await handler.group(self, requests)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            answers = self._group_failed(requests, exc)
        self._send_answers(requests, answers)

    def _group_failed(self, requests: list[RemotingCommand], exc: Exception) -> list[grouping.Answer]:
        """A group handler raised: every request is answered SYSTEM_ERROR (as a single one's failure)."""
        log.exception("%s: group handler for %d requests from %s failed", self._name, len(requests),
                      self.remote_addr, exc_info=exc)
        return [r.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}") for r in requests]

    def _send_answers(self, requests: list[RemotingCommand], answers: Sequence[grouping.Answer]) -> None:
        """Write a group's answers in one go (oneway requests' dropped; None: answered later)."""
        frames_out: list[bytes | memoryview] = []
        for request, answer in zip(requests, answers, strict=True):  # (a loop: a comprehension is a call)
            if answer.__class__ is not bytes or request.flag & ONEWAY_FLAG:
                # a oneway request, an answer given later (a held pull) or as a command or buffers
                frames_out = self._frames_of(requests, answers)
                break
            frames_out.append(answer)
        if frames_out:
            self._write_group(frames_out)

    def _frames_of(self, requests: list[RemotingCommand],
                   answers: Sequence[grouping.Answer]) -> list[bytes | memoryview]:
        """The frames answering a group (``_send_answers``'s general case); an answer given later
        (None) leaves its request in ``_deferred``."""
        frames_out: list[bytes | memoryview] = []
        for request, answer in zip(requests, answers, strict=True):
            if request.flag & ONEWAY_FLAG:
                continue
            if answer is None:
                if not self.closed:
                    self._deferred.add(request.opaque)
            elif isinstance(answer, bytes):
                frames_out.append(answer)
            elif isinstance(answer, list):  # a frame as its buffers (a pull answer's head and views)
                frames_out += answer
            else:
                try:
                    frames_out.extend(answer.encode_buffers())
                except FrameError as exc:
                    log.error("%s: response to %s not encodable: %s", self._name, self.remote_addr, exc)
        return frames_out

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
        if request.flag & ONEWAY_FLAG:
            return
        if response is not None:
            self.send_response(response)
        elif not self.closed:
            self._deferred.add(request.opaque)

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

    def begin_close(self) -> None:
        """Flush what is queued and start closing; ``close`` also waits for the end."""
        if self._transport is not None:
            self._flush()
            self._transport.close()

    async def close(self) -> None:
        """Flush what is queued, close, and wait until the connection is gone. Idempotent."""
        self.begin_close()
        await self.wait_closed()

    async def wait_closed(self) -> None:
        """Wait until the connection is gone, whichever side closed it."""
        await asyncio.shield(self._closed_future)


class ClientConnection(Connection):
    """A client's connection (``RemotingClient``'s): SUCCESS answers read without a command.

    A request whose waiter has a ``stored`` method (the producer's send in flight) is told a
    SUCCESS answer without a body as ``waiter.stored(data, pos, end)``, its frame in the read:
    the read finds such answers with ``storedanswers.answer_at`` (in C: nothing but the
    ``(opaque, end)`` pair is built: no ``orjson`` dict of the header, no ``RemotingCommand``,
    no extFields dict; the producer reads its result from the frame itself). Likewise a request
    whose waiter has a ``found`` method (a push consumer's chained pull) is offered the plain
    FOUND answer a broker writes (found by native/pullanswer.c's ``found_answer_at``; never
    without the native codecs) as ``waiter.found(data, pos, end)``, out of ``_pending`` while it
    runs: True when it read and handled it, False (nothing done) to have it read as below. The
    first frame of a read
    that is anything else (another code, another waiter's answer, an unknown opaque, a request)
    goes alone to the general path when it is whole, and the reading goes on; an incomplete
    frame goes with the rest of the read (the decoder keeps it). Frames are handled in their
    order. A server's connections never come here.

    ``ready`` is ``writable`` kept as a plain attribute (a producer asks it once per send; the
    property is two Python calls)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ready = True
        """Open, and its transport's buffer under the high-water mark: ``writable``."""
        self._partial = False
        """The decoder holds part of a frame (``FrameDecoder.buffered``, asked only after this
        connection handed it bytes: a sync send's read would ask a property per answer)."""

    def pause_writing(self) -> None:
        self.ready = False
        super().pause_writing()

    def resume_writing(self) -> None:
        super().resume_writing()
        self.ready = not self.closed

    def connection_lost(self, exc: Exception | None) -> None:
        self.ready = False
        super().connection_lost(exc)

    def send_frame(self, frame: bytes, opaque: int, code: int, timeout: float, waiter: _Waiter) -> None:
        """``Connection.send_frame`` with ``_write``'s common case inline: a request that joins
        the frames already queued for this loop turn's flush (a pipelined producer's every send
        but a turn's first) is queued here; one on an idle connection is written at once, as
        there. Anything else (closed, too many pending, reading paused) is ``Connection``'s."""
        pending, outbox, transport = self._pending, self._outbox, self._transport
        if self.closed or transport is None or self.reading_paused or len(pending) >= MAX_PENDING_INVOKES:
            super().send_frame(frame, opaque, code, timeout, waiter)
            return
        self.active = True
        if not pending and not outbox:
            transport.writelines((frame,))
        elif outbox and self._flush_scheduled and len(outbox) + 1 < self._flush_after:
            outbox.append(frame)
        else:
            self._write(frame)
        deadline = self._loop.time() + timeout
        pending[opaque] = (waiter, deadline, code, timeout)
        if deadline < self._sweep_at:
            self._arm(deadline)

    def data_received(self, data: bytes) -> None:
        if self._partial or self.reading_paused:
            self._decode(data)
            return
        pos, end, pending, largest = 0, len(data), self._pending, self._max_frame_size
        while pos < end:
            answer = answer_at(data, pos, largest)
            if answer is not None:
                waiting = pending.get(answer[0])
                stored = getattr(waiting[0], "stored", None) if waiting is not None else None
                if stored is not None:
                    del pending[answer[0]]
                    start, pos = pos, answer[1]
                    try:
                        stored(data, start, pos)
                    except Exception:
                        log.exception("%s: answer callback for %s failed", self._name, self.remote_addr)
                    continue
            elif _found_answer_at is not None and (answer := _found_answer_at(data, pos, largest)) is not None:
                # offered to the waiter's ``found``, out of pending while it runs (as in ``_complete``)
                waiting = pending.pop(answer[0], None)
                found = getattr(waiting[0], "found", None) if waiting is not None else None
                if found is not None:
                    try:
                        taken = found(data, pos, answer[1])
                    except Exception:
                        log.exception("%s: answer callback for %s failed", self._name, self.remote_addr)
                        taken = True
                    if taken:
                        pos = answer[1]
                        continue
                if waiting is not None:
                    pending[answer[0]] = waiting  # declined: the general path below ends it
            # another frame (a heartbeat's answer among a burst of sends): alone through the
            # general path when it is whole, and the reading goes on; else with the rest
            length = _FRAME_LENGTH.unpack_from(data, pos)[0] if end - pos >= 4 else -1
            if not 4 <= length <= largest or end - pos - 4 < length or self.reading_paused:
                break
            bad_frames = self._stats.bad_frames
            super().data_received(data[pos : pos + 4 + length])
            pos += 4 + length
            if self._stats.bad_frames != bad_frames:
                return  # the connection is being aborted: the rest of the read is dropped
        if pos == 0:
            self._decode(data)
        elif pos < end:
            self._decode(data[pos:])
        else:
            self.active = True

    def _decode(self, data: bytes) -> None:
        """``data`` by the general path, which may leave part of a frame in the decoder: whether
        it did is kept in ``_partial``."""
        super().data_received(data)
        self._partial = self._decoder.buffered > 0


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

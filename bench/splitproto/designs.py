"""Prototypes of a broker that splits its work across threads, for ``bench/run_split.py``.

These are measurement prototypes, not part of rocketq: they patch a broker process (only when
``ROCKETQ_SPLIT`` names a design, through ``sitecustomize`` in this directory) so that the
real broker, with its real handlers and store, runs with its work split one way or another.
docs/benchmarks.md ("Threads and processes") has what they measured and why none is adopted.

* ``store-thread``: ``MessageStore._put_many`` hands its appends (CommitLog copy, queue
  units, index entries) to one store thread fed by a queue; the loop thread awaits a future
  and then does the rest (flush wait, statistics, arrival notices: the long-poll listeners
  belong to the loop). The thread drains every queued put in one go and hands the results
  back in one ``call_soon_threadsafe``.
* ``io-threads:N``: N threads, each running its own uvloop, own the client sockets: they
  read and write; every byte read is handed to the broker's loop (``call_soon_threadsafe``),
  which decodes, handles and stores as today, and every write goes back to the socket's
  thread. Parsing stays on the broker's loop: under the GIL a parse in another thread would
  not run beside the loop's Python anyway, only the socket system calls can.

Not safe beyond the benchmark's workloads: the store thread's appends race the loop's
reads of the same queue (the benchmark consumes after producing), replicated appends and
DLedger are not handled, and the I/O threads drop a connection's back-pressure subtleties
(the loop reads the transport's buffer size across threads).
"""

from __future__ import annotations

import asyncio
import collections
import os
import socket
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Final

from rocketq import eventloop
from rocketq.remoting import limits as remoting_limits
from rocketq.remoting.server import LISTEN_BACKLOG, RemotingServer
from rocketq.store.messagestore import MessageStore

ENV: Final = "ROCKETQ_SPLIT"


# --- store thread -----------------------------------------------------------------------------


class StoreThread:
    """One thread that runs submitted calls in order and hands the results back to a loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._jobs: collections.deque[tuple[Callable[[Any], Any], Any, asyncio.Future[Any]]] = collections.deque()
        self._wake = threading.Event()
        self.handoffs = 0
        threading.Thread(target=self._run, name="rocketq-store", daemon=True).start()

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> asyncio.Future[Any]:
        future = self._loop.create_future()
        self._jobs.append((fn, arg, future))
        self._wake.set()
        return future

    def _run(self) -> None:
        jobs, wake = self._jobs, self._wake
        while True:
            wake.wait()
            wake.clear()
            done = []
            while jobs:
                fn, arg, future = jobs.popleft()
                try:
                    done.append((future, fn(arg), None))
                except BaseException as exc:  # handed to the awaiting put, as a direct call would raise
                    done.append((future, None, exc))
            if done:
                self.handoffs += 1
                self._loop.call_soon_threadsafe(_deliver, done)


def _deliver(done: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, result, exc in done:
        if future.done():
            continue
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)


_ORIGINAL_APPEND_MANY = MessageStore._append_many
_ORIGINAL_PUT_MANY = MessageStore._put_many


def _append_collecting(args: tuple[MessageStore, Any]) -> tuple[list[Any], list[Any]]:
    """``MessageStore._append_many`` on the store thread; the queues to notify are collected
    (their listeners run on the loop) instead of notified here."""
    store, puts = args
    touched: list[Any] = []
    store._notify_queues = lambda queues: touched.extend(queues.values())  # type: ignore[method-assign]
    try:  # (the lambda shadows the method during the call)
        results = _ORIGINAL_APPEND_MANY(store, puts)
    finally:
        del store._notify_queues
    return results, touched


def _append_many(self: MessageStore, puts: Any) -> list[Any]:
    """What ``_put_many`` appends: the store thread's results when it already appended them."""
    ready = self.__dict__.pop("_split_ready", None)
    return ready if ready is not None else _ORIGINAL_APPEND_MANY(self, puts)


async def _put_many_in_thread(self: MessageStore, puts: Any) -> list[Any]:
    """The appends on the store thread, then the rest of ``_put_many`` (flush wait,
    statistics) on the loop, which takes the thread's results instead of appending."""
    thread = self.__dict__.get("_split_thread")
    if thread is None:
        thread = self.__dict__["_split_thread"] = StoreThread(asyncio.get_running_loop())
    results, touched = await thread.submit(_append_collecting, (self, puts))
    for cq in touched:
        MessageStore._notify(self, cq)
    self.__dict__["_split_ready"] = results  # taken by _append_many in the first step below
    return await _ORIGINAL_PUT_MANY(self, puts)


def install_store_thread() -> None:
    MessageStore._append_many = _append_many  # type: ignore[method-assign]
    MessageStore._put_many = _put_many_in_thread  # type: ignore[method-assign]


# --- I/O threads ------------------------------------------------------------------------------


class _ProxyTransport:
    """The broker loop's view of a socket owned by an I/O thread: calls cross threads."""

    def __init__(self, io_loop: asyncio.AbstractEventLoop, transport: asyncio.Transport) -> None:
        self._io = io_loop
        self._t = transport
        self._closing = False

    def write(self, data: bytes) -> None:
        self._io.call_soon_threadsafe(self._t.write, data)

    def writelines(self, buffers: Iterable[bytes | memoryview]) -> None:
        self._io.call_soon_threadsafe(self._t.writelines, buffers)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._t.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return self._t.get_write_buffer_size()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._io.call_soon_threadsafe(self._t.set_write_buffer_limits, high, low)

    def pause_reading(self) -> None:
        self._io.call_soon_threadsafe(self._t.pause_reading)

    def resume_reading(self) -> None:
        self._io.call_soon_threadsafe(self._t.resume_reading)

    def is_closing(self) -> bool:
        return self._closing or self._t.is_closing()

    def close(self) -> None:
        self._closing = True
        self._io.call_soon_threadsafe(self._t.close)

    def abort(self) -> None:
        self._closing = True
        self._io.call_soon_threadsafe(self._t.abort)


class _Relay(asyncio.Protocol):
    """The I/O thread's protocol: relays what the socket says to the broker loop's Connection."""

    def __init__(self, main: asyncio.AbstractEventLoop, io_loop: asyncio.AbstractEventLoop, conn: Any) -> None:
        self._main, self._io, self._conn = main, io_loop, conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._main.call_soon_threadsafe(self._conn.connection_made, _ProxyTransport(self._io, transport))  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        self._main.call_soon_threadsafe(self._conn.data_received, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._main.call_soon_threadsafe(self._conn.connection_lost, exc)

    def pause_writing(self) -> None:
        self._main.call_soon_threadsafe(self._conn.pause_writing)

    def resume_writing(self) -> None:
        self._main.call_soon_threadsafe(self._conn.resume_writing)


class _IoLoops:
    def __init__(self, count: int) -> None:
        self.loops: list[asyncio.AbstractEventLoop] = []
        ready = threading.Barrier(count + 1)
        for i in range(count):
            threading.Thread(target=self._serve, args=(ready,), name=f"rocketq-io-{i}", daemon=True).start()
        ready.wait()
        self._next = 0

    def _serve(self, ready: threading.Barrier) -> None:
        uvloop = eventloop._uvloop()
        loop = uvloop.new_event_loop() if uvloop is not None else asyncio.new_event_loop()
        self.loops.append(loop)
        ready.wait()
        try:
            loop.run_forever()
        finally:
            loop.close()

    def pick(self) -> asyncio.AbstractEventLoop:
        loop = self.loops[self._next % len(self.loops)]
        self._next += 1
        return loop


class _Listening:
    """Stands in for the ``asyncio.Server`` that ``RemotingServer`` keeps (port, close); the
    I/O loops stop at the end of ``RemotingServer.close``, once its connections are closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, io_loops: _IoLoops) -> None:
        self._loop, self.sockets, self._io_loops = loop, [sock], io_loops

    def close(self) -> None:
        self._loop.remove_reader(self.sockets[0].fileno())
        self.sockets[0].close()

    async def wait_closed(self) -> None:
        for loop in self._io_loops.loops:
            loop.call_soon_threadsafe(loop.stop)


def threaded_start(count: int) -> Callable[[RemotingServer], Coroutine[Any, Any, None]]:
    """A ``RemotingServer.start`` that hands a broker's sockets to ``count`` I/O threads."""
    original = RemotingServer.start

    async def start(self: RemotingServer) -> None:
        if self._name != "broker":
            await original(self)
            return
        soft_limit = remoting_limits.raise_nofile_limit()
        self._first_reserved_fd = remoting_limits.first_reserved_descriptor(soft_limit)
        if not self.max_connections:
            self.max_connections = remoting_limits.derived_max_connections(soft_limit)
        await self.bind()
        sock, self._bound = self._bound, None
        assert sock is not None
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
        main = asyncio.get_running_loop()
        io_loops = _IoLoops(count)

        def accept() -> None:
            while True:
                try:
                    client, _addr = sock.accept()
                except (BlockingIOError, InterruptedError):
                    return
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                client.setblocking(False)
                conn = self._new_connection()
                io_loop = io_loops.pick()
                io_loop.call_soon_threadsafe(_adopt, main, io_loop, client, conn)

        main.add_reader(sock.fileno(), accept)
        self._server = _Listening(main, sock, io_loops)  # type: ignore[assignment]
        self._idle.start()

    return start


def install_io_threads(count: int) -> None:
    RemotingServer.start = threaded_start(count)  # type: ignore[method-assign]


def _adopt(main: asyncio.AbstractEventLoop, io_loop: asyncio.AbstractEventLoop, client: socket.socket,
           conn: Any) -> None:
    io_loop.create_task(io_loop.connect_accepted_socket(lambda: _Relay(main, io_loop, conn), client))


def install(designs: str) -> None:
    """Patch this process's broker for ``designs``: ``store-thread``, ``io-threads:N``, or
    both joined by ``+`` (N network loops in threads and one store thread)."""
    print(f"{ENV}: this broker runs the {designs} prototype", file=sys.stderr, flush=True)
    for design in designs.split("+"):
        if design == "store-thread":
            install_store_thread()
        elif design.startswith("io-threads"):
            install_io_threads(int(design.partition(":")[2] or "1"))
        else:
            raise SystemExit(f"{ENV}={designs!r}: not a design (store-thread, io-threads:N, or both joined by +)")


def from_environment() -> None:
    design = os.environ.get(ENV, "")
    if design:
        install(design)

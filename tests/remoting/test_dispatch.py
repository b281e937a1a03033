"""Request dispatch on one connection: handlers run eagerly, waiting ones keep a task's semantics;
the requests it sends time out by one timer per connection, on asyncio's loop and on uvloop.

A ``Connection`` is driven through an in-memory transport, so each test sees exactly which
frames were written and when, without sockets.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from rocketq import eventloop
from rocketq.local.ports import free_port
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import ONEWAY_FLAG, FrameDecoder, RemotingCommand
from rocketq.protocol.headers import TopicHeader
from rocketq.remoting import connection as connection_mod
from rocketq.remoting import grouping
from rocketq.remoting.connection import TIMEOUT_EARLY, Connection
from rocketq.remoting.errors import RemotingSendError, RemotingTimeoutError
from rocketq.remoting.server import RemotingServer

SYNC, WAITS, WAITS_OFTEN, FAILS_LATE, STRICT, CANCELS_ITSELF, LATER = 1, 2, 3, 4, 5, 6, 7
LOOPS = ["asyncio", pytest.param("uvloop", marks=pytest.mark.skipif(
    eventloop.loop_name() != "uvloop", reason="uvloop not installed or switched off"))]


class MemoryTransport:
    def __init__(self) -> None:
        self.written = bytearray()
        self.aborted = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1234) if name in ("peername", "sockname") else default

    def writelines(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            self.written += chunk

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.aborted = True


class Handlers:
    def __init__(self) -> None:
        self.gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.cleaned_up = 0
        self.held: list[RemotingCommand] = []

    async def sync(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, "at once")

    async def waits(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        try:
            remark = await self.gate
        finally:
            self.cleaned_up += 1
        return req.response(ResponseCode.SUCCESS, remark)

    async def waits_often(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        for _ in range(3):
            await asyncio.sleep(0)
        remark = await self.gate
        await asyncio.sleep(0)
        return req.response(ResponseCode.SUCCESS, remark + " later")

    async def fails_late(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0)
        raise RuntimeError("broke after waiting")

    async def strict(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, TopicHeader.from_ext(req.ext_fields).topic)

    async def cancels_itself(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        raise asyncio.CancelledError

    async def later(self, conn: Connection, req: RemotingCommand) -> None:
        self.held.append(req)  # answered through send_response, as a held long-poll pull

    def table(self) -> dict[int, Any]:
        return {SYNC: self.sync, WAITS: self.waits, WAITS_OFTEN: self.waits_often, FAILS_LATE: self.fails_late,
                STRICT: self.strict, CANCELS_ITSELF: self.cancels_itself, LATER: self.later}


def _open(handlers: Handlers) -> tuple[Connection, MemoryTransport]:
    conn = Connection(handlers.table())
    transport = MemoryTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport


def _capped(monkeypatch: pytest.MonkeyPatch, limit: int, handlers: Handlers) -> tuple[Connection, MemoryTransport]:
    """A connection that holds at most ``limit`` requests in flight."""
    monkeypatch.setattr(connection_mod, "MAX_REQUESTS_IN_FLIGHT", limit)
    return _open(handlers)


def _request(code: int, opaque: int, **kwargs: Any) -> bytes:
    return RemotingCommand(code=code, opaque=opaque, **kwargs).encode()


def _answers(transport: MemoryTransport) -> dict[int, RemotingCommand]:
    return {cmd.opaque: cmd for cmd in FrameDecoder().feed(bytes(transport.written))}


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_handler_that_does_not_wait_is_answered_in_the_same_turn() -> None:
    conn, transport = _open(Handlers())
    conn.data_received(_request(SYNC, 1) + _request(SYNC, 2))
    assert not conn._tasks  # no task was needed
    await asyncio.sleep(0)  # the one write of the turn
    answers = _answers(transport)
    assert sorted(answers) == [1, 2] and answers[1].remark == "at once" and answers[1].is_response


async def test_a_long_burst_is_answered_in_slices_before_the_turn_ends() -> None:
    conn, transport = _open(Handlers())
    burst = connection_mod.FLUSH_AFTER_FRAMES * 2 + 1
    conn.data_received(b"".join(_request(SYNC, i) for i in range(burst)))
    assert len(_answers(transport)) == connection_mod.FLUSH_AFTER_FRAMES * 2  # written already
    await asyncio.sleep(0)
    assert sorted(_answers(transport)) == list(range(burst))


async def test_a_waiting_handler_is_answered_when_its_wait_ends() -> None:
    handlers = Handlers()
    conn, transport = _open(handlers)
    # 1 and 4 suspend on the same future in their first steps
    conn.data_received(_request(WAITS, 1) + _request(SYNC, 2) + _request(WAITS_OFTEN, 3) + _request(WAITS, 4))
    await _turns()
    assert sorted(_answers(transport)) == [2]
    assert len(conn._tasks) == 3
    handlers.gate.set_result("opened")
    await _turns()
    answers = _answers(transport)
    assert answers[1].remark == answers[4].remark == "opened" and answers[3].remark == "opened later"
    assert not conn._tasks


async def test_errors_become_system_error_whether_raised_at_once_or_after_waiting() -> None:
    conn, transport = _open(Handlers())
    conn.data_received(_request(STRICT, 1) + _request(FAILS_LATE, 2))
    await _turns()
    answers = _answers(transport)
    assert answers[1].code == ResponseCode.SYSTEM_ERROR and "topic" in (answers[1].remark or "")
    assert answers[2].code == ResponseCode.SYSTEM_ERROR and answers[2].remark == "RuntimeError: broke after waiting"


async def test_a_handler_cancelling_itself_gets_no_answer_and_the_connection_goes_on() -> None:
    conn, transport = _open(Handlers())
    conn.data_received(_request(CANCELS_ITSELF, 1) + _request(SYNC, 2))
    await _turns()
    assert sorted(_answers(transport)) == [2]
    assert not transport.aborted


async def test_connection_loss_cancels_waiting_handlers() -> None:
    handlers = Handlers()
    conn, transport = _open(handlers)
    conn.data_received(_request(WAITS, 1) + _request(WAITS, 2))
    await _turns()
    conn.connection_lost(None)
    await _turns()
    assert handlers.cleaned_up == 2  # each handler saw the cancellation (its finally ran)
    assert not conn._tasks
    assert _answers(transport) == {}


async def test_oneway_requests_are_never_answered() -> None:
    conn, transport = _open(Handlers())
    conn.data_received(_request(SYNC, 1, flag=ONEWAY_FLAG) + _request(STRICT, 2, flag=ONEWAY_FLAG))
    await _turns()
    assert _answers(transport) == {}


async def test_waiting_handlers_and_answers_given_later_count_against_the_in_flight_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handlers = Handlers()
    conn, transport = _capped(monkeypatch, 3, handlers)
    conn.data_received(b"".join(_request(SYNC, i) for i in range(1, 6)))  # answered at once: never in flight
    # 10 waits (a task); 11 is held, to be answered later (as a long-poll pull); 12 waits
    conn.data_received(_request(WAITS, 10) + _request(LATER, 11) + _request(WAITS, 12))
    conn.data_received(_request(LATER, 13) + _request(SYNC, 14))
    await _turns()
    answers = _answers(transport)
    assert all(answers[i].code == ResponseCode.SUCCESS for i in (1, 2, 3, 4, 5))
    assert answers[13].code == ResponseCode.SYSTEM_BUSY and answers[14].code == ResponseCode.SYSTEM_BUSY
    assert not {10, 11, 12} & set(answers)
    conn.send_response(handlers.held.pop().response(ResponseCode.SUCCESS, "later"))  # frees 11's place
    conn.data_received(_request(SYNC, 15) + _request(SYNC, 16))
    await _turns()
    answers = _answers(transport)
    assert answers[11].remark == "later" and answers[15].code == ResponseCode.SUCCESS
    assert answers[16].code == ResponseCode.SUCCESS  # SYNC needs no place while it runs
    handlers.gate.set_result("done")
    await _turns()
    assert _answers(transport)[10].remark == "done"


async def test_invoke_times_out_and_forgets_the_request() -> None:
    conn, _transport = _open(Handlers())
    with pytest.raises(RemotingTimeoutError, match=r"within 0\.010s"):
        await conn.invoke(RemotingCommand(code=SYNC), 0.01)
    assert conn._pending == {}


async def test_invoke_gets_its_answer_and_a_cancelled_invoke_leaves_nothing_behind() -> None:
    conn, transport = _open(Handlers())
    call = asyncio.ensure_future(conn.invoke(RemotingCommand(code=SYNC), 5))
    await _turns()
    (sent,) = FrameDecoder().feed(bytes(transport.written))
    conn.data_received(sent.response(ResponseCode.SUCCESS, "answer").encode())
    assert (await call).remark == "answer"
    waiting = asyncio.ensure_future(conn.invoke(RemotingCommand(code=SYNC), 5))
    await _turns()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert conn._pending == {}


async def test_invoke_fails_when_the_connection_is_lost() -> None:
    conn, _transport = _open(Handlers())
    call = asyncio.ensure_future(conn.invoke(RemotingCommand(code=SYNC), 5))
    await _turns()
    conn.connection_lost(None)
    with pytest.raises(RemotingSendError):
        await call


GROUPED = 20


class GroupHandlers(Handlers):
    """A ``GroupedHandler`` for code GROUPED: each group waits on ``gate`` (or fails, when a
    request's remark says so) and notes the opaques it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.groups: list[list[int]] = []

    async def group(self, conn: Connection, reqs: list[RemotingCommand]) -> list[grouping.Answer]:
        self.groups.append([r.opaque for r in reqs])
        if any(r.remark == "fail" for r in reqs):
            raise RuntimeError("group broke")
        remark = await self.gate
        return [r.response(ResponseCode.SUCCESS, remark) for r in reqs]

    def table(self) -> dict[int, Any]:
        return {**super().table(), GROUPED: grouping.GroupedHandler(self.sync, self.group)}


async def test_a_waiting_group_holds_a_place_per_request_and_frees_them_when_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handlers = GroupHandlers()
    conn, transport = _capped(monkeypatch, 4, handlers)
    conn.data_received(b"".join(_request(GROUPED, i) for i in range(1, 4)) + _request(SYNC, 4))
    conn.data_received(_request(GROUPED, 5) + _request(GROUPED, 6))  # 3 + 2 > 4: refused
    conn.data_received(_request(GROUPED, 7))  # 3 + 1 fits
    await _turns()
    answers = _answers(transport)
    assert handlers.groups == [[1, 2, 3], [7]]
    assert answers[4].code == ResponseCode.SUCCESS
    assert answers[5].code == answers[6].code == ResponseCode.SYSTEM_BUSY
    handlers.gate.set_result("stored")
    await _turns()
    answers = _answers(transport)
    assert [answers[i].remark for i in (1, 2, 3, 7)] == ["stored"] * 4
    assert conn._in_flight() == 0
    conn.data_received(b"".join(_request(GROUPED, i) for i in range(8, 12)))  # all four places are free again
    await _turns()
    assert {_answers(transport)[i].code for i in range(8, 12)} == {ResponseCode.SUCCESS}


class PausingTransport(MemoryTransport):
    """A transport whose connection can stop reading (a server's, ``guard_backlog``)."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = True

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        """The limits only matter to a real socket's buffer."""

    def pause_reading(self) -> None:
        self.reading = False

    def get_write_buffer_size(self) -> int:
        return 0  # (below MAX_BACKLOG: the peer is slow, not gone)

    def resume_reading(self) -> None:
        self.reading = True


@pytest.mark.parametrize("mixed", [False, True], ids=["one-code", "mixed"])
async def test_a_read_that_stops_reading_dispatches_the_rest_when_it_resumes(mixed: bool) -> None:
    """The first group of a long read fills the peer's buffer: the connection stops reading;
    the read's other requests wait in the decoder and are dispatched, in order, when the peer
    has read; a bad frame at the read's end closes the connection only after them."""
    dispatched: list[list[int]] = []

    def now(conn: Connection, reqs: list[RemotingCommand]) -> list[grouping.Answer]:
        dispatched.append([r.opaque for r in reqs])
        if len(dispatched) == 1:
            conn.pause_writing()  # what the transport does past its high-water mark
        return [r.response(ResponseCode.SUCCESS) for r in reqs]

    async def single(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        dispatched.append([req.opaque])
        return req.response(ResponseCode.SUCCESS)

    conn = Connection({GROUPED: grouping.GroupedHandler(single, _never_grouped, now), SYNC: single},
                      guard_backlog=True)
    transport = PausingTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    codes = [SYNC if mixed and i == 20 else GROUPED for i in range(1, 41)]
    read = b"".join(_request(code, i) for i, code in enumerate(codes, 1))
    conn.data_received(read + struct.pack(">i", -5) + b"xxxx")
    assert dispatched == [list(range(1, 17))] and not transport.reading and not transport.aborted
    conn.resume_writing()
    await _turns()
    expected = ([list(range(1, 17)), [17, 18, 19], [20], list(range(21, 37)), [37, 38, 39, 40]] if mixed
                else [list(range(1, 17)), list(range(17, 33)), list(range(33, 41))])
    assert dispatched == expected and transport.aborted
    assert set(_answers(transport)) == set(range(1, 41))


async def _never_grouped(conn: Connection, reqs: list[RemotingCommand]) -> list[grouping.Answer]:
    raise AssertionError("every group is answered by now")


async def test_a_failing_group_answers_each_request_and_a_lost_connection_ends_a_waiting_one() -> None:
    handlers = GroupHandlers()
    conn, transport = _open(handlers)
    conn.data_received(_request(GROUPED, 1) + _request(GROUPED, 2, remark="fail"))
    await _turns()
    answers = _answers(transport)
    assert {answers[i].remark for i in (1, 2)} == {"RuntimeError: group broke"}
    conn.data_received(_request(GROUPED, 3) + _request(GROUPED, 4))
    await _turns()
    assert conn._in_flight() == 2
    conn.connection_lost(None)
    await _turns()
    assert conn._in_flight() == 0 and not conn._tasks
    assert sorted(_answers(transport)) == [1, 2]


# --- timeouts of the requests a connection sends -------------------------------------------


def _on(loop: str, scenario: Callable[[], Coroutine[Any, Any, None]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.SWITCH, "1" if loop == "uvloop" else "0")
    eventloop.run(scenario(), tune=False)


async def _ends(fut: asyncio.Future[RemotingCommand]) -> tuple[float, BaseException | None]:
    """When (loop time) the request's future ended, and with which error."""
    try:
        await asyncio.wait_for(asyncio.shield(fut), 5)
    except (RemotingTimeoutError, RemotingSendError) as exc:
        return asyncio.get_running_loop().time(), exc
    return asyncio.get_running_loop().time(), None


async def _short_after_long() -> None:
    conn, _transport = _open(Handlers())
    loop = asyncio.get_running_loop()
    long = conn.request(RemotingCommand(code=1), 30)
    started = loop.time()
    short = conn.request(RemotingCommand(code=2), 0.05)
    ended, error = await _ends(short)
    assert isinstance(error, RemotingTimeoutError) and "to code 2 within 0.050s" in str(error)
    assert ended >= started + 0.05 - TIMEOUT_EARLY
    assert not long.done() and len(conn._pending) == 1  # the long one waits on
    conn.connection_lost(None)
    assert isinstance((await _ends(long))[1], RemotingSendError)
    assert conn._pending == {} and conn._sweep is None


async def _many_deadlines() -> None:
    conn, transport = _open(Handlers())
    loop = asyncio.get_running_loop()
    timeouts = [0.005 * (i % 40 + 1) for i in range(200)]
    started = loop.time()
    futures = [conn.request(RemotingCommand(code=i), t) for i, t in enumerate(timeouts)]
    answered = futures[7]  # answered before its deadline: ends with the answer, once
    (_first, *_rest) = [cmd for cmd in FrameDecoder().feed(bytes(transport.written)) if cmd.code == 7]
    conn.data_received(_first.response(ResponseCode.SUCCESS, "in time").encode())
    ends = await asyncio.gather(*(_ends(f) for f in futures))
    for i, ((ended, error), timeout) in enumerate(zip(ends, timeouts, strict=True)):
        if i == 7:
            assert error is None and answered.result().remark == "in time"
        else:
            assert isinstance(error, RemotingTimeoutError), i
            assert ended >= started + timeout - TIMEOUT_EARLY, (i, ended - started, timeout)
    assert conn._pending == {}
    conn.data_received(_first.response(ResponseCode.SUCCESS, "too late").encode())  # dropped, no error


async def _cancelled_then_answered() -> None:
    conn, transport = _open(Handlers())
    cancelled = conn.request(RemotingCommand(code=1), 5)
    kept = conn.request(RemotingCommand(code=2), 5)
    cancelled.cancel()
    await asyncio.sleep(0)
    assert len(conn._pending) == 1
    for sent in FrameDecoder().feed(bytes(transport.written)):
        conn.data_received(sent.response(ResponseCode.SUCCESS, str(sent.code)).encode())
    assert (await kept).remark == "2" and cancelled.cancelled() and conn._pending == {}


@pytest.mark.parametrize("loop", LOOPS)
def test_a_short_timeout_is_not_held_up_by_a_long_one(loop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _on(loop, _short_after_long, monkeypatch)


@pytest.mark.parametrize("loop", LOOPS)
def test_many_deadlines_each_end_once_and_never_early(loop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _on(loop, _many_deadlines, monkeypatch)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_cancelled_request_is_forgotten_and_its_answer_dropped(loop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _on(loop, _cancelled_then_answered, monkeypatch)


# --- a port taken between bind and listen --------------------------------------------------


async def _port_taken_before_listen() -> None:
    server = RemotingServer({}, host="127.0.0.1", port=free_port())
    await server.bind()
    port = server._requested_port
    thief = socket.socket()
    try:  # binds beside the reserved socket (both SO_REUSEADDR, neither listening yet), listens first
        thief.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        thief.bind(("0.0.0.0", port))
        thief.listen()
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            await server.start()
    finally:
        thief.close()
        await server.close()


@pytest.mark.parametrize("loop", LOOPS)
def test_a_port_taken_between_bind_and_listen_is_an_os_error_naming_it(
        loop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker's HA port could take its client port this way; uvloop used to leave the server
    half made (an AttributeError at start) instead of saying which port was taken."""
    _on(loop, _port_taken_before_listen, monkeypatch)


async def test_a_lone_request_leaves_at_once_and_a_burst_in_one_write() -> None:
    conn, transport = _open(Handlers())
    writes: list[int] = []
    written = transport.writelines

    def counting(chunks: list[bytes]) -> None:
        writes.append(len(chunks))
        written(chunks)

    transport.writelines = counting  # type: ignore[method-assign]
    lone = conn.request(RemotingCommand(code=SYNC), 5)
    assert writes == [1]  # nothing in flight: written before the loop turn ends
    burst = [conn.request(RemotingCommand(code=SYNC), 5) for _ in range(3)]
    assert writes == [1]  # one in flight: these wait for the turn's end, together
    await _turns(1)
    assert writes == [1, 3]
    frames_sent = list(FrameDecoder().feed(bytes(transport.written)))
    assert [f.opaque for f in frames_sent] == sorted(conn._pending)
    for waiting in (lone, *burst):
        waiting.cancel()


async def test_a_request_sent_as_a_frame_is_answered_like_any_other() -> None:
    conn, transport = _open(Handlers())
    seen: list[tuple[RemotingCommand | None, BaseException | None]] = []
    opaque = conn.next_opaque()
    request = RemotingCommand(code=SYNC, opaque=opaque)
    conn.send_frame(request.encode(), opaque, SYNC, 5, lambda r, e: seen.append((r, e)))
    (sent,) = FrameDecoder().feed(bytes(transport.written))
    assert sent.opaque == opaque
    conn.data_received(sent.response(ResponseCode.SUCCESS, "answer").encode())
    assert [(r.remark if r else None, e) for r, e in seen] == [("answer", None)]
    assert conn._pending == {}


async def test_a_lone_grouped_request_is_answered_as_a_group_of_one() -> None:
    """A read of one request for a ``GroupedHandler`` with ``now`` (a producer's lone send) is
    answered as ``_dispatch_group`` answers it: a frame written at once and after the frames
    already queued, a failure as SYSTEM_ERROR, None by ``group``, a oneway request never."""
    seen: list[int] = []

    def now(conn: Connection, reqs: list[RemotingCommand]) -> list[grouping.Answer] | None:
        (req,) = reqs
        seen.append(req.opaque)
        if req.remark == "fail":
            raise RuntimeError("now broke")
        if req.remark == "wait":
            return None
        return [req.response(ResponseCode.SUCCESS, "now").encode()]

    async def group(conn: Connection, reqs: list[RemotingCommand]) -> list[grouping.Answer]:
        return [r.response(ResponseCode.SUCCESS, "group") for r in reqs]

    handlers = Handlers()
    conn = Connection({**handlers.table(), GROUPED: grouping.GroupedHandler(handlers.sync, group, now)})
    transport = MemoryTransport()
    transport.write = lambda chunk: transport.writelines([chunk])  # type: ignore[attr-defined]
    conn.connection_made(transport)  # type: ignore[arg-type]
    conn.data_received(_request(GROUPED, 1))
    assert _answers(transport)[1].remark == "now"  # in the read itself
    conn._write(_request(SYNC, 99))  # queued for the turn's end: it goes out first
    conn.data_received(_request(GROUPED, 2))
    assert [f.opaque for f in FrameDecoder().feed(bytes(transport.written))] == [1, 99, 2]
    conn.data_received(_request(GROUPED, 3, remark="fail"))
    conn.data_received(_request(GROUPED, 4, remark="wait"))
    conn.data_received(_request(GROUPED, 5, flag=ONEWAY_FLAG))
    await _turns()
    answers = _answers(transport)
    assert answers[3].code == ResponseCode.SYSTEM_ERROR and answers[3].remark == "RuntimeError: now broke"
    assert answers[4].remark == "group"
    assert 5 not in answers and seen == [1, 2, 3, 4, 5]

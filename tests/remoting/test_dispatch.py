"""Request dispatch on one connection: handlers run eagerly, waiting ones keep a task's semantics.

A ``Connection`` is driven through an in-memory transport, so each test sees exactly which
frames were written and when, without sockets.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import ONEWAY_FLAG, FrameDecoder, RemotingCommand
from rocketq.protocol.headers import TopicHeader
from rocketq.remoting import connection as connection_mod
from rocketq.remoting import grouping
from rocketq.remoting.connection import Connection
from rocketq.remoting.errors import RemotingSendError, RemotingTimeoutError

SYNC, WAITS, WAITS_OFTEN, FAILS_LATE, STRICT, CANCELS_ITSELF, LATER = 1, 2, 3, 4, 5, 6, 7


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

"""The sends of a read answered by a plain call (``SendHandlers.send_group_now``) against the
coroutine path (``send_group``): the same answers, byte for byte, and the same files.

Two brokers of ``test_send_groups`` are fed the same reads: one as the broker runs (the
connection tries ``now`` first), one whose grouped handler has no ``now`` (every group through
``send_group``, as before the plain path existed). Random reads mix lone sends (the common
case), groups, refusals (a bad header, a body over the limit, a bad queue), oneway sends,
another request between sends, and sends to a topic that does not exist yet (created from
TBW102: that group must fall back whole, having done nothing).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_send_groups import Broker, other_frame, send_frame

from rocketq.protocol import codes, frames
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.grouping import GroupedHandler
from rocketq.store import messagestore

KINDS = ("ok", "ok", "ok", "new", "bad_header", "too_large", "bad_queue", "oneway", "other", "system")
STATES = ("open", "open", "read_only", "page_cache_busy", "in_flight_full", "not_yet", "gated")
"""The broker-wide states a send can be refused for (``send_group_now`` asks once per group)."""
STORE_DIRS = ("commitlog", "consumequeue", "index")
NOW_MS = 1_764_000_000_000
SMALL_FILES = {"mapped_file_size_commit_log": 1 << 16, "mapped_file_size_consume_queue": 20 * 300,
               "max_hash_slot_num": 64, "max_index_num": 256}
"""Files small enough to compare whole."""


def _frame(kind: str, opaque: int) -> tuple[bytes, bool]:
    """A frame of this kind, and whether it is answered."""
    body = b"%d-" % opaque + b"x" * (opaque % 7 * 40)
    if kind == "new":
        return send_frame(opaque, body, topic="NewTopic"), True
    if kind == "bad_header":
        return RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, opaque=opaque, ext_fields={"a": "pg"},
                               body=b"x").encode(), True
    if kind == "too_large":
        return send_frame(opaque, random.Random(opaque).randbytes(5000)), True
    if kind == "bad_queue":
        return send_frame(opaque, body, queue_id=99), True
    if kind == "oneway":
        return send_frame(opaque, body, oneway=True), False
    if kind == "other":
        return other_frame(opaque), True
    if kind == "system":  # a topic in the table that no producer may send to
        request = frames.decode_frame(send_frame(opaque, body)[4:])  # (the producer refuses to send it)
        request.ext_fields["b"] = codes.AUTO_CREATE_TOPIC_KEY  # SEND_MESSAGE_V2's short name of topic
        return request.encode(), True
    return send_frame(opaque, body, queue_id=opaque % 4), True


def _without_now(broker: Broker) -> None:
    """Every group of sends through ``send_group``, as the connection ran them before ``now``."""
    grouped = GroupedHandler(broker.send.send, broker.send.send_group)
    handlers = broker.conn._handlers
    assert isinstance(handlers, dict)
    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        handlers[code] = grouped


def _enter(broker: Broker, state: str) -> None:
    """Put the broker in one of ``STATES``."""
    send = broker.send
    if state == "read_only":
        send.broker_permission = int(codes.Perm.READ)
    elif state == "page_cache_busy":
        broker.store.busy_until = time.monotonic() + 3600
    elif state == "in_flight_full":
        send._in_flight = send._behaviour.max_sends_in_flight
    elif state == "not_yet":
        send._behaviour = dataclasses.replace(send._behaviour, start_accept_send_request_time_stamp=NOW_MS * 2)
    elif state == "gated":
        send._write_gate = lambda: "not the leader now"


async def _run(root: Path, reads: list[list[tuple[bytes, bool]]], now: bool,
               state: str = "open") -> tuple[bytes, dict[str, bytes]]:
    broker = Broker(root, **SMALL_FILES)
    if not now:
        _without_now(broker)
    broker.store.open()
    await broker.store.start()
    try:
        answered = 0
        for i, read in enumerate(reads):
            if i == 1:  # after a read, when the topics' names are known good
                _enter(broker, state)
            broker.conn.data_received(b"".join(frame for frame, _ in read))
            answered += sum(answers for _, answers in read)
            await broker.answered(answered)  # each read's answers before the next read
        return bytes(broker.transport.data), _files(root)
    finally:
        await broker.store.close()


def _files(root: Path) -> dict[str, bytes]:
    """The store's files by path; index files by their order (their names are wall-clock times)."""
    files = {}
    for d in STORE_DIRS:
        for i, path in enumerate(sorted(p for p in (root / d).rglob("*") if p.is_file())):
            files[f"{d}/{i}" if d == "index" else str(path.relative_to(root))] = path.read_bytes()
    return files


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.lists(st.sampled_from(KINDS), min_size=1, max_size=6), min_size=1, max_size=6),
       state=st.sampled_from(STATES))
@example(shape=[["ok", "system"], ["ok", "system", "ok"]], state="open")
@example(shape=[["ok", "ok"], ["ok", "ok", "ok"]], state="page_cache_busy")
def test_now_answers_and_stores_as_the_coroutine_path(tmp_path_factory: pytest.TempPathFactory,
                                                      shape: list[list[str]], state: str) -> None:
    opaques = iter(range(1, 1000))
    reads = [[_frame(kind, next(opaques)) for kind in read] for read in shape]
    with mock.patch.object(messagestore, "_now_ms", lambda: NOW_MS):
        now = asyncio.run(_run(tmp_path_factory.mktemp("now"), reads, True, state))
        general = asyncio.run(_run(tmp_path_factory.mktemp("general"), reads, False, state))
    assert now[0] == general[0]
    assert now[1] == general[1]


async def test_a_lone_send_is_answered_in_the_read_without_a_task(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    broker.store.open()
    await broker.store.start()
    try:
        broker.conn.data_received(send_frame(7, b"lone"))
        # answered inside data_received: written at once, in one write, no task left behind
        assert broker.transport.writes == 1 and not broker.conn.busy
        answer = broker.transport.answers()[7]
        assert answer.code == ResponseCode.SUCCESS and broker.stored_bodies() == [b"lone"]
    finally:
        await broker.store.close()


async def test_a_group_needing_a_new_topic_falls_back_having_done_nothing(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    broker.store.open()
    await broker.store.start()
    try:
        data = [send_frame(0, b"1"), send_frame(1, b"2", topic="NewTopic"), send_frame(2, b"3")]
        assert broker.send.send_group_now(broker.conn, [frames.decode_frame(d[4:]) for d in data]) is None
        assert broker.store.commitlog.max_offset == broker.store.commitlog.min_offset
        broker.conn.data_received(b"".join(data))
        answers = await broker.answered(3)
        assert {a.code for a in answers.values()} == {ResponseCode.SUCCESS}
        assert broker.stored_bodies() == [b"1", b"2", b"3"]
    finally:
        await broker.store.close()

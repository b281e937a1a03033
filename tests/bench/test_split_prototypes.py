"""The split prototypes that bench/run_split.py and bench/split_handoff.py measure still do
what they claim, so that their numbers (docs/benchmarks.md, "Threads and processes") can be
taken again as the broker changes. No timing is asserted.

- the store thread stores exactly what the loop would (results, queue offsets, readable
  records) and calls the arrival listeners on the loop's thread, not its own;
- the I/O threads carry requests and answers between a socket and the broker's loop;
- the process hand-off's answers are checked by the network side on every group.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import split_handoff
from splitproto import designs

from rocketq.bench.storeappend import _requests
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingServer
from rocketq.store.messagestore import MessageStore
from rocketq.store.settings import StoreSettings

TIMEOUT_S = 30.0


async def test_the_store_thread_stores_as_the_loop_does_and_notifies_on_the_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MessageStore, "_append_many", designs._append_many)
    monkeypatch.setattr(MessageStore, "_put_many", designs._put_many_in_thread)
    store = MessageStore(StoreSettings(store_path_root_dir=str(tmp_path)), ("127.0.0.1", 10911))
    store.open()
    await store.start()
    notified: list[tuple[str, int, int, int]] = []
    store.add_arrival_listener(lambda topic, queue, offset: notified.append(
        (topic, queue, offset, threading.get_ident())))
    try:
        requests = _requests(6, 100, 1, 3)
        singles = await store.put_group([[r] for r in requests[:3]])
        batch = await store.put_batch(requests[3:])
        assert [r.ok for r in singles] == [True] * 3 and batch.ok
        assert [r.queue_offsets for r in singles] == [(0,), (1,), (2,)]
        assert batch.queue_offsets == (3, 4, 5)
        got = store.get_messages("BenchTopic", 0, 0, 32)
        assert len(got.buffers) == 6
        assert notified and all(ident == threading.get_ident() for *_, ident in notified)
        assert notified[-1][:3] == ("BenchTopic", 0, 6)
        assert store.stats.put_message_times == 6
    finally:
        await store.close()


async def test_io_threads_carry_requests_and_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RemotingServer, "start", designs.threaded_start(2))
    seen: list[int] = []

    async def echo(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        seen.append(threading.get_ident())
        return request.response(ResponseCode.SUCCESS, request.remark)

    server = RemotingServer({RequestCode.HEART_BEAT: echo}, host="127.0.0.1", name="broker")
    await server.start()
    client = RemotingClient()
    try:
        for text in ("one", "two", "three"):
            cmd = RemotingCommand(code=RequestCode.HEART_BEAT, remark=text)
            answer = await client.invoke(f"127.0.0.1:{server.port}", cmd, TIMEOUT_S)
            assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, text)
        assert seen == [threading.get_ident()] * 3  # handled on the broker's loop, not an I/O thread
    finally:
        await client.close()
        await server.close()


@pytest.mark.parametrize("transport", ["pipe", "shm"])
@pytest.mark.parametrize(("group", "in_flight"), [(1, 1), (16, 4)])
def test_the_process_hand_off_answers_every_record(transport: str, group: int, in_flight: int) -> None:
    network_us, store_us, rate = split_handoff.measure(transport, 200, 300, group, in_flight)
    assert network_us > 0 and store_us >= 0 and rate > 0

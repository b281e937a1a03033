"""Crashes: kill -9 under SYNC_FLUSH loses no acknowledged message; a torn CommitLog tail is cut."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest
from clusterprocs import Processes, pull_bodies

from rocketq.client.errors import ClientError
from rocketq.client.producer import Producer
from rocketq.protocol import storedrecords
from rocketq.protocol.messagetypes import Message
from rocketq.remoting.errors import RemotingError

TOPIC = "CrashIT"


async def _all_bodies(namesrv: str) -> list[bytes]:
    return await pull_bodies(namesrv, TOPIC, "crash-cg")


@pytest.mark.slow
async def test_kill_9_under_sync_flush_loses_no_acknowledged_message(processes: Processes, tmp_path: Path) -> None:
    ns = processes.namesrv()
    store = tmp_path / "store"
    broker = processes.broker(ns.address, store=store, config={"flushDiskType": "SYNC_FLUSH"})
    port = int(broker.address.rsplit(":", 1)[1])
    acked: list[bytes] = []
    stop = asyncio.Event()

    async def sender(producer: Producer, worker: int) -> None:
        i = 0
        while not stop.is_set():
            body = b"w%d-%d" % (worker, i)
            i += 1
            try:
                result = await producer.send(Message(TOPIC, body))
            except (ClientError, RemotingError):
                return  # the broker is gone; this send was never acknowledged
            if result.status.name == "SEND_OK":
                acked.append(body)

    async with Producer("crash-pg", namesrv_addr=ns.address, retry_times_when_send_failed=0) as producer:
        await producer.send(Message(TOPIC, b"warm-up"))
        acked.append(b"warm-up")
        workers = [asyncio.ensure_future(sender(producer, w)) for w in range(8)]
        while len(acked) < 300:
            await asyncio.sleep(0.05)
        broker.kill9()  # in the middle of the load: sends are in flight
        stop.set()
        await asyncio.gather(*workers)
    assert (store / "abort").exists(), "a killed broker leaves its abort file: recovery must be abnormal"
    processes.broker(ns.address, store=store, port=port, config={"flushDiskType": "SYNC_FLUSH"})
    stored = await _all_bodies(ns.address)
    missing = set(acked) - set(stored)
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
    assert len(stored) == len(set(stored)), "recovery must not duplicate messages"
    async with Producer("crash-pg", namesrv_addr=ns.address) as producer:
        assert (await producer.send(Message(TOPIC, b"after restart"))).status.name == "SEND_OK"


def _commitlog_end(segment: Path) -> int:
    data = segment.read_bytes()
    end = 0
    for record in storedrecords.iter_stored_records(data):
        end += record.store_size
    return end


@pytest.mark.slow
async def test_torn_commitlog_tail_is_truncated(processes: Processes, tmp_path: Path) -> None:
    ns = processes.namesrv()
    store = tmp_path / "store"
    broker = processes.broker(ns.address, store=store)
    port = int(broker.address.rsplit(":", 1)[1])
    async with Producer("crash-pg", namesrv_addr=ns.address) as producer:
        for i in range(20):
            await producer.send(Message(TOPIC, b"good-%d" % i))
    broker.kill9()
    segment = store / "commitlog" / ("0" * 20)
    end = _commitlog_end(segment)
    with open(segment, "r+b") as fh:  # half a record: right magic and size, the rest never written
        fh.seek(end)
        fh.write(struct.pack(">ii", 300, storedrecords.MAGIC_V1) + b"\x17" * 40)
    processes.broker(ns.address, store=store, port=port)
    assert sorted(await _all_bodies(ns.address)) == sorted(b"good-%d" % i for i in range(20))
    async with Producer("crash-pg", namesrv_addr=ns.address) as producer:
        result = await producer.send(Message(TOPIC, b"after repair"))
    assert result.status.name == "SEND_OK"
    assert b"after repair" in await _all_bodies(ns.address)
    assert _commitlog_end(segment) > end  # the new record starts where the torn one was cut

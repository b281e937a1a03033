"""Offset stores: local file (atomic write, backup, refusal of damaged files) and broker-backed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from client_fakes import FakeCluster

from rocketq.client.errors import ClientStateError
from rocketq.client.instance import ClientInstance
from rocketq.client.offsetstores import LocalFileOffsetStore, RemoteBrokerOffsetStore
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ClientSettings
from rocketq.protocol.codes import RequestCode

A0, A1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)


async def test_local_store_round_trips_through_its_file(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(tmp_path, "10.0.0.1@42", "cg")
    await store.load()
    assert await store.read_from_store(A0) is None
    store.update(A0, 5)
    store.update(A0, 3)  # increase only: ignored
    store.update(A1, 9)
    assert store.read_memory(A0) == 5
    await store.persist_all([A0, A1])
    assert store.path == tmp_path / "10.0.0.1@42" / "cg" / "offsets.json"
    store.update(A0, 7)
    await store.persist(A0)
    assert store.path.with_suffix(".json.bak").exists()
    again = LocalFileOffsetStore(tmp_path, "10.0.0.1@42", "cg")
    await again.load()
    assert await again.read_from_store(A0) == 7 and await again.read_from_store(A1) == 9


async def test_damaged_file_falls_back_to_backup_and_both_damaged_refuse(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(tmp_path, "c", "g")
    store.update(A0, 1)
    await store.persist_all([A0])
    store.update(A0, 2)
    await store.persist_all([A0])
    store.path.write_bytes(b"{broken")
    recovered = LocalFileOffsetStore(tmp_path, "c", "g")
    await recovered.load()
    assert recovered.read_memory(A0) == 1
    store.path.with_suffix(".json.bak").write_bytes(b'{"offsetTable": [{"topic": "T"}]}')
    with pytest.raises(ClientStateError, match="cannot load local offsets"):
        await LocalFileOffsetStore(tmp_path, "c", "g").load()


@pytest.fixture
async def instance(cluster: FakeCluster) -> AsyncIterator[ClientInstance]:
    cluster.topic("T")
    inst = ClientInstance(ClientSettings(namesrv_addr=cluster.namesrv.addr))
    await inst.update_route("T")
    yield inst
    await inst.close()


async def test_remote_store_reads_and_writes_the_broker(cluster: FakeCluster, instance: ClientInstance) -> None:
    broker = cluster.brokers[0]
    store = RemoteBrokerOffsetStore(instance, "cg")
    assert await store.read_from_store(A0) == 0  # a fresh queue: the broker answers 0
    broker.queues[("T", 1)].min_offset = 10
    assert await store.read_from_store(A1) is None  # QUERY_NOT_FOUND
    store.update(A0, 4)
    store.update(A1, 12)
    await store.persist_all([A0, A1], acknowledged=True)
    assert broker.offsets[("cg", "T", 0)] == 4 and broker.offsets[("cg", "T", 1)] == 12
    store.update(A0, 6)
    await store.persist_all([A0])
    assert store.read_memory(A1) is None  # no longer held: forgotten after the persist
    for _ in range(100):
        if broker.offsets[("cg", "T", 0)] == 6:
            break
        await asyncio.sleep(0.01)
    assert broker.offsets[("cg", "T", 0)] == 6
    assert RequestCode.UPDATE_CONSUMER_OFFSET in broker.codes()


async def test_remote_store_uses_a_slave_while_the_route_has_no_master(cluster: FakeCluster) -> None:
    """The master is gone from the route: offsets go to (and come from) the slave, as RocketMQ's
    findBrokerAddressInSubscribe does, instead of failing with 'broker not exist'."""
    cluster.topic("T")
    broker = cluster.brokers[0]
    cluster.namesrv.routes["T"]["brokerDatas"][0]["brokerAddrs"] = {"1": broker.addr}  # only a slave left
    inst = ClientInstance(ClientSettings(namesrv_addr=cluster.namesrv.addr))
    try:
        await inst.update_route("T")
        assert inst.master_addr("broker-a") is None
        store = RemoteBrokerOffsetStore(inst, "cg")
        store.update(A0, 8)
        await store.persist_all([A0], acknowledged=True)
        assert broker.offsets[("cg", "T", 0)] == 8
        assert await RemoteBrokerOffsetStore(inst, "cg").read_from_store(A0) == 8
    finally:
        await inst.close()

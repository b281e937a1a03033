"""Incremental registration against two in-process name servers: a created topic is routable on
every name server as soon as its create is answered, carried by a body that holds just that
topic; a big table registers compressed; a restarted name server gets the whole table back from
the next periodic registration."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketq.admin import cluster
from rocketq.admin.client import AdminClient
from rocketq.broker import registration
from rocketq.broker.server import BrokerServer
from rocketq.broker.settings import BrokerBehaviour, BrokerIdentity
from rocketq.namesrv import registerbodies
from rocketq.namesrv.routes import RegisterResult, Registration
from rocketq.namesrv.server import NamesrvServer
from rocketq.namesrv.settings import NamesrvSettings
from rocketq.protocol.sharedbodies import DataVersion, TopicConfig
from rocketq.remoting.client import RemotingClient
from rocketq.store.settings import StoreSettings

WAIT_DEADLINE = 30.0
"""Bounds how long a broken registration can hang the test; nothing is asserted about speed."""


@dataclass
class Seen:
    """What one name server was registered with: topics per registration, compressed or not."""

    bodies: list[int]


def _recording(server: NamesrvServer) -> Seen:
    seen = Seen([])
    original: Callable[..., RegisterResult] = server.routes.register_broker

    def register(reg: Registration, **kwargs: object) -> RegisterResult:
        seen.bodies.append(len(reg.body.topic_configs))
        return original(reg, **kwargs)

    server.routes.register_broker = register  # type: ignore[method-assign]
    return seen


async def _namesrv(tmp_path: Path, name: str, port: int = 0) -> NamesrvServer:
    server = NamesrvServer(NamesrvSettings(listen_port=port, bind_address="127.0.0.1", metrics_port=-1,
                                           kv_config_path=str(tmp_path / f"{name}-kv.json")))
    await server.start()
    return server


async def _broker(tmp_path: Path, namesrvs: list[NamesrvServer], period_ms: int) -> BrokerServer:
    identity = BrokerIdentity(listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1", metrics_port=-1,
                              namesrv_addr=";".join(f"127.0.0.1:{n.port}" for n in namesrvs),
                              broker_name="broker-inc")
    store = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                          mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=64, max_index_num=400)
    server = BrokerServer(identity, BrokerBehaviour(register_name_server_period=period_ms), store)
    await server.start()
    return server


@pytest.fixture
async def two_namesrvs(tmp_path: Path) -> AsyncIterator[list[NamesrvServer]]:
    servers = [await _namesrv(tmp_path, "ns1"), await _namesrv(tmp_path, "ns2")]
    try:
        yield servers
    finally:
        for server in servers:
            await server.close()


async def test_a_created_topic_is_routable_on_every_name_server_when_answered(
        tmp_path: Path, two_namesrvs: list[NamesrvServer]) -> None:
    broker = await _broker(tmp_path, two_namesrvs, period_ms=600_000)  # no periodic registration in the test
    seen = [_recording(n) for n in two_namesrvs]
    try:
        async with AdminClient(broker.identity.namesrv_addr) as admin:
            names = [f"Inc{i}" for i in range(30)]
            await asyncio.gather(*(admin.create_topic(broker.address, TopicConfig(n, 8, 8)) for n in names))
            for server in two_namesrvs:
                for name in names:
                    route = server.routes.pick_route(name)
                    assert route is not None, f"{name} not routable on {server.port}"
                    assert route["queueDatas"][0]["writeQueueNums"] == 8
            table_size = len(broker.topics.table)
            for record in seen:
                assert record.bodies, "no registration reached a name server"
                assert max(record.bodies) < table_size  # increments only, never the whole table
                assert sum(record.bodies) == len(names)  # each created topic sent once

            await cluster.delete_topic(admin, names[0], broker.identity.broker_cluster_name)
            for server in two_namesrvs:
                assert server.routes.pick_route(names[0]) is None
                assert server.routes.pick_route(names[1]) is not None
    finally:
        await broker.close()


async def test_a_restarted_name_server_gets_the_whole_table_from_the_next_periodic_registration(
        tmp_path: Path, two_namesrvs: list[NamesrvServer]) -> None:
    broker = await _broker(tmp_path, two_namesrvs, period_ms=300)
    try:
        async with AdminClient(broker.identity.namesrv_addr) as admin:
            await admin.create_topic(broker.address, TopicConfig("BeforeRestart", 4, 4))
            port = two_namesrvs[1].port
            await two_namesrvs[1].close()
            await admin.create_topic(broker.address, TopicConfig("WhileDown", 4, 4))  # the increment misses ns2
            two_namesrvs[1] = await _namesrv(tmp_path, "ns2-again", port)
            deadline = time.monotonic() + WAIT_DEADLINE
            while two_namesrvs[1].routes.pick_route("WhileDown") is None:
                assert time.monotonic() < deadline, "the restarted name server never got the table"
                await asyncio.sleep(0.05)
            assert two_namesrvs[1].routes.pick_route("BeforeRestart") is not None
            assert two_namesrvs[0].routes.pick_route("WhileDown") is not None
    finally:
        await broker.close()


async def test_a_big_table_registers_compressed_and_name_servers_read_it(
        tmp_path: Path, two_namesrvs: list[NamesrvServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registration, "COMPRESS_ABOVE_TOPICS", 20)
    broker = await _broker(tmp_path, two_namesrvs, period_ms=600_000)
    seen = [_recording(n) for n in two_namesrvs]
    try:
        for i in range(40):
            broker.topics.upsert(TopicConfig(f"Big{i}", 2, 2))
        await broker.registrar.register_all()
        table = broker.topics.register_body(6)
        plain = len(registerbodies.encode_register_body(table, compress=False))
        assert 0 < broker.registrar.last_body_size < plain / 2
        for server, record in zip(two_namesrvs, seen, strict=True):
            assert len(table.topic_configs) in record.bodies
            assert server.routes.pick_route("Big39") is not None
    finally:
        await broker.close()


async def test_topic_changes_before_the_first_full_registration_ride_in_it(
        tmp_path: Path, two_namesrvs: list[NamesrvServer]) -> None:
    """A topic created while the broker starts (e.g. POP's revive topic) is not sent ahead as an
    increment: a name server holding only that increment at the table's DataVersion would then
    skip the full table sent under the same version."""
    seen = _recording(two_namesrvs[0])
    tables = {"A": TopicConfig("A", 4, 4), "B": TopicConfig("B", 4, 4)}
    version = DataVersion(timestamp=1, counter=1)

    def topic_body(names: Collection[str] | None) -> registerbodies.RegisterBrokerBody:
        chosen = tables.values() if names is None else [tables[n] for n in names]
        return registerbodies.RegisterBrokerBody(tuple(chosen), version)

    client = RemotingClient(name="registrar-test")
    registrar = registration.Registrar(
        client, [f"127.0.0.1:{two_namesrvs[0].port}"],
        registration.BrokerRegistration("C", "broker-early", 0, "127.0.0.1:1", "127.0.0.1:2"), topic_body, 600_000)
    try:
        registrar.topics_changed(["B"])
        await registrar.register_changes()
        assert seen.bodies == []  # nothing sent ahead of the full table
        await registrar.register_all()
        assert seen.bodies == [2]
        assert two_namesrvs[0].routes.pick_route("A") is not None
    finally:
        await registrar.close()
        await client.close()

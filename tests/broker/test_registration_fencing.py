"""A broker fences itself when its name server keeps brokerId 0 with a newer-epoch master
(rocketq.ha.fencing), in-process: one name server, one rocketq master, and the newer master's
registration made straight into the name server's route table."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.broker.server import BrokerServer
from rocketq.broker.settings import BrokerBehaviour, BrokerIdentity, BrokerRole
from rocketq.ha.role import RoleChange
from rocketq.namesrv.registerbodies import RegisterBrokerBody
from rocketq.namesrv.routes import Registration
from rocketq.namesrv.server import NamesrvServer
from rocketq.namesrv.settings import NamesrvSettings
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import Message
from rocketq.protocol.queues import MessageQueue
from rocketq.protocol.sharedbodies import DataVersion, TopicConfig
from rocketq.store.settings import StoreSettings

NAME, TOPIC = "broker-f", "FenceT"
NEWER = "127.0.0.9:10911"
"""The promoted master: only a registration, so nothing answers there."""
HOUR_MS = 3_600_000
"""A registration period that never elapses in a test: every registration here is explicit."""


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[NamesrvServer]:
    server = NamesrvServer(NamesrvSettings(listen_port=0, bind_address="127.0.0.1", metrics_port=-1,
                                           kv_config_path=str(tmp_path / "kv.json")))
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def master(tmp_path: Path, namesrv: NamesrvServer) -> AsyncIterator[BrokerServer]:
    identity = BrokerIdentity(listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1", metrics_port=-1,
                              namesrv_addr=f"127.0.0.1:{namesrv.port}", broker_name=NAME)
    store = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                          mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=64, max_index_num=400)
    server = BrokerServer(identity, BrokerBehaviour(register_name_server_period=HOUR_MS), store)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


def promote_elsewhere(namesrv: NamesrvServer, epoch: int) -> None:
    body = RegisterBrokerBody((TopicConfig(TOPIC, 4, 4, 6),), DataVersion(timestamp=1, counter=1))
    namesrv.routes.register_broker(
        Registration("DefaultCluster", NEWER, NAME, 0, "127.0.0.9:10912", body,
                     master_epoch=epoch), now=time.monotonic())


async def send_refused(admin: AdminClient, broker: BrokerServer) -> bool:
    try:
        await admin.send_message(broker.address, MessageQueue(TOPIC, NAME, 0), Message(TOPIC, b"x"))
    except AdminError as exc:
        assert exc.code == ResponseCode.NO_PERMISSION
        return True
    return False


async def registered(broker: BrokerServer) -> None:
    """Register now, and wait for the fence an answer may have started (it runs off the
    registration path, as a task)."""
    await broker.registrar.register_all()
    for _ in range(3000):
        if broker._fencing is None or not broker._fencing.running:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the fence did not finish")


async def test_a_stale_master_fences_itself_and_electMaster_re_promotes_it_past_the_fence(
        namesrv: NamesrvServer, master: BrokerServer) -> None:
    admin = AdminClient(f"127.0.0.1:{namesrv.port}")
    master.topics.upsert(TopicConfig(TOPIC, 4, 4, 6))
    assert not await send_refused(admin, master), "a master takes sends"
    assert namesrv.routes.master_epoch(NAME) == 0, "a rocketq master registers its epoch"

    promote_elsewhere(namesrv, epoch=1)
    await registered(master)
    assert master.fence.by is not None and master.fence.by.master_addr == NEWER and master.fence.by.epoch == 1
    assert master.identity.broker_role is BrokerRole.ASYNC_MASTER, "fenced, not demoted"
    assert await send_refused(admin, master)
    assert dict(namesrv.routes.broker_addr_table[NAME].addrs) == {0: NEWER}
    assert master.runtime_info()["fencedBy"] == f"{NEWER}@1"
    await registered(master)  # every later registration is refused again; the fence stays as it is
    assert dict(namesrv.routes.broker_addr_table[NAME].addrs) == {0: NEWER} and master.fence.by.epoch == 1

    await master.change_role(RoleChange(BrokerRole.ASYNC_MASTER, 0))  # electMaster on the fenced master
    assert not master.fence.engaged and master.ha.epochs.current.number == 2, "past the epoch it was fenced by"
    assert dict(namesrv.routes.broker_addr_table[NAME].addrs) == {0: master.address}
    assert not await send_refused(admin, master)
    await admin.close()


async def test_a_master_with_the_highest_epoch_keeps_writing_whoever_registers(
        namesrv: NamesrvServer, master: BrokerServer) -> None:
    admin = AdminClient(f"127.0.0.1:{namesrv.port}")
    master.topics.upsert(TopicConfig(TOPIC, 4, 4, 6))
    promote_elsewhere(namesrv, epoch=0)  # same epoch: last registration wins, as in RocketMQ 4.x
    await registered(master)
    assert master._fencing is None and not master.fence.engaged
    assert dict(namesrv.routes.broker_addr_table[NAME].addrs) == {0: master.address}
    assert not await send_refused(admin, master)
    await admin.close()

"""Promotion: a slave becomes its group's master at runtime (``rocketq admin electMaster``), and
the old master rejoins as its slave, dropping what the new master never received."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal

import pytest
from clusterprocs import Proc, Processes
from haprocs import Broker, admin_cli, read_keys, restart, runtime, start_pair, tree, wait_replicated

from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.client.producer import Producer
from rocketq.client.sending import SendStatus
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import Message
from rocketq.protocol.queues import MessageQueue

TOPIC = "PromoteIT"
BEFORE, AFTER = 150, 60


async def send(namesrv: str, first: int, count: int) -> list[str]:
    """Send messages k<first>..; the keys answered SEND_OK."""
    ok = []
    async with Producer("promote-pg", namesrv_addr=namesrv) as producer:
        for i in range(first, first + count):
            result = await producer.send(Message(TOPIC, b"x" * 500, properties={"KEYS": f"k{i}"}))
            if result.status is SendStatus.SEND_OK:
                ok.append(f"k{i}")
    return ok


async def until(check, limit: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(limit / 0.1)):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not reached")


@pytest.mark.slow
async def test_a_promoted_slave_takes_writes_and_the_old_master_rejoins_as_its_slave(procs: Processes) -> None:
    await promote_and_rejoin(procs, unreplicated=0)


@pytest.mark.slow
async def test_the_old_master_drops_the_tail_the_new_master_never_received(procs: Processes) -> None:
    """The old master holds more unreplicated bytes than the new master has written since its
    promotion, at the same offsets: without epochs it kept them (truncating to the new master's
    end only) and its CommitLog differed from the new master's."""
    await promote_and_rejoin(procs, unreplicated=40)


async def promote_and_rejoin(procs: Processes, *, unreplicated: int) -> None:
    """Kill -9 the master (after ``unreplicated`` sends its slave never saw), promote the slave
    with the admin command, write to it, restart the old master as its slave."""
    ns, master, slave, admin, acked = await pair_in_sync(procs, BEFORE)
    # messages the slave never receives: acknowledged by the (async) master alone
    os.kill(slave.proc.popen.pid, signal.SIGSTOP)
    try:
        lost = await send(ns.address, BEFORE, unreplicated)
        assert len(lost) == unreplicated
        master.proc.kill9()
    finally:
        os.kill(slave.proc.popen.pid, signal.SIGCONT)

    out = admin_cli(ns.address, "electMaster", "-b", slave.address)
    assert "ASYNC_MASTER" in out
    info = await runtime(slave.address)
    assert info["brokerRole"] == "ASYNC_MASTER"
    saved = json.loads((slave.store / "config" / "role.json").read_text())
    assert saved["brokerRole"] == "ASYNC_MASTER" and saved["brokerId"] == 0

    async def listed_as_master() -> bool:
        route = await admin.topic_route(TOPIC)
        return ("broker-a", 0, slave.address) in set(route.addrs())

    await until(listed_as_master)
    acked += await send(ns.address, BEFORE + unreplicated, AFTER // 2)
    assert len(acked) == BEFORE + AFTER // 2, "the promoted slave takes every send"

    # the old master comes back as the new master's slave, through the role file
    (master.store / "config" / "role.json").write_text(json.dumps({"brokerRole": "SLAVE", "brokerId": 1}))
    restart(procs, master)
    acked += await send(ns.address, BEFORE + unreplicated + AFTER // 2, AFTER - AFTER // 2)
    await wait_replicated(slave, master)
    assert tree(master.store / "commitlog") == tree(slave.store / "commitlog")
    assert (await runtime(master.address))["brokerRole"] == "SLAVE"

    keys = await read_keys(ns.address, TOPIC, "promote-cg")
    # the slave may have read a few of the unreplicated sends from its socket after SIGCONT
    survived = set(keys) - set(acked)
    assert survived <= set(lost) and set(acked) <= set(keys) and len(keys) == len(set(keys))
    if len(survived) < unreplicated:
        dropped = re.search(r"dropped (\d+) bytes \((\d+) messages\)", master.proc.log.read_text())
        assert dropped and int(dropped[2]) == unreplicated - len(survived)
    await admin.close()


@pytest.mark.slow
async def test_a_live_master_demoted_at_runtime_refuses_sends_and_replicates_from_the_new_master(
        procs: Processes) -> None:
    ns, master, slave, admin, acked = await pair_in_sync(procs, BEFORE)
    out = admin_cli(ns.address, "electMaster", "-b", slave.address, "--epoch-above", "40")
    assert "master epoch 41" in out, "the new epoch is numbered past the floor given"
    new_ha = (await runtime(slave.address))["haListenAddr"]
    out = admin_cli(ns.address, "changeToSlave", "-b", master.address, "-i", "1", "--master", new_ha)
    assert "SLAVE" in out
    with pytest.raises(AdminError) as refused:  # a demoted master takes no sends
        await admin.send_message(master.address, MessageQueue(TOPIC, "broker-a", 0), Message(TOPIC, b"late"))
    assert refused.value.code == ResponseCode.NO_PERMISSION
    acked += await send(ns.address, BEFORE, AFTER)
    assert len(acked) == BEFORE + AFTER
    await wait_replicated(slave, master)
    assert tree(master.store / "commitlog") == tree(slave.store / "commitlog")
    info = await runtime(master.address)
    assert info["brokerRole"] == "SLAVE" and info["haMasterAddress"] == new_ha
    assert json.loads((master.store / "config" / "role.json").read_text())["brokerId"] == 1
    assert sorted(await read_keys(ns.address, TOPIC, "promote-cg")) == sorted(acked)
    await admin.close()


@pytest.mark.slow
async def test_an_old_master_left_running_after_electMaster_is_fenced_and_never_takes_the_route_back(
        procs: Processes) -> None:
    """No changeToSlave: the old master keeps registering as brokerId 0 every second, at its old
    epoch. The name server keeps the promoted slave as master (it used to give brokerId 0 back
    to whoever registered last), and the old master, told so, refuses sends."""
    ns, master, slave, admin, acked = await pair_in_sync(procs, 20)
    admin_cli(ns.address, "electMaster", "-b", slave.address)

    async def master_fenced() -> bool:
        return "fencedBy" in await runtime(master.address)

    await until(master_fenced)
    info = await runtime(master.address)
    assert info["fencedBy"] == f"{slave.address}@1" and info["brokerRole"] == "ASYNC_MASTER"
    for _ in range(4):  # four of the old master's registration periods (registerNameServerPeriod=1000)
        route = await admin.topic_route(TOPIC)
        assert set(route.addrs()) == {("broker-a", 0, slave.address)}
        await asyncio.sleep(1)
    with pytest.raises(AdminError) as refused:
        await admin.send_message(master.address, MessageQueue(TOPIC, "broker-a", 0), Message(TOPIC, b"late"))
    assert refused.value.code == ResponseCode.NO_PERMISSION
    acked += await send(ns.address, 20, 20)
    assert len(acked) == 40, "the promoted slave takes every send"
    assert "brokerId 0 stays with" in ns.log.read_text()
    assert "fenced" in master.proc.log.read_text()
    await admin.close()


async def pair_in_sync(procs: Processes, count: int) -> tuple[Proc, Broker, Broker, AdminClient, list[str]]:
    """A name server and broker-a's pair with ``count`` messages sent and replicated, and the
    slave holding the topic (metadata sync: a promoted slave must own the topic's queues)."""
    ns = procs.namesrv()
    master, slave = start_pair(procs, ns.address)
    acked = await send(ns.address, 0, count)
    await wait_replicated(master, slave)
    admin = AdminClient(ns.address)

    async def slave_knows_topic() -> bool:
        return TOPIC in await admin.all_topic_config(slave.address)

    await until(slave_knows_topic)
    return ns, master, slave, admin, acked

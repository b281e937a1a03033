"""Broker lifecycle against real processes: registration with every name server, unregistration
on SIGTERM, client liveness expiry with NOTIFY_CONSUMER_IDS_CHANGED, and `rocketq local`."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import orjson
from clusterprocs import Processes

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection


async def _route(client: RemotingClient, namesrv: str, topic: str) -> RemotingCommand:
    return await client.invoke(namesrv, RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                        ext_fields={"topic": topic}), 5)


async def test_registers_with_every_name_server_and_unregisters_on_sigterm(processes: Processes) -> None:
    ns1, ns2 = processes.namesrv(), processes.namesrv()
    broker = processes.broker(f"{ns1.address};{ns2.address}", name="broker-x")
    client = RemotingClient()
    try:
        for ns in (ns1, ns2):
            route = await _route(client, ns.address, "broker-x")  # every broker registers its own name topic
            assert route.code == ResponseCode.SUCCESS
            assert broker.address in route.body.decode()
        assert broker.stop() == 0
        for ns in (ns1, ns2):
            assert (await _route(client, ns.address, "broker-x")).code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        await client.close()


def _heartbeat(client_id: str, group: str) -> RemotingCommand:
    body = {"clientID": client_id, "producerDataSet": [], "consumerDataSet": [{
        "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
        "subscriptionDataSet": [{"topic": "LifeIT", "subString": "*", "tagsSet": [], "codeSet": [],
                                 "subVersion": 1, "classFilterMode": False, "expressionType": "TAG"}]}]}
    return RemotingCommand(code=RequestCode.HEART_BEAT, body=orjson.dumps(body))


async def test_silent_clients_expire_and_the_rest_of_the_group_is_told(processes: Processes) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config={"channelExpiredTimeout": "1500", "clientScanInterval": "200"})
    notified: asyncio.Queue[str] = asyncio.Queue()

    async def on_notify(conn: Connection, request: RemotingCommand) -> None:
        await notified.put(request.ext_fields["consumerGroup"])

    live, silent = RemotingClient({RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: on_notify}), RemotingClient()
    try:
        assert (await silent.invoke(broker.address, _heartbeat("silent@1", "life-cg"), 5)).code == 0
        assert (await live.invoke(broker.address, _heartbeat("live@1", "life-cg"), 5)).code == 0
        ids = await live.invoke(broker.address, RemotingCommand(code=RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                                                ext_fields={"consumerGroup": "life-cg"}), 5)
        assert orjson.loads(ids.body)["consumerIdList"] == ["live@1", "silent@1"]
        while not notified.empty():
            notified.get_nowait()
        # keep only "live" beating; "silent" says nothing more and must be dropped
        for _ in range(40):
            await live.invoke(broker.address, _heartbeat("live@1", "life-cg"), 5)
            ids = await live.invoke(broker.address, RemotingCommand(
                code=RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext_fields={"consumerGroup": "life-cg"}), 5)
            if orjson.loads(ids.body)["consumerIdList"] == ["live@1"]:
                break
            await asyncio.sleep(0.1)
        assert orjson.loads(ids.body)["consumerIdList"] == ["live@1"]
        assert await asyncio.wait_for(notified.get(), 5) == "life-cg"
    finally:
        await live.close()
        await silent.close()


def test_local_up_status_down(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "rocketq", "local"]
    directory = str(tmp_path / "cluster")
    up = subprocess.run([*base, "up", "-d", directory, "-b", "2", "--namesrv-port", "0", "--broker-port", "0"],
                        capture_output=True, text=True, timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        assert "export NAMESRV_ADDR=127.0.0.1:" in up.stdout
        status = subprocess.run([*base, "status", "-d", directory], capture_output=True, text=True, timeout=30)
        assert status.returncode == 0 and status.stdout.count("running") == 3, status.stdout
        # no --metrics-port: each process took a free port of its own and `status` shows it
        metrics_ports = re.findall(r"metrics :(\d+)", status.stdout)
        assert len(set(metrics_ports)) == 3, status.stdout
        again = subprocess.run([*base, "up", "-d", directory], capture_output=True, text=True, timeout=30)
        assert again.returncode == 1 and "already running" in again.stderr
    finally:
        down = subprocess.run([*base, "down", "-d", directory], capture_output=True, text=True, timeout=60)
    assert down.returncode == 0 and down.stdout.count("stopped") == 3
    gone = subprocess.run([*base, "status", "-d", directory], capture_output=True, text=True, timeout=30)
    assert gone.returncode == 1 and "no cluster" in gone.stderr

"""A real broker killed with SIGKILL right after a burst of acknowledged topic and group creates
keeps every one of them: an admin change is answered only once the journal of topics.json /
subscriptionGroup.json holds it (appends are group-committed, never skipped)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from admin_processes import start_broker, start_namesrv

from rocketq.admin.adminbodies import GroupConfig
from rocketq.admin.client import AdminClient
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.sharedbodies import TopicConfig

BURST = 200


async def _burst(namesrv_addr: str, broker_addr: str) -> None:
    async with AdminClient(namesrv_addr) as admin:
        await asyncio.gather(
            *(admin.create_topic(broker_addr, TopicConfig(f"Kill9Topic{i}", 8, 8)) for i in range(BURST)),
            *(admin.create_group(broker_addr, GroupConfig(f"kill9-group-{i}")) for i in range(BURST)),
        )


def test_acknowledged_creates_survive_kill_9(tmp_path: Path) -> None:
    namesrv = start_namesrv(tmp_path)
    try:
        broker = start_broker(tmp_path, namesrv, "broker-k9")
        try:
            asyncio.run(_burst(namesrv.addr, broker.addr))
        finally:
            broker.popen.kill()  # SIGKILL at once: no shutdown step may write anything
            broker.popen.wait()
    finally:
        namesrv.stop()
    config = tmp_path / "broker-k9" / "config"
    topics = TopicConfigManager(config / "topics.json")
    topics.load()
    groups = SubscriptionGroupManager(config / "subscriptionGroup.json")
    groups.load()
    assert {f"Kill9Topic{i}" for i in range(BURST)} <= set(topics.table)
    assert {f"kill9-group-{i}" for i in range(BURST)} <= set(groups.table)

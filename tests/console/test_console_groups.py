"""The consumer group pages over a real cluster and a real consumer: lag, clients, queue owners,
reset by time, skip backlog, delete."""

from __future__ import annotations

import re

from aiohttp.test_utils import TestClient
from consolekit import post, wait_for

from rocketq.admin import cluster as cluster_ops
from rocketq.admin import messages
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.client.consuming import ConsumeStatus
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.settings import ConsumeFromWhere
from rocketq.console import keys
from rocketq.local.cluster import ClusterState
from rocketq.protocol.messagetypes import Message

Client = TestClient  # type: ignore[type-arg]
LAG = re.compile(r'<strong id="lag">(\d+)</strong>')


async def lag_on_page(client: Client, group: str) -> int:
    page = await (await client.get("/groups/view", params={"group": group})).text()
    found = LAG.search(page)
    assert found, page[:3000]
    return int(found.group(1))


async def fill(namesrv: str, topic: str, count: int) -> None:
    async with AdminClient(namesrv) as admin:
        await cluster_ops.create_topic(admin, TopicConfig(topic, 2, 2), cluster="DefaultCluster")
        for i in range(count):
            await messages.send(admin, Message(topic, f"m{i}".encode()))


async def test_group_lag_clients_reset_skip_delete(cluster: ClusterState, admin_console: Client) -> None:
    topic, group = "ConsoleGroupT", "console_group_g"
    await fill(cluster.namesrv, topic, 6)
    seen: list[bytes] = []

    async def listener(msgs, ctx) -> ConsumeStatus:  # type: ignore[no-untyped-def]
        seen.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, cluster.namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            persist_consumer_offset_interval=200)
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    await consumer.start()
    try:
        async def consumed_and_committed() -> bool:
            return len(seen) >= 6 and await lag_on_page(admin_console, group) == 0

        await wait_for(consumed_and_committed, "the consumer to take all 6 messages")
        page = await (await admin_console.get("/groups/view", params={"group": group})).text()
        assert consumer_client_id_shown(page) and f"<td>{topic}</td><td>*</td>" in page
        listing = await (await admin_console.get("/groups")).text()
        assert f"view?group={group}" in listing
    finally:
        await consumer.close()

    response = await post(admin_console, "/groups/reset", {"group": group, "topic": topic, "time": "0"},
                          from_page="/groups", allow_redirects=True)
    assert "Reset 2 queue(s)" in await response.text()
    assert await lag_on_page(admin_console, group) == 6

    response = await post(admin_console, "/groups/skip", {"group": group, "topic": topic}, from_page="/groups")
    assert response.status == 303
    assert await lag_on_page(admin_console, group) == 0

    response = await post(admin_console, "/groups/delete", {"group": group, "cluster": "DefaultCluster"},
                          from_page="/groups", allow_redirects=True)
    assert f"Group {group} deleted" in await response.text()
    actions = [(e.action.split(" to ")[0], e.outcome) for e in admin_console.app[keys.AUDIT].recent][-3:]
    assert actions == [("reset offset", "ok"), ("skip backlog", "ok"), ("delete group", "ok")]


def consumer_client_id_shown(page: str) -> bool:
    clients = re.search(r'<table id="clients">.*?<tbody><tr><td>([^<]+)</td>', page, re.S)
    owners = re.findall(r"<td class=\"num\">0</td><td>([^<]+)</td>", page)  # lag 0, then the owning client
    return bool(clients) and bool(owners) and all(o == clients.group(1) for o in owners)


async def test_bad_reset_time_is_a_400(admin_console: Client) -> None:
    response = await post(admin_console, "/groups/reset", {"group": "g1", "topic": "T1", "time": "yesterday"},
                          from_page="/groups")
    assert response.status == 400
    assert "time" in await response.text()


async def test_group_without_anything_shows_an_empty_page(admin_console: Client) -> None:
    page = await (await admin_console.get("/groups/view", params={"group": "console_nobody"})).text()
    assert "No client of this group is online" in page and "no committed offsets" in page

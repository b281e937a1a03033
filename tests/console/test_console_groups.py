"""The consumer group pages over a real cluster and a real consumer: lag, clients, queue owners,
reset by time, skip backlog, group config, delete."""

from __future__ import annotations

import re

from aiohttp.test_utils import TestClient
from consolekit import READER_NAME, READER_PASSWORD, login, post, wait_for

from rocketq.admin import cluster as cluster_ops
from rocketq.admin import messages
from rocketq.admin.adminbodies import GroupConfig, TopicConfig
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


CONFIG_FORM = {"cluster": "DefaultCluster", "retry_queues": "2", "retry_max": "3", "broker_id": "0", "slow_broker": "1",
               "broadcast": "on", "notify": "on"}  # consume_enable and from_min unticked: absent from the form


async def stored_config(namesrv: str, group: str) -> GroupConfig | None:
    async with AdminClient(namesrv) as admin:
        (config,) = (await cluster_ops.group_configs(admin, group, await cluster_ops.all_masters(admin))).values()
        return config


async def test_group_config_is_shown_and_updated_like_update_sub_group(cluster: ClusterState,
                                                                       admin_console: Client) -> None:
    group = "console_config_g"
    async with AdminClient(cluster.namesrv) as admin:
        await cluster_ops.create_group(admin, GroupConfig(group, retry_max_times=5), cluster="DefaultCluster")
    page = await (await admin_console.get("/groups/view", params={"group": group})).text()
    table = re.search(r'<table id="group-config">.*?</table>', page, re.S)
    assert table is not None and '<td class="num">5</td>' in table.group(0)
    assert 'name="retry_max" type="number" min="-1" max="64" value="5"' in page, "the form starts from the broker's"

    response = await post(admin_console, "/groups/config", {"group": group, **CONFIG_FORM}, from_page="/groups",
                          allow_redirects=True)
    assert f"Group config of {group} written to 1 broker(s)" in await response.text()
    assert await stored_config(cluster.namesrv, group) == GroupConfig(
        group, consume_enable=False, consume_from_min_enable=False, consume_broadcast_enable=True,
        retry_queue_nums=2, retry_max_times=3, broker_id=0, which_broker_when_consume_slowly=1,
        notify_consumer_ids_changed_enable=True)
    last = admin_console.app[keys.AUDIT].recent[-1]
    assert (last.action, last.target, last.outcome) == ("update group config", group, "ok")


async def test_group_config_input_is_checked_and_named(admin_console: Client) -> None:
    for field, value in [("retry_max", "65"), ("retry_max", "-2"), ("retry_queues", "many"), ("broker_id", "-1")]:
        response = await post(admin_console, "/groups/config", {"group": "console_config_bad", **CONFIG_FORM,
                                                                 field: value}, from_page="/groups")
        assert response.status == 400, (field, value)
        assert field in await response.text()
    response = await post(admin_console, "/groups/config", {"group": "console_config_bad", **CONFIG_FORM,
                                                             "cluster": "NoSuchCluster"}, from_page="/groups")
    assert response.status == 400 and "NoSuchCluster" in await response.text()


async def test_group_config_refused_to_read_only_and_without_csrf(cluster: ClusterState, console: Client) -> None:
    group = "console_config_ro"
    async with AdminClient(cluster.namesrv) as admin:
        await cluster_ops.create_group(admin, GroupConfig(group), cluster="DefaultCluster")
    before = await stored_config(cluster.namesrv, group)
    await login(console, READER_NAME, READER_PASSWORD)
    page = await (await console.get("/groups/view", params={"group": group})).text()
    assert 'id="group-config"' in page and "group-config-form" not in page, "read-only sees, cannot change"
    response = await post(console, "/groups/config", {"group": group, **CONFIG_FORM}, from_page="/groups")
    assert response.status == 403
    response = await console.post("/groups/config", data={"group": group, **CONFIG_FORM}, allow_redirects=False)
    assert response.status == 403 and "CSRF" in await response.text()
    assert await stored_config(cluster.namesrv, group) == before

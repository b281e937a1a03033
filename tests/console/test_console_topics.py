"""The topic pages over a real cluster: list and filters, create/update, view, send, delete."""

from __future__ import annotations

import orjson
from aiohttp.test_utils import TestClient
from consolekit import ADMIN_NAME, READER_NAME, READER_PASSWORD, client_for, login, post

from rocketq.admin import cluster as cluster_ops
from rocketq.console import keys
from rocketq.console.pages.topics import kind_of
from rocketq.local.cluster import ClusterState

Client = TestClient  # type: ignore[type-arg]


def test_kind_of_topics() -> None:
    assert kind_of("%RETRY%g1") == "retry"
    assert kind_of("%DLQ%g1") == "dlq"
    assert kind_of("TBW102") == "system" and kind_of("rmq_sys_x") == "system"
    assert kind_of("Orders") == "normal"


async def create(client: Client, topic: str, **fields: str) -> None:
    response = await post(client, "/topics", {"topic": topic, "cluster": "DefaultCluster", "read_queues": "4",
                                              "write_queues": "4", "perm": "6", **fields}, from_page="/topics")
    assert response.status == 303, await response.text()
    assert response.headers["Location"] == f"/topics/view?topic={topic}"


async def test_create_view_send_delete(admin_console: Client) -> None:
    await create(admin_console, "ConsoleT1")
    page = await (await admin_console.get("/topics/view", params={"topic": "ConsoleT1"})).text()
    assert "written to 1 broker(s)" in page  # the flash after the redirect
    assert page.count("<td>broker-a</td>") == 1 + 4  # one route row, four queue rows
    listing = await (await admin_console.get("/topics")).text()
    assert "ConsoleT1" in listing and "written to" not in listing  # a flash is shown once

    response = await post(admin_console, "/topics/send", {"topic": "ConsoleT1", "body": "hello", "keys": "k1 k2",
                                                          "tag": "T"}, from_page="/topics", allow_redirects=True)
    text = await response.text()
    assert "Sent " in text and "SEND_OK" in text
    assert "1 message(s) held" in text

    response = await post(admin_console, "/topics/delete", {"topic": "ConsoleT1"}, from_page="/topics",
                          allow_redirects=True)
    assert "deleted from DefaultCluster" in await response.text()
    assert (await admin_console.get("/topics/view", params={"topic": "ConsoleT1"})).status == 404

    audit = admin_console.app[keys.CONFIG].audit_file
    assert audit is not None
    entries = [orjson.loads(line) for line in audit.read_text().splitlines()]
    assert [(e["action"], e["target"], e["outcome"]) for e in entries if e["action"] != "login"] == [
        ("create/update topic", "ConsoleT1", "ok"), ("send test message", "ConsoleT1", "ok"),
        ("delete topic", "ConsoleT1", "ok")]
    assert all(e["user"] == ADMIN_NAME for e in entries)


async def test_update_changes_queue_counts(admin_console: Client) -> None:
    await create(admin_console, "ConsoleT2")
    await create(admin_console, "ConsoleT2", write_queues="2", read_queues="2")
    page = await (await admin_console.get("/topics/view", params={"topic": "ConsoleT2"})).text()
    assert page.count("<td>broker-a</td>") == 1 + 2


async def test_filters(admin_console: Client) -> None:
    await create(admin_console, "ConsoleFilterMe")
    mine, tbw = "view?topic=ConsoleFilterMe", "view?topic=TBW102"
    system = await (await admin_console.get("/topics", params={"kind": "system"})).text()
    assert tbw in system and mine not in system
    found = await (await admin_console.get("/topics", params={"kind": "all", "q": "filterme"})).text()
    assert mine in found and tbw not in found


async def test_invalid_input_is_a_400_page(admin_console: Client) -> None:
    for fields, words in [({"topic": "Bad", "read_queues": "many"}, "read_queues"),
                          ({"topic": "Bad", "read_queues": "0"}, "outside"),
                          ({"topic": "bad topic!"}, "topic"),
                          ({"topic": "TBW102"}, "system topic")]:
        response = await post(admin_console, "/topics", {"cluster": "DefaultCluster", **fields}, from_page="/topics")
        assert response.status == 400, fields
        text = await response.text()
        assert words in text and "Traceback" not in text
    failed = [e for e in admin_console.app[keys.AUDIT].recent if e.action != "login"]
    assert failed == []  # refused before anything was attempted: nothing changed, nothing to audit


async def test_unknown_cluster_is_audited_as_failed(admin_console: Client) -> None:
    response = await post(admin_console, "/topics", {"topic": "ConsoleT3", "cluster": "NoSuchCluster"},
                          from_page="/topics")
    assert response.status == 400
    assert "NoSuchCluster" in await response.text()
    last = admin_console.app[keys.AUDIT].recent[-1]
    assert (last.action, last.outcome) == ("create/update topic", "failed")


async def test_unknown_topic_is_a_404_page(admin_console: Client) -> None:
    response = await admin_console.get("/topics/view", params={"topic": "NoSuchTopicHere"})
    assert response.status == 404
    assert "TOPIC_NOT_EXIST" in await response.text()


async def test_read_only_sees_no_change_forms(reader_console: Client) -> None:
    text = await (await reader_console.get("/topics")).text()
    assert "create-topic" not in text


async def order_entry(client: Client, topic: str) -> str | None:
    return await cluster_ops.topic_order_conf(client.app[keys.ADMIN], topic)


async def test_an_ordered_topic_gets_its_order_conf_and_unticking_removes_it(admin_console: Client) -> None:
    await create(admin_console, "ConsoleOrdered", order="on")
    assert await order_entry(admin_console, "ConsoleOrdered") == "broker-a:4", "as updateTopic -o true writes it"
    page = await (await admin_console.get("/topics/view", params={"topic": "ConsoleOrdered"})).text()
    assert '<code id="order-conf">broker-a:4</code>' in page
    assert 'id="update-order" checked' in page, "the update form keeps the topic ordered unless unticked"
    last = admin_console.app[keys.AUDIT].recent[-1]
    assert (last.action, last.target, last.outcome) == ("create/update topic (ordered)", "ConsoleOrdered", "ok")

    await create(admin_console, "ConsoleOrdered", write_queues="2", read_queues="2", order="on")
    assert await order_entry(admin_console, "ConsoleOrdered") == "broker-a:2", "follows the write queues"
    await create(admin_console, "ConsoleOrdered")
    assert await order_entry(admin_console, "ConsoleOrdered") is None
    page = await (await admin_console.get("/topics/view", params={"topic": "ConsoleOrdered"})).text()
    assert "order-conf" not in page and 'id="update-order">' in page


async def test_read_only_and_csrf_less_order_changes_are_refused(admin_console: Client, cluster: ClusterState) -> None:
    fields = {"topic": "ConsoleOrderedRO", "cluster": "DefaultCluster", "order": "on"}
    response = await admin_console.post("/topics", data=fields, allow_redirects=False)
    assert response.status == 403 and "CSRF" in await response.text()
    reader = await client_for(cluster.namesrv)
    try:
        await login(reader, READER_NAME, READER_PASSWORD)
        response = await post(reader, "/topics", fields, from_page="/topics")
        assert response.status == 403 and "read-only" in await response.text()
    finally:
        await reader.close()
    assert await order_entry(admin_console, "ConsoleOrderedRO") is None
    assert (await admin_console.get("/topics/view", params={"topic": "ConsoleOrderedRO"})).status == 404

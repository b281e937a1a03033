"""The message pages over a real cluster: by time (paged), by key, by id; a message's views;
resend to a group; a real consumer's dead letters listed, exported and resent."""

from __future__ import annotations

import html
import json
import re

import orjson
from aiohttp.test_utils import TestClient
from consolekit import post, wait_for
from hypothesis import given
from hypothesis import strategies as st

from rocketq.admin import cluster as cluster_ops
from rocketq.admin import messages
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.client.consuming import ConsumeStatus
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.settings import ConsumeFromWhere
from rocketq.console import bodies, keys, pages
from rocketq.local.cluster import ClusterState
from rocketq.protocol.messagetypes import Message

Client = TestClient  # type: ignore[type-arg]
MSG_IDS = re.compile(r'view\?topic=[^&"]+&(?:amp;)?id=([0-9A-F]+)')


@given(st.binary(max_size=300))
def test_body_views_never_fail_and_hex_round_trips(body: bytes) -> None:
    view = bodies.views(body)
    hex_bytes = "".join(line[10:10 + 47] for line in view.hex.splitlines()).replace(" ", "")
    assert bytes.fromhex(hex_bytes) == body
    if view.json is not None:
        assert json.loads(view.json) == json.loads(body)


def test_body_views_cut_a_huge_body() -> None:
    view = bodies.views(b"x" * (bodies.MAX_SHOWN + 10))
    assert view.truncated and view.size == bodies.MAX_SHOWN + 10 and len(view.text) == bodies.MAX_SHOWN


async def send_some(namesrv: str, topic: str, count: int) -> list[str]:
    async with AdminClient(namesrv) as admin:
        await cluster_ops.create_topic(admin, TopicConfig(topic, 2, 2), cluster="DefaultCluster")
        ids = []
        for i in range(count):
            msg = Message(topic, orjson.dumps({"n": i, "name": "<b>rocket</b>"}))
            msg.keys = [f"key-{i}"]
            ids.append((await messages.send(admin, msg)).msg_id)
        return ids


async def test_find_by_key_id_and_time_then_view_and_resend(cluster: ClusterState, admin_console: Client) -> None:
    topic = "ConsoleMsgT"
    ids = await send_some(cluster.namesrv, topic, 3)

    by_key = await (await admin_console.get("/messages", params={"mode": "key", "topic": topic,
                                                                 "key": "key-1"})).text()
    assert MSG_IDS.findall(by_key) == [ids[1]]
    by_id = await (await admin_console.get("/messages", params={"mode": "id", "topic": topic, "id": ids[2]})).text()
    assert MSG_IDS.findall(by_id) == [ids[2]]
    by_time = await (await admin_console.get("/messages", params={"topic": topic, "begin": "0",
                                                                  "end": "now"})).text()
    assert sorted(MSG_IDS.findall(by_time)) == sorted(ids)

    page = await (await admin_console.get("/messages/view", params={"topic": topic, "id": ids[0]})).text()
    assert "&#34;name&#34;: &#34;&lt;b&gt;rocket&lt;/b&gt;&#34;" in page  # pretty JSON, escaped
    assert "<b>rocket</b>" not in page
    assert "KEYS" in page and "key-0" in page and "CommitLog offset" in page

    resend = {"topic": topic, "id": ids[0], "group": "console_rs"}
    response = await post(admin_console, "/messages/resend", resend, from_page="/messages")
    assert response.status == 400
    assert "no consumer of it ever ran" in await response.text()
    async with AdminClient(cluster.namesrv) as admin:  # what the group's first consumer heartbeat does
        await cluster_ops.create_topic(admin, TopicConfig("%RETRY%console_rs", 1, 1), cluster="DefaultCluster")
    response = await post(admin_console, "/messages/resend", resend, from_page="/messages", allow_redirects=True)
    assert "resent to console_rs (SEND_OK)" in await response.text()
    retry = await (await admin_console.get("/topics/view", params={"topic": "%RETRY%console_rs"})).text()
    assert "1 message(s) held" in retry
    assert admin_console.app[keys.AUDIT].recent[-1].action == "resend message to console_rs"


NEXT_PAGE = re.compile(r'<a href="\?([^"]+)" id="next-page">')


async def time_pages(admin_console: Client, namesrv: str, topic: str,
                     between_pages: int = 0) -> tuple[list[str], int]:
    """Every message id shown by following "next page" from the first page, and how many pages."""
    query: str | None = f"topic={topic}&begin=0&end=now"
    seen: list[str] = []
    pages_read = 0
    while query is not None:
        text = await (await admin_console.get(f"/messages?{html.unescape(query)}")).text()
        pages_read += 1
        seen += MSG_IDS.findall(text)
        match = NEXT_PAGE.search(text)
        query = match.group(1) if match else None
        if between_pages:  # the topic keeps taking messages while someone pages through it
            await send_some(namesrv, topic, between_pages)
    return seen, pages_read


async def test_time_pages(cluster: ClusterState, admin_console: Client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(pages.messages, "PAGE_SIZE", 2)
    ids = await send_some(cluster.namesrv, "ConsoleMsgPaged", 5)
    seen, pages_read = await time_pages(admin_console, cluster.namesrv, "ConsoleMsgPaged")
    assert sorted(seen) == sorted(ids) and pages_read == 3


async def test_time_pages_hold_still_while_the_topic_grows(cluster: ClusterState, admin_console: Client,
                                                           monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(pages.messages, "PAGE_SIZE", 2)
    ids = await send_some(cluster.namesrv, "ConsoleMsgGrowing", 5)
    seen, _ = await time_pages(admin_console, cluster.namesrv, "ConsoleMsgGrowing", between_pages=3)
    assert sorted(seen) == sorted(ids)  # the end was pinned by the first page: later sends stay out


async def test_a_bad_page_cursor_is_answered_on_the_page(admin_console: Client) -> None:
    for after in ("broker-a:x:1", "nobroker", ":1:2", "broker-a:-1:2"):
        response = await admin_console.get("/messages", params={"topic": "ConsoleMsgT", "begin": "0",
                                                                "end": "now", "after": after})
        assert response.status == 400, after
        assert "after:" in await response.text()


async def test_bad_searches(admin_console: Client) -> None:
    response = await admin_console.get("/messages", params={"topic": "ConsoleMsgT", "begin": "now", "end": "0"})
    assert response.status == 400
    response = await admin_console.get("/messages/view", params={"topic": "ConsoleMsgT", "id": "00FF"})
    assert response.status == 404
    response = await admin_console.get("/messages", params={"topic": "NoSuchTopicM", "begin": "0", "end": "now"})
    assert response.status == 404


async def test_dead_letters_list_export_resend(cluster: ClusterState, admin_console: Client) -> None:
    topic, group = "ConsoleDlqT", "console_dlq_g"
    await send_some(cluster.namesrv, topic, 2)
    consumer = PushConsumer(group, cluster.namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            max_reconsume_times=0)
    consumer.subscribe(topic)
    consumer.register_listener(lambda msgs, ctx: ConsumeStatus.RECONSUME_LATER)
    await consumer.start()
    try:
        async def both_dead() -> bool:
            response = await admin_console.get("/messages/dlq", params={"group": group})
            return (await response.text()).count('class="dlq-resend"') == 2

        await wait_for(both_dead, "two dead letters")
    finally:
        await consumer.close()
    exported = await (await admin_console.get("/messages/dlq/export", params={"group": group})).json()
    assert sorted(d["properties"]["KEYS"] for d in exported) == ["key-0", "key-1"]
    one = exported[0]["msgId"]
    response = await post(admin_console, "/messages/dlq/resend", {"group": group, "id": one}, from_page="/messages",
                          allow_redirects=True)
    assert "Resent 1 dead letter(s)" in await response.text()
    response = await post(admin_console, "/messages/dlq/resend", {"group": group}, from_page="/messages",
                          allow_redirects=True)
    assert "Resent 2 dead letter(s)" in await response.text()
    outcomes = [(e.action, e.target, e.outcome) for e in admin_console.app[keys.AUDIT].recent][-2:]
    assert outcomes == [("resend dead letters", f"{group} {one}", "ok"),
                        ("resend dead letters", f"{group} all", "ok")]


async def test_group_without_dlq(admin_console: Client) -> None:
    text = await (await admin_console.get("/messages/dlq", params={"group": "console_never_failed"})).text()
    assert "has no dead-letter topic" in text

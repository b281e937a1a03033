"""The producers page with a real producer, and the ACL page against brokers without ACL."""

from __future__ import annotations

from aiohttp.test_utils import TestClient
from consolekit import post

from rocketq.admin import cluster as cluster_ops
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.client.producer import Producer
from rocketq.console import keys
from rocketq.local.cluster import ClusterState
from rocketq.protocol.messagetypes import Message

Client = TestClient  # type: ignore[type-arg]


async def test_producer_connections(cluster: ClusterState, admin_console: Client) -> None:
    async with AdminClient(cluster.namesrv) as admin:
        await cluster_ops.create_topic(admin, TopicConfig("ConsoleProdT", 2, 2), cluster="DefaultCluster")
    producer = Producer("console_pg", cluster.namesrv)
    await producer.start()
    try:
        await producer.send(Message("ConsoleProdT", b"x"))
        text = await (await admin_console.get("/producers", params={"group": "console_pg",
                                                                    "topic": "ConsoleProdT"})).text()
        assert "PYTHON" in text and "No producer" not in text
    finally:
        await producer.close()
    response = await admin_console.get("/producers", params={"group": "console_nobody", "topic": "ConsoleProdT"})
    assert response.status == 502  # the broker's own answer for a group it never saw
    assert "producer group[console_nobody] not exist" in await response.text()


async def test_acl_page_and_a_refused_change(admin_console: Client) -> None:
    text = await (await admin_console.get("/acl")).text()
    assert "ACL off" in text
    response = await post(admin_console, "/acl", {"cluster": "DefaultCluster", "access_key": "RocketQ1",
                                                  "secret_key": "12345678", "default_topic_perm": "PUB"},
                          from_page="/acl")
    assert response.status == 502  # the broker refuses: its ACL is off
    last = admin_console.app[keys.AUDIT].recent[-1]
    assert (last.action, last.target, last.outcome) == ("update ACL account", "RocketQ1", "failed")
    response = await post(admin_console, "/acl", {"cluster": "DefaultCluster", "access_key": "RocketQ1",
                                                  "default_topic_perm": "ALL"}, from_page="/acl")
    assert response.status == 400

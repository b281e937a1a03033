"""The cluster page and a broker's page, over a real one-broker cluster."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from rocketq.local.cluster import ClusterState

Client = TestClient  # type: ignore[type-arg]


def broker_addr(cluster: ClusterState) -> str:
    return next(p.address for p in cluster.processes if p.name == "broker-a")


async def test_cluster_page_lists_the_broker(cluster: ClusterState, admin_console: Client) -> None:
    response = await admin_console.get("/cluster")
    assert response.status == 200
    text = await response.text()
    assert cluster.namesrv in text
    assert "broker-a" in text and broker_addr(cluster) in text
    assert "ASYNC_MASTER" in text and "rocketq" in text and "RW" in text


async def test_broker_page_shows_runtime_and_config(cluster: ClusterState, admin_console: Client) -> None:
    response = await admin_console.get("/cluster/broker", params={"addr": broker_addr(cluster)})
    assert response.status == 200
    text = await response.text()
    assert "commitLogMaxOffset" in text  # runtime info
    assert "brokerName" in text and "flushDiskType" in text  # config


async def test_broker_page_refuses_an_address_nobody_registered(admin_console: Client) -> None:
    response = await admin_console.get("/cluster/broker", params={"addr": "10.0.0.1:10911"})
    assert response.status == 404
    assert "no broker at" in await response.text()

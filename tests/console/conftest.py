"""Fixtures for the console tests: one real local cluster for the whole run, a console per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient
from consolekit import ADMIN_NAME, ADMIN_PASSWORD, READER_NAME, READER_PASSWORD, client_for, login

from rocketq.local.cluster import ClusterLayout, ClusterState, LocalCluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterState]:
    local = LocalCluster(ClusterLayout.with_free_ports(tmp_path_factory.mktemp("console-cluster"), broker_groups=1))
    state = local.up()
    try:
        yield state
    finally:
        local.down()


@pytest.fixture
async def console(cluster: ClusterState, tmp_path: Path) -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    client = await client_for(cluster.namesrv, tmp_path / "audit.jsonl")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def admin_console(console: TestClient) -> TestClient:  # type: ignore[type-arg]
    await login(console, ADMIN_NAME, ADMIN_PASSWORD)
    return console


@pytest.fixture
async def reader_console(console: TestClient) -> TestClient:  # type: ignore[type-arg]
    await login(console, READER_NAME, READER_PASSWORD)
    return console

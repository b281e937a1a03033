"""Fixtures for the SDK's unit tests: an in-process fake cluster (see client_fakes)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from client_fakes import FakeCluster


@pytest.fixture
async def cluster() -> AsyncIterator[FakeCluster]:
    c = FakeCluster("broker-a", "broker-b")
    await c.start()
    try:
        yield c
    finally:
        await c.close()

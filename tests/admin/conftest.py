"""Fixtures for the admin tests: a real cluster of subprocesses (see ``admin_processes``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from admin_processes import Cluster, Process, start_broker, start_namesrv


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One name server and two broker groups (broker-a, broker-b) in DefaultCluster, for a module."""
    workdir = tmp_path_factory.mktemp("admin-cluster")
    namesrv = start_namesrv(workdir)
    brokers: dict[str, Process] = {}
    try:
        for name in ("broker-a", "broker-b"):
            brokers[name] = start_broker(workdir, namesrv, name)
        yield Cluster(namesrv, brokers)
    finally:
        for proc in brokers.values():
            proc.stop()
        namesrv.stop()

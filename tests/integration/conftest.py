"""Real processes for integration tests: name servers and brokers on 127.0.0.1, free ports, tmp dirs.

Every fixture stops what it started, by PID, even when the test fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clusterprocs import Processes, running

from rocketq.local.cluster import ClusterLayout, ClusterState, LocalCluster


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    with running(tmp_path) as procs:
        yield procs


@pytest.fixture
def local_cluster(tmp_path: Path) -> Iterator[ClusterState]:
    """One name server and two broker groups, as `rocketq local up` starts them."""
    cluster = LocalCluster(
        ClusterLayout.with_free_ports(
            tmp_path / "cluster",
            extra_broker_config=(
                ("registerNameServerPeriod", "1000"),
                ("mappedFileSizeCommitLog", str(64 * 1024 * 1024)),
            ),
        )
    )
    state = cluster.up()
    try:
        yield state
    finally:
        cluster.down()

"""Shared fixtures of the Spark tests: ONE local SparkSession and ONE real cluster with a workload.

Both are session-scoped because each costs seconds to start (the JVM; three processes and a
traced workload, see sparkcluster.py). Test modules import names from ``sparkcluster``, never
from ``conftest`` (another directory's conftest may hold that module name).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")

from sparkcluster import Workload, run_workload  # noqa: E402

from rocketq.local.cluster import ClusterLayout, ClusterState, LocalCluster  # noqa: E402


@pytest.fixture(scope="session")
def rocketq_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterState]:
    base = tmp_path_factory.mktemp("spark-cluster")
    cluster = LocalCluster(ClusterLayout.with_free_ports(base, extra_broker_config=(
        ("registerNameServerPeriod", "1000"), ("mappedFileSizeCommitLog", str(64 * 1024 * 1024)),
        ("traceTopicEnable", "true"))))
    state = cluster.up()
    try:
        yield state
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def workload(rocketq_cluster: ClusterState) -> Workload:
    return run_workload(rocketq_cluster.namesrv)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17 (java on PATH or JAVA_HOME)")
    from rocketq_spark.session import spark_session

    session = spark_session("rocketq-tests", master="local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()

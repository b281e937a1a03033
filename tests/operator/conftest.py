"""Shared setup for the operator tests: make tests/k8s's CRD checker and tests/admin's process
launcher (real name server and broker subprocesses) importable, and the ``env`` fixture (a
running operator against the kmock emulator)."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import AsyncIterator

import kmock
import pytest

for shared in ("k8s", "admin"):
    path = pathlib.Path(__file__).resolve().parents[1] / shared
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from operator_harness import ApiServer, OperatorEnv, declare_spark_operator, fast_config, quiet_logs  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "operator_config(**overrides): OperatorConfig fields for the operator the env fixture runs")
    config.addinivalue_line(
        "markers", "without_admission: the emulated API server skips the CRDs' schema and CEL checks, as one "
                   "without CEL would (tests of the operator's own checks)")
    config.addinivalue_line(
        "markers",
        "with_spark_operator: the emulated API server has spark-operator's ScheduledSparkApplication resource")


@pytest.fixture
async def env(request: pytest.FixtureRequest) -> AsyncIterator[OperatorEnv]:
    """A running operator; ``@pytest.mark.operator_config(...)`` overrides its settings.

    Failover waits 10 s by default here, so a pod restarted by a roll on a busy machine is
    never mistaken for a lost master; failover tests ask for a short grace period."""
    quiet_logs()
    marker = request.node.get_closest_marker("operator_config")
    admission = request.node.get_closest_marker("without_admission") is None
    async with ApiServer(admission=admission) as server, kmock.Server(server):
        operator = OperatorEnv(server, fast_config(**(marker.kwargs if marker else {})))
        await operator.start()
        if request.node.get_closest_marker("with_spark_operator") is not None:
            declare_spark_operator(server)
        try:
            yield operator
        finally:
            await operator.close()

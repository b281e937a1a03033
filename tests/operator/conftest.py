"""Shared setup for the operator tests: make tests/k8s's CRD checker and tests/admin's process
launcher (real name server and broker subprocesses) importable."""

from __future__ import annotations

import pathlib
import sys

import pytest

for shared in ("k8s", "admin"):
    path = pathlib.Path(__file__).resolve().parents[1] / shared
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "operator_config(**overrides): OperatorConfig fields for the operator the env fixture runs")
    config.addinivalue_line(
        "markers", "without_admission: the emulated API server skips the CRDs' schema and CEL checks, as one "
                   "without CEL would (tests of the operator's own checks)")

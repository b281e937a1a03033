"""Shared setup for the operator tests: make tests/k8s's CRD checker importable."""

from __future__ import annotations

import pathlib
import sys

K8S_TESTS = pathlib.Path(__file__).resolve().parents[1] / "k8s"
if str(K8S_TESTS) not in sys.path:
    sys.path.insert(0, str(K8S_TESTS))

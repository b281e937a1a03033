"""HA tests start real name servers and brokers: tests/integration's process launcher is shared."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator

import pytest

_SHARED = pathlib.Path(__file__).resolve().parents[1] / "integration"
if str(_SHARED) not in sys.path:
    sys.path.insert(0, str(_SHARED))

from clusterprocs import Processes, running  # noqa: E402 - importable once the path above is set


@pytest.fixture
def procs(tmp_path: pathlib.Path) -> Iterator[Processes]:
    with running(tmp_path) as started:
        yield started

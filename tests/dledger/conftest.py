"""DLedger group tests start real name servers and brokers: the process launchers of
tests/integration and tests/ha are shared."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator

import pytest

_TESTS = pathlib.Path(__file__).resolve().parents[1]
for _shared in (_TESTS / "integration", _TESTS / "ha"):
    if str(_shared) not in sys.path:
        sys.path.insert(0, str(_shared))

from clusterprocs import Processes, running  # noqa: E402 - importable once the path above is set


@pytest.fixture
def procs(tmp_path: pathlib.Path) -> Iterator[Processes]:
    with running(tmp_path) as started:
        yield started

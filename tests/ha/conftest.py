"""HA tests start real name servers and brokers: tests/integration's process launcher is shared."""

from __future__ import annotations

import pathlib
import sys

_SHARED = pathlib.Path(__file__).resolve().parents[1] / "integration"
if str(_SHARED) not in sys.path:
    sys.path.insert(0, str(_SHARED))

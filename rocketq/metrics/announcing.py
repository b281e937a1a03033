"""The log line in which a process says where its /metrics and /health listener is.

``metricsPort`` defaults to 0 (any free port), so the port a process got is known only to the
process; it logs it once at start-up in a fixed form, and ``rocketq local`` reads that form
back from the process's log to show it in ``local up`` and ``local status``. Kept apart from
the listener itself so that reading a log does not import the HTTP server.
"""

from __future__ import annotations

import re
from typing import Final

_PHRASE: Final = "/metrics and /health on port "
_PORT: Final = re.compile(re.escape(_PHRASE) + r"(\d+)")


def line(process: str, port: int) -> str:
    return f"{process}: {_PHRASE}{port}"


def find_port(log_text: str) -> int | None:
    """The port of the last announcement in a process's output, or None (off, or not bound)."""
    found = _PORT.findall(log_text)
    return int(found[-1]) if found else None

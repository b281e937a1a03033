"""Free TCP ports for processes started on this machine (local clusters, tests, bench drivers).

``free_port`` asks the kernel for an ephemeral port by binding port 0 and closes the socket at
once, so the port is free when it returns but not reserved: another process may take it before
the caller binds it. That race is acceptable for starting local processes (a taken port fails
start-up loudly) and is why callers pick ports as late as they can.
"""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that nothing was bound to a moment ago."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])

"""Free TCP ports for processes started on this machine (local clusters, tests, bench drivers).

``free_port`` asks the kernel for an ephemeral port by binding port 0 and closes the socket at
once, so the port is free when it returns but not reserved: another process may take it before
the caller binds it. That race is acceptable for starting local processes (a taken port fails
start-up loudly) and is why callers pick ports as late as they can.

The kernel may hand out the same ephemeral port twice when nothing holds it in between (a
broker's client port and its HA port, asked for one after the other, then collide), so a port
given out once is not given out again by this process for a while.
"""

from __future__ import annotations

import collections
import socket
from typing import Final

RECENT_PORTS_KEPT: Final = 4096
"""How many handed-out ports this process remembers and will not hand out again."""
MAX_TRIES: Final = 64

_recent: collections.deque[int] = collections.deque(maxlen=RECENT_PORTS_KEPT)


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that nothing was bound to a moment ago, and that this process has not
    handed out recently."""
    port = 0
    for _ in range(MAX_TRIES):
        with socket.socket() as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port not in _recent:
            break
    _recent.append(port)
    return port

"""PULL_MESSAGE's ``sysFlag`` bits (RocketMQ's ``PullSysFlag``): what else a pull request carries.

* COMMIT_OFFSET: ``commitOffset`` holds the consumer's current offset, which a master stores
  as the group's offset (the pull doubles as an offset commit).
* SUSPEND: the broker may hold the request up to ``suspendTimeoutMillis`` until a message
  arrives (long polling) instead of answering PULL_NOT_FOUND at once.
* SUBSCRIPTION: the subscription expression travels in the request, so the broker filters
  without waiting for the consumer's heartbeat (admin pulls and pull consumers rely on it).
* CLASS_FILTER: RocketMQ's retired filter-server mode; read, never set.

Plain ``int`` constants, not an ``IntFlag``: the broker tests these bits on every pull, and a
module constant costs one global lookup.
"""

from __future__ import annotations

from typing import Final

COMMIT_OFFSET: Final = 0x1
SUSPEND: Final = 0x2
SUBSCRIPTION: Final = 0x4
CLASS_FILTER: Final = 0x8


def build(*, commit_offset: bool, suspend: bool, subscription: bool) -> int:
    """The sysFlag of a pull request with the given parts."""
    return ((COMMIT_OFFSET if commit_offset else 0) | (SUSPEND if suspend else 0)
            | (SUBSCRIPTION if subscription else 0))

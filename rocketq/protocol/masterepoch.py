"""``rocketqMasterEpoch``: rocketq's extension of REGISTER_BROKER that fences stale masters.

A rocketq master puts its current HA epoch (``rocketq.ha.epochs``: every promotion starts epoch
number + 1) in its REGISTER_BROKER ``extFields`` under this name. A rocketq name server keeps the
highest one per broker group and will not hand brokerId 0 to a master with a lower epoch from
another address while the group's current master holds it; its (SUCCESS) answer to such a
master carries the same field, the group's master epoch, next to ``masterAddr`` naming the
current master. The field is present in an answer only then: it means "you are a stale
master". docs/compatibility.md and docs/ha.md ("Fencing") tell the whole story.

Compatibility is by omission: a Java name server ignores an ext field it has no header field
for, and a Java broker never sends it, so a rocketq name server treats that broker as before
(last registration wins). Reading is therefore lenient both ways: an absent, empty or malformed
value (not Java ``long`` digits, negative) counts as absent, never as a refused registration,
because failing a whole registration over an extension would drop the broker from every route.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Final

from rocketq.protocol.sharedbodies import JAVA_INTEGER

EXT_FIELD: Final = "rocketqMasterEpoch"
MAX_EPOCH: Final = (1 << 63) - 1
"""A Java long: the largest value a peer may send (epochs are counted in promotions)."""


def read(ext: Mapping[str, str] | None) -> int | None:
    """The epoch in ``ext``, or None when absent or not a non-negative long."""
    raw = None if ext is None else ext.get(EXT_FIELD)
    if not raw or len(raw) > 20 or not JAVA_INTEGER.fullmatch(raw):
        return None
    value = int(raw)
    return value if 0 <= value <= MAX_EPOCH else None


def write(ext: MutableMapping[str, str], epoch: int | None) -> None:
    """Add the field to ``ext`` (nothing when ``epoch`` is None: a slave or a non-rocketq peer)."""
    if epoch is not None:
        ext[EXT_FIELD] = str(epoch)

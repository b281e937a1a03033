"""RocketMQ's ACL permission bits and the rule that compares what a request needs with what an
account owns (``org.apache.rocketmq.acl.common.Permission``).

DENY, ANY, PUB and SUB are bits so that ``PUB|SUB`` is one value. An owned DENY refuses
everything; a needed ANY is satisfied by PUB or SUB; otherwise the two must share a bit.
"""

from __future__ import annotations

from typing import Final

DENY: Final = 1
ANY: Final = 2
PUB: Final = 4
SUB: Final = 8

_BY_NAME: Final = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}


def parse(text: object) -> int | None:
    """The bits of ``PUB``, ``SUB``, ``PUB|SUB``, ``SUB|PUB`` or ``DENY`` (any case); None otherwise."""
    if not isinstance(text, str):
        return None
    return _BY_NAME.get(text.strip().upper())


def allows(needed: int, owned: int) -> bool:
    if owned & DENY:
        return False
    if needed == ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def name(perm: int) -> str:
    for text, bits in _BY_NAME.items():
        if bits == perm:
            return text
    return str(perm)

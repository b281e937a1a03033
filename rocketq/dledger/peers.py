"""A DLedger group's members: ``dLegerPeers`` parsed and checked.

``dLegerPeers`` lists every member of the group as ``id-host:port`` joined by ``;``, e.g.
``n0-10.0.0.1:40911;n1-10.0.0.2:40911;n2-10.0.0.3:40911``. The id is the text before the
*first* ``-`` (DLedger splits the same way), so host names may contain dashes, as pod DNS names
do (``n1-rocketq-broker-1.rocketq-broker:40911``). The address is the member's Raft peer port:
where the other members reach it, and where it listens.

All members must carry the same list; the order does not matter. A member id is a short name
of letters, digits and ``_`` (DLedger's are n0, n1, ...); the broker derives a follower's
brokerId from its digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from rocketq.protocol import addresses

MAX_MEMBERS: Final = 9
"""More members only slow every commit down; DLedger groups run 3 or 5."""
MAX_ID_LENGTH: Final = 64
ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_]+")


class PeersError(ValueError):
    """``dLegerPeers`` (or an id that must be in it) cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Peer:
    member_id: str
    host: str
    port: int

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def check_id(member_id: str) -> None:
    if not ID_PATTERN.fullmatch(member_id) or len(member_id) > MAX_ID_LENGTH:
        raise PeersError(f"member id {member_id!r}: expected 1..{MAX_ID_LENGTH} letters, digits or _")


def parse(text: str) -> dict[str, Peer]:
    """``id-host:port;...`` as {id: Peer} in the order written; PeersError on anything else."""
    peers: dict[str, Peer] = {}
    seen: set[tuple[str, int]] = set()
    for item in addresses.split_list(text):
        member_id, sep, addr = item.partition("-")
        if not sep:
            raise PeersError(f"{item!r}: expected id-host:port (e.g. n0-127.0.0.1:40911)")
        check_id(member_id)
        try:
            host, port = addresses.parse_host_port(addr)
        except ValueError as exc:
            raise PeersError(f"{item!r}: {exc}") from None
        if member_id in peers:
            raise PeersError(f"member id {member_id!r} is listed twice")
        if (host, port) in seen:
            raise PeersError(f"address {addr!r} is listed twice")
        seen.add((host, port))
        peers[member_id] = Peer(member_id, host, port)
    if not peers:
        raise PeersError("no members listed (expected id-host:port;id-host:port;...)")
    if len(peers) > MAX_MEMBERS:
        raise PeersError(f"{len(peers)} members listed; at most {MAX_MEMBERS}")
    return peers


def quorum(members: int) -> int:
    """How many members (the leader included) make a majority: n/2 + 1."""
    return members // 2 + 1

"""A DLedger member's state as ``rocketq admin getDLedgerStatus`` and the operator read it.

A DLedger broker adds ``dLeger*`` keys to GET_BROKER_RUNTIME_INFO (``rocketq.dledger.
brokerservice``): its group and member id, its Raft role and term, the leader it follows (id and
broker address), its commit and last index, and, on the leader, each follower's match index.
``DLedgerStatus`` is those keys parsed; a broker without them is not a DLedger member.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketq.admin.errors import BodyError


@dataclass(frozen=True, slots=True)
class DLedgerStatus:
    addr: str
    group: str
    self_id: str
    role: str
    """LEADER, FOLLOWER or CANDIDATE."""
    term: int
    leader_id: str
    leader_addr: str
    commit_index: int
    last_index: int
    peer_match_index: dict[str, int] = field(default_factory=dict)
    """Leader only: each follower's highest replicated index."""

    @classmethod
    def from_runtime(cls, addr: str, info: Mapping[str, str]) -> DLedgerStatus:
        if "dLegerRole" not in info:
            raise BodyError(f"{addr} is not a DLedger broker (its runtime info has no dLegerRole)")
        try:
            matches = json.loads(info.get("dLegerPeerMatchIndex") or "{}")
            return cls(addr, info.get("dLegerGroup", ""), info.get("dLegerSelfId", ""), info["dLegerRole"],
                       int(info.get("dLegerTerm", "0")), info.get("dLegerLeaderId", ""),
                       info.get("dLegerLeaderAddr", ""), int(info.get("dLegerCommitIndex", "0")),
                       int(info.get("dLegerLastIndex", "0")), {str(k): int(v) for k, v in dict(matches).items()})
        except (ValueError, TypeError, AttributeError) as exc:
            raise BodyError(f"{addr}: unreadable DLedger runtime info: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        return {"addr": self.addr, "group": self.group, "selfId": self.self_id, "role": self.role, "term": self.term,
                "leaderId": self.leader_id, "leaderAddr": self.leader_addr, "commitIndex": self.commit_index,
                "lastIndex": self.last_index, "peerMatchIndex": self.peer_match_index}

    def peers_text(self) -> str:
        return ", ".join(f"{peer}={index}" for peer, index in sorted(self.peer_match_index.items()))


HEADERS = ["#Addr", "#Group", "#SelfId", "#Role", "#Term", "#Leader", "#CommitIndex", "#LastIndex", "#PeerMatchIndex"]


def row(status: DLedgerStatus) -> list[Any]:
    leader = status.leader_id + (f" ({status.leader_addr})" if status.leader_addr else "")
    return [status.addr, status.group, status.self_id, status.role, status.term, leader, status.commit_index,
            status.last_index, status.peers_text()]

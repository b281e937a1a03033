"""DLedger settings: the group's members and the Raft timing, with DLedger's key names and defaults.

A broker.conf written for Apache RocketMQ's DLedger mode loads as it is: ``dLegerGroup``,
``dLegerPeers`` (see ``peers``), ``dLegerSelfId`` and ``preferredLeaderId`` (RocketMQ's broker
key; DLedger's own ``preferredLeaderIds`` list is accepted too). The timing keys keep DLedger's
names, units (milliseconds) and defaults, so the failure detection a DLedger user knows holds
here: a follower that hears nothing from its leader for ``heartBeatTimeIntervalMs x
maxHeartBeatLeak`` (6 s) starts an election after a random ``minVoteIntervalMs ..
maxVoteIntervalMs`` delay, and a leader that has not heard from a majority for as long steps
down.

Timing values are checked whenever the group is built (every broker builds it, DLedger or not);
the membership keys only by :meth:`DLedgerSettings.group`, which a DLedger broker calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rocketq.dledger import peers
from rocketq.settings import SettingsError, setting

MAX_TIMING_MS: Final = 600_000
"""No timing key may exceed ten minutes: a larger value is a typo (seconds written as ms * 1000)."""
MAX_HEARTBEAT_LEAK: Final = 100


@dataclass(frozen=True, slots=True)
class Group:
    """The validated membership of one DLedger group, as this member sees it."""

    name: str
    self_id: str
    members: dict[str, peers.Peer]
    preferred: tuple[str, ...]
    """Members the leader hands leadership to once they have caught up, first one first."""

    @property
    def me(self) -> peers.Peer:
        return self.members[self.self_id]

    @property
    def others(self) -> list[peers.Peer]:
        return [p for p in self.members.values() if p.member_id != self.self_id]

    @property
    def quorum(self) -> int:
        return peers.quorum(len(self.members))


@dataclass(frozen=True, slots=True)
class DLedgerSettings:
    dleger_group: str = setting("dLegerGroup", "", "the Raft group's name; every member carries the same")
    dleger_peers: str = setting(
        "dLegerPeers", "", "every member as id-host:port joined by ';' (this member listens on its own address)"
    )
    dleger_self_id: str = setting("dLegerSelfId", "", "this member's id in dLegerPeers (n0, n1, ...)")
    preferred_leader_id: str = setting(
        "preferredLeaderId", "", "a member the leader hands leadership to once it has caught up"
    )
    preferred_leader_ids: str = setting(
        "preferredLeaderIds", "", "DLedger's form of preferredLeaderId: ';'-separated ids, first one first"
    )
    heart_beat_time_interval_ms: int = setting(
        "heartBeatTimeIntervalMs", 2000, "ms between a leader's heartbeats to each follower"
    )
    max_heart_beat_leak: int = setting(
        "maxHeartBeatLeak", 3,
        "heartbeat intervals without a leader (follower) or without a majority (leader) before it gives up",
    )
    min_vote_interval_ms: int = setting("minVoteIntervalMs", 300, "shortest random delay before an election (ms)")
    max_vote_interval_ms: int = setting("maxVoteIntervalMs", 1000, "longest random delay before an election (ms)")
    max_push_time_out_ms: int = setting(
        "maxPushTimeOutMs", 1000, "ms a leader waits for one answer from a follower (vote, push)"
    )
    max_wait_ack_time_ms: int = setting(
        "maxWaitAckTimeMs", 2500, "ms a send waits for a majority before it fails (WAIT_QUORUM_ACK_TIMEOUT)"
    )
    leadership_transfer_wait_timeout: int = setting(
        "leadershipTransferWaitTimeout", 1000, "ms a leadership transfer may take before it is abandoned"
    )
    max_leadership_transfer_wait_index: int = setting(
        "maxLeadershipTransferWaitIndex", 1000,
        "entries a preferred leader may lag and still be handed leadership (it catches up first)",
    )

    def __post_init__(self) -> None:
        for key, value in (
            ("heartBeatTimeIntervalMs", self.heart_beat_time_interval_ms),
            ("minVoteIntervalMs", self.min_vote_interval_ms),
            ("maxVoteIntervalMs", self.max_vote_interval_ms),
            ("maxPushTimeOutMs", self.max_push_time_out_ms),
            ("maxWaitAckTimeMs", self.max_wait_ack_time_ms),
            ("leadershipTransferWaitTimeout", self.leadership_transfer_wait_timeout),
        ):
            if not 0 < value <= MAX_TIMING_MS:
                raise SettingsError(f"{key}={value}: expected milliseconds 1..{MAX_TIMING_MS}")
        if not 1 <= self.max_heart_beat_leak <= MAX_HEARTBEAT_LEAK:
            raise SettingsError(f"maxHeartBeatLeak={self.max_heart_beat_leak}: expected 1..{MAX_HEARTBEAT_LEAK}")
        if self.min_vote_interval_ms >= self.max_vote_interval_ms:
            raise SettingsError(f"minVoteIntervalMs={self.min_vote_interval_ms} must be below "
                                f"maxVoteIntervalMs={self.max_vote_interval_ms} (the random election delay's range)")
        if self.max_leadership_transfer_wait_index < 0:
            raise SettingsError(f"maxLeadershipTransferWaitIndex={self.max_leadership_transfer_wait_index}: "
                                "expected 0 or more")

    @property
    def heartbeat_interval(self) -> float:
        return self.heart_beat_time_interval_ms / 1000

    @property
    def election_timeout(self) -> float:
        """Seconds without a leader (or, for a leader, without a majority) before giving up on it."""
        return self.heart_beat_time_interval_ms * self.max_heart_beat_leak / 1000

    @property
    def rpc_timeout(self) -> float:
        return self.max_push_time_out_ms / 1000

    def group(self) -> Group:
        """The membership keys checked together; SettingsError names the key that is wrong."""
        if not self.dleger_group.strip():
            raise SettingsError("dLegerGroup is empty: every member of a DLedger group names the group")
        try:
            members = peers.parse(self.dleger_peers)
        except peers.PeersError as exc:
            raise SettingsError(f"dLegerPeers={self.dleger_peers!r}: {exc}") from None
        self_id = self.dleger_self_id.strip()
        if self_id not in members:
            raise SettingsError(f"dLegerSelfId={self_id!r} is not one of dLegerPeers' ids ({', '.join(members)})")
        preferred = [i.strip() for i in (self.preferred_leader_id + ";" + self.preferred_leader_ids).split(";")]
        for member_id in filter(None, preferred):
            if member_id not in members:
                raise SettingsError(f"preferred leader {member_id!r} is not one of dLegerPeers' ids "
                                    f"({', '.join(members)})")
        return Group(self.dleger_group.strip(), self_id, members, tuple(dict.fromkeys(filter(None, preferred))))

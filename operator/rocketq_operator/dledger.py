"""DLedger groups as the operator sees them: who leads, in which term, how far each member is.

In DLedger mode a broker group is a Raft group of 3 or 5 members. Raft elects the leader and
moves it when the leader is lost; the operator never promotes, fences or re-identifies
anything in this mode. What it does:

- **reads** every member's Raft state (GET_BROKER_RUNTIME_INFO's ``dLeger*`` keys, through
  ``BrokerAdmin.dledger_member``) into a ``GroupView``: a member that does not answer is
  ``None``, never guessed;
- **reports** the leader, term and members (role, commit index, lag) in the cluster status,
  and a group without a leader followed by a majority as a problem (condition, Event, metric);
- **rolls** without taking the leader down: followers first, each only while every other
  member follows the leader and is caught up, and the leader last, after it has handed
  leadership to a caught-up follower (``transfer_target``; the request is
  ``BrokerAdmin.transfer_leadership``). The old leader is restarted on a later pass, once it
  reports FOLLOWER.

*Lag* is how many committed entries a member is behind the leader: the leader's commit index
minus the member's. *Quorum* is the operator's view: the leader plus the members that answer
as its followers in its term must be a majority. A member the operator cannot reach may
still be a healthy follower, so a quorum problem says "as seen by the operator".

Everything here but ``observe`` and ``hand_over`` is pure, so tests decide on views directly.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rocketq_operator import brokeradmin, names
from rocketq_operator.brokeradmin import DLedgerMember, RaftRole
from rocketq_operator.metrics import DLedgerSample
from rocketq_operator.observing import GroupState
from rocketq_operator.runtime import Context
from rocketq_operator.spec import ClusterMeta

UNKNOWN_ROLE: Final = "UNKNOWN"
"""The role reported for a member that does not answer."""


def self_id(ordinal: int) -> str:
    """A member's ``dLegerSelfId``: ``n<ordinal>``, as the rendered pods set it."""
    return f"n{ordinal}"


def majority(replicas: int) -> int:
    return replicas // 2 + 1


class Problem(enum.Enum):
    NO_LEADER = "DLedgerGroupNoLeader"
    NO_QUORUM = "DLedgerGroupNoQuorum"


@dataclass(frozen=True)
class MemberView:
    ordinal: int
    pod: str
    state: DLedgerMember | None
    """None: the member did not answer (or reports no Raft state)."""


@dataclass(frozen=True)
class GroupView:
    name: str
    replicas: int
    members: Mapping[int, MemberView]

    @property
    def leader(self) -> MemberView | None:
        """The member that says it leads, in the highest term any leader reports."""
        leaders = [m for m in self.members.values() if m.state is not None and m.state.role is RaftRole.LEADER]
        return max(leaders, key=lambda m: (m.state.term if m.state else -1, -m.ordinal), default=None)

    @property
    def term(self) -> int | None:
        terms = [m.state.term for m in self.members.values() if m.state is not None]
        return max(terms, default=None)

    def follows(self, member: MemberView) -> bool:
        """True when ``member`` is a follower of the current leader, in the leader's term."""
        leader = self.leader
        state = member.state
        if leader is None or leader.state is None or state is None or member.ordinal == leader.ordinal:
            return False
        return (state.role is RaftRole.FOLLOWER and state.term == leader.state.term
                and state.leader_id in (None, leader.state.self_id))

    @property
    def quorum(self) -> int:
        """Members the operator sees in the leader's quorum: the leader and its followers."""
        if self.leader is None:
            return 0
        return 1 + sum(1 for m in self.members.values() if self.follows(m))

    def lag(self, member: MemberView) -> int | None:
        """Committed entries ``member`` lacks compared with the leader (None: unknown)."""
        leader = self.leader
        if leader is None or leader.state is None or member.state is None:
            return None
        return max(0, leader.state.commit_index - member.state.commit_index)

    def caught_up(self, member: MemberView, limit: int) -> bool:
        lag = self.lag(member)
        return self.follows(member) and lag is not None and lag <= limit


async def observe(ctx: Context, meta: ClusterMeta, group: GroupState) -> GroupView:
    """Ask every pod of the group for its Raft state (pods that are gone count as silent)."""
    members: dict[int, MemberView] = {}
    for ordinal in range(group.replicas):
        pod = group.pods.get(ordinal)
        state: DLedgerMember | None = None
        if pod is not None and not pod.terminating:
            address = names.broker_address(meta.name, meta.namespace, group.index, ordinal)
            try:
                state = await ctx.runtime.admin.dledger_member(address)
            except brokeradmin.BrokerAdminError as exc:
                ctx.logger.debug(f"DLedger member {pod.name} does not answer: {exc}")
        members[ordinal] = MemberView(ordinal, names.broker_pod(meta.name, group.index, ordinal), state)
    return GroupView(group.name, group.replicas, members)


def problem(view: GroupView) -> tuple[Problem, str] | None:
    """What keeps the group from taking writes, as seen by the operator; None when it can."""
    need = majority(view.replicas)
    answering = sum(1 for m in view.members.values() if m.state is not None)
    leader = view.leader
    if leader is None:
        return Problem.NO_LEADER, (f"DLedger group {view.name} has no leader: {answering} of {view.replicas} "
                                   f"members answer, a leader needs {need}")
    if view.quorum < need:
        return Problem.NO_QUORUM, (f"DLedger group {view.name}: leader {leader.pod} has {view.quorum} of "
                                   f"{view.replicas} members in its term (as seen by the operator), quorum is {need}")
    return None


def status(view: GroupView) -> dict[str, Any]:
    """The DLedger part of a group's status: leader, leaderId, term and every member."""
    out: dict[str, Any] = {}
    leader = view.leader
    if leader is not None and leader.state is not None:
        out["leader"] = leader.pod
        out["leaderId"] = leader.state.self_id or self_id(leader.ordinal)
    term = view.term
    if term is not None:
        out["term"] = term
    members = []
    for member in sorted(view.members.values(), key=lambda m: m.ordinal):
        item: dict[str, Any] = {"pod": member.pod, "selfId": self_id(member.ordinal)}
        if member.state is None:
            item["role"] = UNKNOWN_ROLE
        else:
            item["role"] = member.state.role.value
            item["commitIndex"] = member.state.commit_index
            lag = view.lag(member)
            if lag is not None:
                item["lag"] = lag
        members.append(item)
    out["members"] = members
    return out


def sample(view: GroupView) -> DLedgerSample:
    """What the ``rocketq_operator_dledger_*`` gauges show for the group."""
    lags = {m.pod: lag for m in view.members.values() if (lag := view.lag(m)) is not None}
    return DLedgerSample(view.name, problem(view) is None, view.term, lags)


def roll_gate(view: GroupView, restarting: int, limit: int) -> str | None:
    """None when the follower ``restarting`` may go down now; otherwise why not yet.

    The group must have a leader, and every other member must follow it in its term and be
    within ``limit`` committed entries: then the group keeps a caught-up majority while the
    follower is away. The restarting follower itself may be behind."""
    leader = view.leader
    if leader is None:
        return f"{view.name} has no leader"
    for member in view.members.values():
        if member.ordinal in (restarting, leader.ordinal):
            continue
        if member.state is None:
            return f"{member.pod} does not answer"
        if not view.follows(member):
            state = member.state
            return f"{member.pod} is {state.role.value} in term {state.term}, not a follower of {leader.pod}"
        lag = view.lag(member)
        if lag is not None and lag > limit:
            return f"{member.pod} is {lag} entries behind {leader.pod}"
    return None


def transfer_target(view: GroupView, limit: int, preferred: str | None = None) -> int | None:
    """The follower to hand leadership to before the leader restarts: the preferred leader
    (``preferredLeaderId``) when it is caught up, else the most caught-up follower (lowest
    ordinal on a tie); None while no follower is within ``limit``."""
    candidates = [m for m in view.members.values() if view.caught_up(m, limit)]
    if not candidates:
        return None
    for member in candidates:
        if self_id(member.ordinal) == preferred:
            return member.ordinal
    return min(candidates, key=lambda m: (view.lag(m) or 0, m.ordinal)).ordinal


async def hand_over(ctx: Context, meta: ClusterMeta, index: int, view: GroupView, preferred: str | None) -> str:
    """Ask the leader to hand leadership to a caught-up follower before it restarts; what
    happened, for the pass's progress.

    The leader answers once the transferee leads; the old leader is restarted by a later pass,
    when the operator sees it as a caught-up FOLLOWER (``rolling.plan`` then orders it among
    the followers). A refused or timed-out transfer is retried on the next pass."""
    leader = view.leader
    if leader is None:
        return f"{view.name} has no leader"
    limit = ctx.runtime.config.caught_up_entries
    target = transfer_target(view, limit, preferred)
    if target is None:
        return f"no follower of {leader.pod} is caught up to take over leadership"
    address = names.broker_address(meta.name, meta.namespace, index, leader.ordinal)
    transferee = view.members[target].pod
    try:
        await ctx.runtime.admin.transfer_leadership(address, self_id(target))
    except brokeradmin.BrokerAdminError as exc:
        return f"leadership transfer from {leader.pod} to {transferee} not done yet: {exc}"
    message = f"leadership of {view.name} moved from {leader.pod} to {transferee} before {leader.pod} restarts"
    ctx.emit("Normal", "LeadershipTransferred", message)
    ctx.logger.info(message)
    return message

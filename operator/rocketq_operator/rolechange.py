"""MasterSlave roles changed at runtime: promote the failover's candidate, then settle the others.

The failover (``failover``) decides *who* becomes master; this module makes it so the way
``rocketq admin electMaster`` / ``changeToSlave`` do (docs/ha.md, Promotion), without restarting
any pod:

1. **Promote.** The candidate gets NOTIFY_BROKER_ROLE_CHANGED with the group's master role. It
   starts a new master epoch and re-registers at once; the name servers then refuse brokerId 0
   to any broker of the group with a lower epoch, so an old master that comes back (a restart, a
   healed partition) is fenced instead of serving beside it. The broker saves its new role in
   its store (``config/role.json``), so a restart keeps it.
2. **Write-ahead for a promotion that fails midway.** Before the call the candidate's ordinal is
   added to ``rocketq.io/failover-failed`` and ``rocketq.io/failover-epoch-floor`` is raised to
   the highest epoch that candidate could take (``max(its epoch, the floor) + 1``). A candidate
   that refuses, dies or times out may still have promoted itself; the next pass promotes the
   next candidate *past that floor* (``masterEpochAbove``), so if the failed one did become a
   master, it is the lower epoch and the name servers fence it: never two masters of one
   ``brokerName`` at the same epoch.
3. **Settle.** Once the candidate is master the ConfigMap's ``masterOrdinal`` follows (so every
   restarted pod derives the same identity), and every other ordinal whose identity changed,
   the old master and failed candidates included, is listed in ``rocketq.io/roles-pending``.
   Each pass tells the listed pods their slave identity (SLAVE with the brokerId
   ``identities.master_slave_identity`` gives): the same role and id again is a no-op on the
   broker, a fenced old master becomes a slave of the new one (cutting what the new master
   lacks), and a slave whose brokerId shifted takes the new id. An ordinal leaves the list once
   its broker has answered; a pod that is gone stays listed until it answers.

A broker that answers REQUEST_CODE_NOT_SUPPORTED (an engine without runtime roles) cannot be
promoted this way: ``promote`` says so and the failover falls back to restarting pods with the
new ``masterOrdinal`` (no epoch: fencing then rests on the read-only old master, see failover).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rocketq_operator import brokeradmin, identities, names, observing
from rocketq_operator.brokeradmin import BrokerRuntime
from rocketq_operator.observing import GroupState
from rocketq_operator.rendering import broker
from rocketq_operator.runtime import Context
from rocketq_operator.spec import ClusterMeta

SLAVE_ROLE = "SLAVE"
DEFAULT_MASTER_ROLE = "ASYNC_MASTER"
MASTER_ROLES = frozenset({"ASYNC_MASTER", "SYNC_MASTER"})


class Result(enum.Enum):
    PROMOTED = "promoted"
    UNSUPPORTED = "unsupported"
    FAILED = "failed"


@dataclass(frozen=True)
class Promotion:
    result: Result
    detail: str
    epoch_floor: int = 0
    """The floor the candidate was promoted past (its epoch is above it)."""


def master_role(group: GroupState) -> str:
    """The master role the group's broker.conf names (the spec's ``brokerRole``)."""
    conf = (group.configmap or {}).get("data", {}).get(broker.CONFIG_KEY, "")
    for line in conf.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "brokerRole" and value.strip() in MASTER_ROLES:
            return value.strip()
    return DEFAULT_MASTER_ROLE


async def _annotate(ctx: Context, meta: ClusterMeta, group: GroupState, annotations: dict[str, str | None]) -> None:
    await ctx.runtime.api.patch("ConfigMap", meta.namespace, names.broker_config(meta.name, group.index),
                                {"metadata": {"annotations": annotations}})


async def promote(ctx: Context, meta: ClusterMeta, group: GroupState, ordinal: int,
                  candidate: BrokerRuntime) -> Promotion:
    """Make ``ordinal`` the master at runtime (see the module docstring, 1 and 2)."""
    address = names.broker_address(meta.name, meta.namespace, group.index, ordinal)
    floor = group.failover_epoch_floor
    could_take = max(candidate.epoch or 0, floor) + 1
    await _annotate(ctx, meta, group, {
        observing.FAILOVER_FAILED: observing.format_ordinals(group.failover_failed | {ordinal}),
        observing.FAILOVER_EPOCH_FLOOR: str(could_take)})
    try:
        await ctx.runtime.admin.change_role(address, master_role(group), 0, floor)
    except brokeradmin.RoleChangeUnsupported as exc:
        # It cannot have promoted itself: the attempt leaves no floor behind.
        await _annotate(ctx, meta, group, {
            observing.FAILOVER_FAILED: observing.format_ordinals(group.failover_failed),
            observing.FAILOVER_EPOCH_FLOOR: str(floor) if floor else None})
        return Promotion(Result.UNSUPPORTED, str(exc), floor)
    except brokeradmin.BrokerAdminError as exc:
        return Promotion(Result.FAILED, str(exc), floor)
    return Promotion(Result.PROMOTED, f"promoted at runtime past epoch {floor}" if floor
                     else "promoted at runtime with a new epoch", floor)


def displaced(group: GroupState, old_master: int, new_master: int) -> frozenset[int]:
    """Ordinals to settle after a runtime move: identity changed, or a failed candidate."""
    changed = identities.changed_by_master_move(max(group.replicas, old_master + 1), old_master, new_master)
    return (frozenset(changed) | group.failover_failed | group.roles_pending) - {new_master}


async def settle(ctx: Context, meta: ClusterMeta, group: GroupState, master: int,
                 pending: frozenset[int]) -> frozenset[int]:
    """Tell each pending ordinal its slave identity; returns those still to do (module docstring, 3)."""
    left: set[int] = set()
    for ordinal in sorted(pending):
        if ordinal == master or ordinal >= group.replicas:
            continue  # the master itself, or a pod the StatefulSet no longer has
        if ordinal not in group.pods:
            left.add(ordinal)
            continue
        address = names.broker_address(meta.name, meta.namespace, group.index, ordinal)
        broker_id = identities.master_slave_identity(ordinal, master).broker_id
        try:
            await ctx.runtime.admin.change_role(address, SLAVE_ROLE, broker_id)
        except brokeradmin.RoleChangeUnsupported:
            continue  # no runtime roles, so no role.json either: its restart reads masterOrdinal
        except brokeradmin.BrokerAdminError as exc:
            ctx.logger.info(f"{group.pods[ordinal].name} not yet a slave (brokerId {broker_id}): {exc}")
            left.add(ordinal)
    if frozenset(left) != pending:
        await _annotate(ctx, meta, group, {observing.ROLES_PENDING: observing.format_ordinals(left)})
    return frozenset(left)

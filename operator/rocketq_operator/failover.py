"""MasterSlave failover: replace a master that stays gone with its most caught-up slave.

RocketMQ's classic master/slave groups never change roles on their own; without help, a group
whose master pod is lost takes no writes until that pod returns (and with it, possibly, its
disk). Each pass checks the pod at ``masterOrdinal``:

1. Serving: roles a move left are settled (``rolechange.settle``), and the marks of a failover
   under way are cleared (``_healthy``: after failed promotions, once each candidate answered).
2. Missing, unready or terminating: the time is marked on the group's ConfigMap. Within the
   grace period (``failover_grace``, 30 s by default) the operator only waits, so ordinary
   restarts and rolling updates do not cause failovers.
3. Still unavailable after the grace period: every serving slave is asked for its replication
   state, and ``promotion.decide`` picks an in-sync slave (never an empty or lagging one),
   measured also against the master's own offset when it still answers, or as it answered when
   first seen unavailable (``rocketq.io/master-last-offset``). None
   in sync: the group is Degraded with reason ``FailoverBlocked`` (offsets in the message, one
   Warning Event per distinct reason) until a slave catches up or a person annotates the
   group's ConfigMap ``rocketq.io/force-failover=<ordinal>``.
4. Promotion: the old master is set read-only (brokerPermission 4) if it still answers, then
   the chosen slave is promoted *at runtime* (``rolechange.promote``: ``electMaster``'s call),
   which starts a new master epoch; only then is ``masterOrdinal`` set to it, so a restarted pod
   derives the identity it now has. The other brokers whose identity changed (the old master,
   slaves whose brokerId shifts, candidates that failed) are told their slave identity at
   runtime, now or on a later pass once they answer (``rolechange.settle``). No pod restarts.
   A Warning Event and the group's ``lastFailover`` status record the move and how it was made.
5. A promotion that fails midway (the candidate refuses, dies or times out) is Degraded with
   reason ``FailoverFailed``; the next pass promotes the next candidate, numbering its epoch past
   any the failed one may have taken.
6. Fallback: a candidate whose engine does not know runtime role changes is promoted the old
   way: ``masterOrdinal`` moves and the pods whose brokerId or role changes
   (``identities.changed_by_master_move``) are deleted so they restart with their new identity.

What fencing guarantees: an old master that still answers takes no writes from the moment it
is set read-only (before the new master exists). After a runtime promotion, an old master that
comes back -- restarted, with its store's role or a ConfigMap mount not yet updated, or from a
partition -- registers a lower epoch: every rocketq name server keeps the new master as
brokerId 0 and the old one fences itself (refuses sends) until the next pass makes it a slave,
which cuts the writes it took alone. What it cannot: a master partitioned from the operator and
the name servers but not from some clients keeps taking those clients' writes until it is
demoted, and they are lost. After the pod-restart fallback there is no new epoch: an old
master is fenced only by restarting as a slave.

A group that never became healthy (topics not yet created on it) is not failed over: a new
cluster pulling images is not a lost master. A ``masterOrdinal`` outside the StatefulSet (after
``replicasPerGroup`` shrank) is moved at once, without a grace period.

What it does not do: anything for DLedger groups, whose members elect their leader themselves
(the reconciler never calls ``check`` for them; ``dledger`` only reports). With async
replication an in-sync slave may still miss up to ``caught_up_bytes`` of the newest messages.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rocketq_operator import brokeradmin, identities, names, observing, promotion, rolechange
from rocketq_operator.brokeradmin import BrokerRuntime
from rocketq_operator.observing import GroupState
from rocketq_operator.rendering import broker
from rocketq_operator.runtime import Context
from rocketq_operator.spec import ClusterMeta


class Kind(enum.Enum):
    HEALTHY = "Healthy"
    NOT_APPLICABLE = "NotApplicable"
    PENDING = "MasterUnavailable"
    FAILED_OVER = "FailedOver"
    NO_CANDIDATE = "NoFailoverCandidate"
    BLOCKED = "FailoverBlocked"
    PROMOTION_FAILED = "FailoverFailed"


@dataclass(frozen=True)
class Outcome:
    kind: Kind
    message: str = ""


async def _master_offset(ctx: Context, meta: ClusterMeta, group: GroupState, master: int) -> int | None:
    """The master's CommitLog end if it still answers (an unready master often does)."""
    address = names.broker_address(meta.name, meta.namespace, group.index, master)
    try:
        return (await ctx.runtime.admin.broker_runtime(address)).commitlog_max_offset
    except brokeradmin.BrokerAdminError:
        return None


async def _mark(ctx: Context, meta: ClusterMeta, group: GroupState, master: int, value: str) -> None:
    """Record when the master was first seen unavailable, and its offset if it still answers."""
    annotations = {observing.MASTER_UNAVAILABLE_SINCE: value}
    offset = await _master_offset(ctx, meta, group, master)
    if offset is not None:
        annotations[observing.MASTER_LAST_OFFSET] = str(offset)
    await ctx.runtime.api.patch("ConfigMap", meta.namespace, names.broker_config(meta.name, group.index),
                                {"metadata": {"annotations": annotations}})


async def _clear(ctx: Context, meta: ClusterMeta, group: GroupState, *keys: str) -> None:
    await ctx.runtime.api.patch("ConfigMap", meta.namespace, names.broker_config(meta.name, group.index),
                                {"metadata": {"annotations": dict.fromkeys(keys)}})


async def _runtimes(ctx: Context, meta: ClusterMeta, group: GroupState, master: int) -> dict[int, BrokerRuntime]:
    runtimes: dict[int, BrokerRuntime] = {}
    for pod in group.pods.values():
        if not pod.serving or pod.ordinal == master or pod.ordinal >= group.replicas:
            continue
        address = names.broker_address(meta.name, meta.namespace, group.index, pod.ordinal)
        try:
            runtimes[pod.ordinal] = await ctx.runtime.admin.broker_runtime(address)
        except brokeradmin.BrokerAdminError as exc:
            ctx.logger.warning(f"Slave {pod.name} cannot be a failover candidate: {exc}")
    return runtimes


async def _fence(ctx: Context, meta: ClusterMeta, group: GroupState, master: int) -> str:
    """Make the old master read-only if it still answers; say what fenced it."""
    address = names.broker_address(meta.name, meta.namespace, group.index, master)
    try:
        await ctx.runtime.admin.set_broker_permission(address, brokeradmin.PERM_READ_ONLY)
    except brokeradmin.BrokerAdminError:
        return "old master unreachable"
    return "old master set read-only"


async def _blocked(ctx: Context, meta: ClusterMeta, group: GroupState, reason: str, message: str) -> Outcome:
    """Wait for a person; the Event is sent once per distinct ``reason`` (kept on the ConfigMap)."""
    if group.failover_blocked != reason:
        await ctx.runtime.api.patch(
            "ConfigMap", meta.namespace, names.broker_config(meta.name, group.index),
            {"metadata": {"annotations": {observing.FAILOVER_BLOCKED: reason}}})
        ctx.emit("Warning", Kind.BLOCKED.value, message)
        ctx.logger.warning(message)
    return Outcome(Kind.BLOCKED, message)


async def _healthy(ctx: Context, meta: ClusterMeta, group: GroupState, master: int) -> Outcome:
    """The master serves: finish settling roles a move left, and forget a failover under way.

    The master may be back while candidates whose promotion failed midway are listed: each may
    be a master at an epoch up to the floor, and may have fenced this one. They are settled as
    slaves first; then this master is re-asserted past the floor (``electMaster`` on a fenced
    master lifts its fence; on one that is not, it changes nothing). Until every failed
    candidate has answered, the marks stay and this is tried again on the next pass.
    """
    failed = group.failover_failed
    pending = group.roles_pending | failed
    left = await rolechange.settle(ctx, meta, group, master, pending) if pending else frozenset()
    if failed or group.failover_epoch_floor:
        if failed & left:
            return Outcome(Kind.HEALTHY)
        address = names.broker_address(meta.name, meta.namespace, group.index, master)
        try:
            await ctx.runtime.admin.change_role(address, rolechange.master_role(group), 0, group.failover_epoch_floor)
        except brokeradmin.BrokerAdminError as exc:
            # An engine without runtime roles has no epochs either: nothing can have fenced it.
            if not isinstance(exc, brokeradmin.RoleChangeUnsupported):
                ctx.logger.warning(f"cannot re-assert master {address} after a failed promotion: {exc}")
                return Outcome(Kind.HEALTHY)
    elif (group.master_unavailable_since, group.failover_blocked, group.master_last_offset) == (None,) * 3:
        return Outcome(Kind.HEALTHY)
    await _clear(ctx, meta, group, *(key for key in _FAILOVER_MARKS if key != observing.FORCE_FAILOVER))
    return Outcome(Kind.HEALTHY)


_FAILOVER_MARKS = (observing.MASTER_UNAVAILABLE_SINCE, observing.FAILOVER_BLOCKED, observing.FORCE_FAILOVER,
                   observing.MASTER_LAST_OFFSET, observing.FAILOVER_FAILED, observing.FAILOVER_EPOCH_FLOOR)
"""Annotations of a failover under way, all removed once the master serves again or has moved."""


def _untried(runtimes: dict[int, BrokerRuntime], failed: frozenset[int]) -> dict[int, BrokerRuntime]:
    """Candidates whose promotion has not failed yet; all of them again once every one has."""
    untried = {ordinal: runtime for ordinal, runtime in runtimes.items() if ordinal not in failed}
    return untried or runtimes


async def check(ctx: Context, meta: ClusterMeta, group: GroupState) -> Outcome:
    if group.configmap is None or group.statefulset is None:
        return Outcome(Kind.NOT_APPLICABLE)
    master = group.master_ordinal
    pod = group.pods.get(master)
    planned = master >= group.replicas
    if pod is not None and pod.serving and not planned:
        return await _healthy(ctx, meta, group, master)
    if not group.metadata_synced and not planned:
        return Outcome(Kind.NOT_APPLICABLE)
    master_name = names.broker_pod(meta.name, group.index, master)
    since = group.master_unavailable_since
    if since is None and not planned:
        await _mark(ctx, meta, group, master, observing.format_time(ctx.now))
        since = ctx.now
    waited = 0.0 if since is None else (ctx.now - since).total_seconds()
    if not planned and waited < ctx.runtime.config.failover_grace:
        return Outcome(Kind.PENDING, f"master {master_name} unavailable for {waited:.0f}s")
    runtimes = await _runtimes(ctx, meta, group, master)
    if not runtimes:
        return Outcome(Kind.NO_CANDIDATE,
                       f"master {master_name} unavailable for {waited:.0f}s and no serving slave answers")
    forced = group.forced_failover
    master_last = await _master_offset(ctx, meta, group, master)
    if master_last is None:
        master_last = group.master_last_offset
    candidates = runtimes if forced is not None else _untried(runtimes, group.failover_failed)
    decision = promotion.decide(candidates, master_last, ctx.runtime.config.caught_up_bytes, forced)
    if decision.promote is None:
        hint = f"; annotate ConfigMap {names.broker_config(meta.name, group.index)} with {observing.FORCE_FAILOVER}" \
               "=<ordinal> to promote one anyway (its missing messages are lost)"
        return await _blocked(ctx, meta, group, decision.reason,
                              f"master {master_name} of {group.name} unavailable for {waited:.0f}s; "
                              f"{decision.reason}{hint if forced is None else ''}")
    best = decision.promote
    new_name = names.broker_pod(meta.name, group.index, best)
    fenced = await _fence(ctx, meta, group, master)
    promoted = await rolechange.promote(ctx, meta, group, best, runtimes[best])
    if promoted.result is rolechange.Result.FAILED:
        message = (f"promoting {new_name} to master of {group.name} failed midway: {promoted.detail}; "
                   f"the next pass promotes another candidate past its possible epoch")
        ctx.emit("Warning", Kind.PROMOTION_FAILED.value, message)
        ctx.logger.warning(message)
        return Outcome(Kind.PROMOTION_FAILED, message)
    at_runtime = promoted.result is rolechange.Result.PROMOTED
    how = promoted.detail if at_runtime else f"promoted by pod restart (fallback: {promoted.detail})"
    fenced += "; a lower epoch: the name servers refuse it as master" if at_runtime \
        else "; no new epoch: fenced only by its restart as a slave"
    pending = rolechange.displaced(group, master, best) if at_runtime else frozenset()
    await ctx.runtime.api.patch(
        "ConfigMap", meta.namespace, names.broker_config(meta.name, group.index),
        {"data": {broker.MASTER_ORDINAL_KEY: str(best)},
         "metadata": {"annotations": {**dict.fromkeys(_FAILOVER_MARKS),
                                      observing.ROLES_PENDING: observing.format_ordinals(pending),
                                      observing.LAST_FAILOVER: f"{new_name}: {how}"}}},
    )
    ctx.runtime.cluster_views.drop((meta.namespace, meta.name))  # topic passes: write to the new master
    if at_runtime:
        left = await rolechange.settle(ctx, meta, group, best, pending)
        done = ", ".join(names.broker_pod(meta.name, group.index, o) for o in sorted(pending - left))
        after = f"slaves re-identified at runtime: {done or 'none'}"
        if left:
            after += f"; pending until they answer: ordinals {observing.format_ordinals(left)}"
    else:
        after = f"restarted {', '.join(await _restart_moved(ctx, meta, group, master, best)) or 'no pods'}"
    why = "moved out of the StatefulSet" if planned else f"unavailable for {waited:.0f}s"
    message = (f"master of {group.name} moved from {master_name} ({why}) to {new_name}, {decision.reason}; "
               f"{how}; {fenced}; {after}")
    ctx.emit("Warning", "Failover", message)
    ctx.logger.warning(message)
    ctx.runtime.metrics.failovers.labels(namespace=meta.namespace, cluster=meta.name).inc()
    return Outcome(Kind.FAILED_OVER, message)


async def _restart_moved(ctx: Context, meta: ClusterMeta, group: GroupState, master: int, best: int) -> list[str]:
    """The fallback: delete the pods whose identity changes, so they restart with the new one."""
    restarted = []
    for ordinal in identities.changed_by_master_move(max(group.replicas, master + 1), master, best):
        if ordinal in group.pods:
            await ctx.runtime.api.delete("Pod", meta.namespace, group.pods[ordinal].name)
            ctx.runtime.metrics.pod_restarts.labels(reason="failover").inc()
            restarted.append(group.pods[ordinal].name)
    return restarted

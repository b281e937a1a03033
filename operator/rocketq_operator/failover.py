"""MasterSlave failover: replace a master that stays gone with its most caught-up slave.

RocketMQ's classic master/slave groups never change roles on their own; without help, a group
whose master pod is lost takes no writes until that pod returns (and with it, possibly, its
disk). Each pass checks the pod at ``masterOrdinal``:

1. Serving: nothing to do (a pending ``master-unavailable-since`` mark is cleared).
2. Missing, unready or terminating: the time is marked on the group's ConfigMap. Within the
   grace period (``failover_grace``, 30 s by default) the operator only waits, so ordinary
   restarts and rolling updates do not cause failovers.
3. Still unavailable after the grace period: every serving slave is asked for its CommitLog max
   offset; the highest wins (the lowest ordinal on a tie). ``masterOrdinal`` is set to it, and
   the pods whose brokerId or role changes (``identities.changed_by_master_move``) are deleted
   so they restart with their new identity. A Warning Event records the move.

A group that never became healthy (topics not yet created on it) is not failed over: a new
cluster pulling images is not a lost master. A ``masterOrdinal`` outside the StatefulSet (after
``replicasPerGroup`` shrank) is moved at once, without a grace period.

What it does not do: anything for DLedger groups (they elect their own leader), or fence an
old master that is still running but unready; async replication can lose the messages the
chosen slave had not received, exactly as a manual failover would.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rocketq_operator import brokeradmin, identities, names, observing
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


@dataclass(frozen=True)
class Outcome:
    kind: Kind
    message: str = ""


async def _mark(ctx: Context, meta: ClusterMeta, group: GroupState, value: str | None) -> None:
    await ctx.runtime.api.patch("ConfigMap", meta.namespace, names.broker_config(meta.name, group.index),
                                {"metadata": {"annotations": {observing.MASTER_UNAVAILABLE_SINCE: value}}})


async def _offsets(ctx: Context, meta: ClusterMeta, group: GroupState, master: int) -> dict[int, int]:
    offsets: dict[int, int] = {}
    for pod in group.pods.values():
        if not pod.serving or pod.ordinal == master or pod.ordinal >= group.replicas:
            continue
        address = names.broker_address(meta.name, meta.namespace, group.index, pod.ordinal)
        try:
            runtime = await ctx.runtime.admin.broker_runtime(address)
        except brokeradmin.BrokerAdminError as exc:
            ctx.logger.warning(f"Slave {pod.name} cannot be a failover candidate: {exc}")
            continue
        offsets[pod.ordinal] = runtime.commitlog_max_offset
    return offsets


async def check(ctx: Context, meta: ClusterMeta, group: GroupState) -> Outcome:
    if group.configmap is None or group.statefulset is None:
        return Outcome(Kind.NOT_APPLICABLE)
    master = group.master_ordinal
    pod = group.pods.get(master)
    planned = master >= group.replicas
    if pod is not None and pod.serving and not planned:
        if group.master_unavailable_since is not None:
            await _mark(ctx, meta, group, None)
        return Outcome(Kind.HEALTHY)
    if not group.metadata_synced and not planned:
        return Outcome(Kind.NOT_APPLICABLE)
    master_name = names.broker_pod(meta.name, group.index, master)
    since = group.master_unavailable_since
    if since is None and not planned:
        await _mark(ctx, meta, group, observing.format_time(ctx.now))
        since = ctx.now
    waited = 0.0 if since is None else (ctx.now - since).total_seconds()
    if not planned and waited < ctx.runtime.config.failover_grace:
        return Outcome(Kind.PENDING, f"master {master_name} unavailable for {waited:.0f}s")
    offsets = await _offsets(ctx, meta, group, master)
    if not offsets:
        return Outcome(Kind.NO_CANDIDATE,
                       f"master {master_name} unavailable for {waited:.0f}s and no serving slave answers")
    best = max(offsets, key=lambda ordinal: (offsets[ordinal], -ordinal))
    await ctx.runtime.api.patch(
        "ConfigMap", meta.namespace, names.broker_config(meta.name, group.index),
        {"data": {broker.MASTER_ORDINAL_KEY: str(best)},
         "metadata": {"annotations": {observing.MASTER_UNAVAILABLE_SINCE: None}}},
    )
    restarted = []
    for ordinal in identities.changed_by_master_move(max(group.replicas, master + 1), master, best):
        if ordinal in group.pods:
            await ctx.runtime.api.delete("Pod", meta.namespace, group.pods[ordinal].name)
            ctx.runtime.metrics.pod_restarts.labels(reason="failover").inc()
            restarted.append(group.pods[ordinal].name)
    new_name = names.broker_pod(meta.name, group.index, best)
    why = "moved out of the StatefulSet" if planned else f"unavailable for {waited:.0f}s"
    message = (f"master of {group.name} moved from {master_name} ({why}) to {new_name} "
               f"(CommitLog offset {offsets[best]}); restarted {', '.join(restarted) or 'no pods'}")
    ctx.emit("Warning", "Failover", message)
    ctx.logger.warning(message)
    ctx.runtime.metrics.failovers.labels(namespace=meta.namespace, cluster=meta.name).inc()
    return Outcome(Kind.FAILED_OVER, message)

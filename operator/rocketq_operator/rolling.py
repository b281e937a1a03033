"""Rolling restarts of broker pods, one pod per cluster at a time, masters last.

Broker StatefulSets use ``updateStrategy: OnDelete``, so a changed template (new image, new
broker.conf, new resources) only says what the *next* pod should look like. Each reconcile
pass asks ``plan`` which pod, if any, to restart now:

- A pod is out of date when its ``rocketq.io/template-hash`` differs from its StatefulSet's,
  or when a manual rolling update (``rocketq.io/manual-rolling-update``) listed its uid.
- Nothing is restarted while any broker pod of the cluster is missing, unready or terminating:
  the pod restarted last must be back first.
- Groups roll in index order; within a group, slaves (or DLedger followers) go first, highest
  ordinal first, and the master (or leader) last.

Before the chosen pod of a MasterSlave group is deleted, ``gate`` asks the brokers (a DLedger
group's gates are Raft's, in ``dledger.roll_gate`` and ``dledger.hand_over``): every pod of the group must be
registered with the name servers and every other slave must be connected to its master
(``haInSync``) and within ``caught_up_bytes`` of its CommitLog, so the pod restarted last has
caught up before the next goes; a master restarts only while it reports a slave in sync
(``haInSync=true``: connected and within haMaxGapNotInSync). A restart never leaves the master
as the only up-to-date copy while another is still behind. (Brokers that report no
replication state are judged by offsets alone.)
Waiting is always "try again next pass"; nothing here sleeps.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from rocketq_operator import brokeradmin, names
from rocketq_operator.observing import ClusterState, GroupState, PodState
from rocketq_operator.runtime import Context
from rocketq_operator.spec import ClusterMeta
from rocketq_operator.topology import Registry


class Kind(enum.Enum):
    DONE = "Done"
    WAIT = "Wait"
    ROLL = "Roll"


@dataclass(frozen=True)
class Decision:
    kind: Kind
    group: int | None = None
    pod: PodState | None = None
    message: str = ""
    remaining: int = 0


def outdated(group: GroupState, template_hash: str, manual: Collection[str]) -> list[PodState]:
    return [
        pod for pod in group.pods.values()
        if pod.ordinal < group.replicas and (pod.template_hash != template_hash or pod.uid in manual)
    ]


def unavailable(group: GroupState) -> str | None:
    for ordinal in range(group.replicas):
        pod = group.pods.get(ordinal)
        if pod is None:
            return f"{group.name}-{ordinal} does not exist yet"
        if not pod.serving:
            return f"{pod.name} is not ready"
    return None


def plan(state: ClusterState, desired: Mapping[int, str], manual: Mapping[int, Collection[str]],
         primaries: Mapping[int, int | None]) -> Decision:
    """Which pod to restart next (pure). ``desired``: template hash per group that may roll;
    ``primaries``: the master or leader ordinal per group, when known."""
    stale: dict[int, list[PodState]] = {}
    for index in sorted(desired):
        group = state.group(index)
        if group is None:
            continue
        pods = outdated(group, desired[index], manual.get(index, ()))
        if pods:
            stale[index] = pods
    if not stale:
        return Decision(Kind.DONE)
    remaining = sum(len(pods) for pods in stale.values())
    for index in sorted(desired):
        group = state.group(index)
        problem = None if group is None else unavailable(group)
        if problem is not None:
            return Decision(Kind.WAIT, message=f"waiting before the next restart: {problem}", remaining=remaining)
    index = min(stale)
    primary = primaries.get(index)
    order = sorted(stale[index], key=lambda pod: (pod.ordinal == primary, -pod.ordinal))
    return Decision(Kind.ROLL, group=index, pod=order[0], remaining=remaining)


async def gate(ctx: Context, meta: ClusterMeta, group: GroupState, registry: Registry,
               primary_address: str | None, restarting: PodState) -> str | None:
    """None when ``restarting`` may go down for a while; otherwise why it cannot yet.

    Every pod of the group must be registered, and every slave other than the one restarting
    must be caught up: the master (or, for SYNC_MASTER, its in-sync slave) must not be left
    as the only copy while another copy is still behind. A slave that is itself behind may
    restart; that does not take data away from anyone."""
    if not registry.known:
        return "no name server answers, so registrations cannot be checked"
    registered = registry.addresses(group.name)
    addresses = {ordinal: names.broker_address(meta.name, meta.namespace, group.index, ordinal)
                 for ordinal in range(group.replicas)}
    missing = [names.broker_pod(meta.name, group.index, o) for o, a in addresses.items() if a not in registered]
    if missing:
        return f"{', '.join(missing)} not registered with the name servers yet"
    if primary_address is None or group.replicas == 1:
        return None
    admin = ctx.runtime.admin
    try:
        primary = await admin.broker_runtime(primary_address)
        if addresses.get(restarting.ordinal) == primary_address and primary.ha_in_sync is False:
            return f"no slave of {restarting.name} reports in sync (haInSync=false): its master would be the only copy"
        for ordinal, address in addresses.items():
            if address == primary_address or ordinal == restarting.ordinal:
                continue
            slave = await admin.broker_runtime(address)
            pod = names.broker_pod(meta.name, group.index, ordinal)
            if slave.ha_in_sync is False:
                return f"{pod} is not connected to its master"
            behind = primary.commitlog_max_offset - slave.commitlog_max_offset
            if behind > ctx.runtime.config.caught_up_bytes:
                return f"{pod} is {behind} bytes behind its master"
    except brokeradmin.BrokerAdminError as exc:
        return f"replication offsets unavailable: {exc}"
    return None


async def restart(ctx: Context, meta: ClusterMeta, pod: PodState, reason: str) -> None:
    await ctx.runtime.api.delete("Pod", meta.namespace, pod.name)
    ctx.runtime.metrics.pod_restarts.labels(reason=reason).inc()
    ctx.logger.info(f"Restarted {pod.name} ({reason}).")

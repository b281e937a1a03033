"""Adding and removing broker groups without losing messages or routes.

Scaling up: a new group gets its StatefulSet like any other. Before it takes traffic, every
RocketMQConsumerGroup and then every RocketMQTopic of the cluster is created on its master
(groups first, so consumers rebalancing onto the new queues find their subscription). Until
then the group has no topics, so producers' routes do not include it. The ConfigMap is then
marked ``rocketq.io/metadata-synced``; the topic and group reconcilers only target marked groups,
so nothing reaches a group half-way.

Scaling down removes the highest-numbered groups, but first drains each one: its brokers are
made read-only (``brokerPermission=4``), so producers move to the other groups while consumers
keep reading; once every consumer group's lag on that broker is 0, the StatefulSet, Service,
PodDisruptionBudget and ConfigMap are deleted (claims stay, as the StatefulSet's retention
policy says). A drain that is still not empty after ``drain_timeout`` is reported as
``Degraded/DrainTimeout`` and kept read-only: the operator never deletes unconsumed messages on
its own. Raising ``groups`` again during a drain makes the group writable again.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocketq_operator import applying, brokeradmin, entities, kubeapi, names, observing
from rocketq_operator.brokeradmin import GroupConfig, TopicConfig
from rocketq_operator.observing import GroupState
from rocketq_operator.runtime import Context
from rocketq_operator.spec import ClusterMeta


async def cluster_entities(api: kubeapi.KubeApi, namespace: str, cluster: str
                           ) -> tuple[list[TopicConfig], list[GroupConfig]]:
    """The valid, not-deleted topics and consumer groups that name ``cluster``."""
    topics: list[TopicConfig] = []
    groups: list[GroupConfig] = []
    for kind in (entities.GROUP_KIND, entities.TOPIC_KIND):
        for obj in await api.list(kind, namespace, {}):
            meta = obj.get("metadata", {})
            if meta.get("deletionTimestamp"):
                continue
            parsed = entities.parse(kind, obj.get("spec"), str(meta.get("name", "")))
            if parsed.spec is None or parsed.spec.cluster_ref != cluster:
                continue
            if isinstance(parsed.spec, entities.TopicSpec):
                topics.append(parsed.spec.config)
            else:
                groups.append(parsed.spec.config)
    return topics, groups


async def _annotate(ctx: Context, meta: ClusterMeta, index: int, values: Mapping[str, str | None]) -> None:
    await ctx.runtime.api.patch("ConfigMap", meta.namespace, names.broker_config(meta.name, index),
                                {"metadata": {"annotations": dict(values)}})
    # Seeded, draining or back: the groups topic passes write to changed; they read it again now.
    ctx.runtime.cluster_views.drop((meta.namespace, meta.name))


async def seed(ctx: Context, meta: ClusterMeta, group: GroupState, master: str | None,
               topics: Sequence[TopicConfig], groups: Sequence[GroupConfig]) -> str | None:
    """Create every group and topic on a new group's master; None when done, else why not yet."""
    if master is None:
        return f"{group.name} has no master yet"
    admin = ctx.runtime.admin
    refused: list[str] = []
    configs: list[TopicConfig | GroupConfig] = [*groups, *topics]  # groups first (see above)
    try:
        for config in configs:
            try:
                if isinstance(config, TopicConfig):
                    await admin.create_or_update_topic(master, config)
                else:
                    await admin.create_or_update_group(master, config)
            except brokeradmin.BrokerRefusedError as exc:
                # Asking again would be refused again; the object's own pass reports it
                # (ChangeRefused) and the group serves everything else meanwhile.
                refused.append(str(exc))
    except brokeradmin.BrokerAdminError as exc:
        return f"cannot create topics and groups on {group.name} yet: {exc}"
    await _annotate(ctx, meta, group.index, {observing.METADATA_SYNCED: "true"})
    if refused:
        ctx.emit("Warning", "SeedRefused", f"{group.name} refused {len(refused)} of its topics and groups: "
                                           + "; ".join(refused))
    ctx.logger.info(f"Created {len(groups)} consumer groups and {len(topics)} topics on {group.name} "
                    f"({len(refused)} refused).")
    return None


def _group_addresses(meta: ClusterMeta, group: GroupState) -> list[str]:
    return [names.broker_address(meta.name, meta.namespace, group.index, pod.ordinal)
            for pod in sorted(group.pods.values(), key=lambda p: p.ordinal) if pod.serving]


async def _set_permission(ctx: Context, addresses: Sequence[str], perm: int) -> None:
    admin = ctx.runtime.admin
    for address in addresses:
        if await admin.get_broker_permission(address) != perm:
            await admin.set_broker_permission(address, perm)


async def undrain(ctx: Context, meta: ClusterMeta, group: GroupState) -> str | None:
    """Make a group that is wanted again writable; None when done, else why not yet."""
    try:
        await _set_permission(ctx, _group_addresses(meta, group), brokeradmin.PERM_READ_WRITE)
    except brokeradmin.BrokerAdminError as exc:
        return f"cannot make {group.name} writable again yet: {exc}"
    await _annotate(ctx, meta, group.index, {observing.DRAINING_SINCE: None})
    ctx.emit("Normal", "DrainCancelled", f"{group.name} is wanted again and accepts writes")
    return None


class DrainKind(enum.Enum):
    DRAINING = "Draining"
    TIMED_OUT = "DrainTimeout"
    REMOVED = "Removed"


@dataclass(frozen=True)
class DrainOutcome:
    kind: DrainKind
    message: str


async def _lag(ctx: Context, master: str) -> int:
    admin = ctx.runtime.admin
    total = 0
    for name in await admin.list_groups(master):
        if name not in brokeradmin.SYSTEM_GROUPS:
            total += await admin.consumer_lag(master, name)
    return total


async def _remove(ctx: Context, meta: ClusterMeta, group: GroupState) -> None:
    api = ctx.runtime.api
    # The ConfigMap goes last: it holds the drain bookkeeping if anything below fails.
    for kind, name in (("StatefulSet", group.name), ("Service", group.name),
                       ("PodDisruptionBudget", group.name), ("ConfigMap", names.broker_config(meta.name, group.index))):
        await applying.remove(api, kind, meta.namespace, name, meta.uid)


async def drain(ctx: Context, meta: ClusterMeta, group: GroupState, master: str | None) -> DrainOutcome:
    """One step of draining a group the spec no longer asks for."""
    since = group.draining_since
    if since is None and group.configmap is not None:
        await _annotate(ctx, meta, group.index, {observing.DRAINING_SINCE: observing.format_time(ctx.now)})
        ctx.emit("Normal", "Draining", f"{group.name} is read-only and will be removed once consumed")
        since = ctx.now
    waited = 0.0 if since is None else (ctx.now - since).total_seconds()
    try:
        await _set_permission(ctx, _group_addresses(meta, group), brokeradmin.PERM_READ_ONLY)
        if master is None:
            raise brokeradmin.BrokerAdminError(f"{group.name} has no serving master")
        lag = await _lag(ctx, master)
    except brokeradmin.BrokerAdminError as exc:
        detail = f"{group.name}: cannot read consumer lag: {exc}"
        return _waiting(ctx, waited, detail)
    if lag > 0:
        return _waiting(ctx, waited, f"{group.name}: {lag} messages not consumed yet")
    await _remove(ctx, meta, group)
    ctx.runtime.metrics.groups_removed.labels(namespace=meta.namespace, cluster=meta.name).inc()
    message = f"{group.name} drained after {waited:.0f}s and removed"
    ctx.emit("Normal", "BrokerGroupRemoved", message)
    ctx.logger.info(message)
    return DrainOutcome(DrainKind.REMOVED, message)


def _waiting(ctx: Context, waited: float, detail: str) -> DrainOutcome:
    if waited >= ctx.runtime.config.drain_timeout:
        return DrainOutcome(DrainKind.TIMED_OUT, f"{detail} after {waited:.0f}s (drain timeout)")
    return DrainOutcome(DrainKind.DRAINING, detail)

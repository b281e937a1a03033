"""What is running for one cluster, read from the API server into frozen values.

One pass of the reconciler starts by listing the cluster's StatefulSets, ConfigMaps and pods
(label ``rocketq.io/cluster=<name>``); StatefulSets and ConfigMaps must also be owned by this
cluster object (its uid), so a stale child of a deleted cluster of the same name is never
mistaken for ours. Everything the reconciler decides from (readiness, template hashes,
master ordinals, bookkeeping annotations) is extracted here once.

Bookkeeping the operator needs between passes lives in annotations of the group's ConfigMap,
next to ``masterOrdinal``: when the master was first seen unavailable, when draining began,
whether topics and groups were created on the group, which pods a manual rolling update still
has to restart. The ConfigMap is the operator's own object, so these survive operator restarts
and never trigger a reconcile of the cluster object itself.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rocketq_operator import applying, kubeapi, names
from rocketq_operator.rendering import broker, common

DRAINING_SINCE: Final = "rocketq.io/draining-since"
MASTER_UNAVAILABLE_SINCE: Final = "rocketq.io/master-unavailable-since"
FAILOVER_BLOCKED: Final = "rocketq.io/failover-blocked"
MASTER_LAST_OFFSET: Final = "rocketq.io/master-last-offset"
FORCE_FAILOVER: Final = "rocketq.io/force-failover"
FAILOVER_FAILED: Final = "rocketq.io/failover-failed"
"""Ordinals whose runtime promotion was attempted and did not finish (written before the call)."""
FAILOVER_EPOCH_FLOOR: Final = "rocketq.io/failover-epoch-floor"
"""The highest master epoch a candidate in ``failover-failed`` may have taken; the next is past it."""
ROLES_PENDING: Final = "rocketq.io/roles-pending"
"""Ordinals still to be told their slave identity at runtime after the master moved."""
LAST_FAILOVER: Final = "rocketq.io/last-failover"
"""How the last failover promoted (runtime, with its epoch, or by pod restart and why)."""
METADATA_SYNCED: Final = "rocketq.io/metadata-synced"
MANUAL_ROLL: Final = "rocketq.io/manual-roll-pods"


def parse_time(raw: Any) -> datetime.datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        value = datetime.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)


def _ordinals(raw: str | None) -> frozenset[int]:
    """A comma-separated ordinal list (an annotation); anything else in it is ignored."""
    return frozenset(int(part) for part in (raw or "").split(",") if part.strip().isdigit())


def format_ordinals(ordinals: frozenset[int] | set[int]) -> str | None:
    """The annotation value for ``ordinals``; None (removes the annotation) when empty."""
    return ",".join(str(o) for o in sorted(ordinals)) or None


def format_time(value: datetime.datetime) -> str:
    return value.astimezone(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class PodState:
    name: str
    ordinal: int
    uid: str
    ready: bool
    terminating: bool
    template_hash: str | None

    @property
    def serving(self) -> bool:
        return self.ready and not self.terminating


def pod_state(pod: Mapping[str, Any]) -> PodState | None:
    meta = pod.get("metadata", {})
    name = str(meta.get("name", ""))
    ordinal = names.pod_ordinal(name)
    if ordinal is None:
        return None
    conditions = pod.get("status", {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, dict))
    return PodState(
        name=name,
        ordinal=ordinal,
        uid=str(meta.get("uid", "")),
        ready=ready,
        terminating=bool(meta.get("deletionTimestamp")),
        template_hash=(meta.get("annotations") or {}).get(common.ANNOTATION_TEMPLATE_HASH),
    )


@dataclass(frozen=True)
class GroupState:
    index: int
    name: str
    statefulset: Mapping[str, Any] | None
    configmap: Mapping[str, Any] | None
    pods: Mapping[int, PodState] = field(default_factory=dict)

    def _annotation(self, key: str) -> str | None:
        if self.configmap is None:
            return None
        value = (self.configmap.get("metadata", {}).get("annotations") or {}).get(key)
        return value if isinstance(value, str) else None

    @property
    def master_ordinal(self) -> int:
        raw = (self.configmap or {}).get("data", {}).get(broker.MASTER_ORDINAL_KEY, "0")
        return int(raw) if isinstance(raw, str) and raw.isdigit() else 0

    @property
    def draining_since(self) -> datetime.datetime | None:
        return parse_time(self._annotation(DRAINING_SINCE))

    @property
    def master_unavailable_since(self) -> datetime.datetime | None:
        return parse_time(self._annotation(MASTER_UNAVAILABLE_SINCE))

    @property
    def failover_blocked(self) -> str | None:
        """Why the last failover attempt waited (so its Event is sent once)."""
        return self._annotation(FAILOVER_BLOCKED)

    @property
    def master_last_offset(self) -> int | None:
        """The master's CommitLog end when it was first seen unavailable (if it answered)."""
        raw = self._annotation(MASTER_LAST_OFFSET)
        return int(raw) if raw is not None and raw.isdigit() else None

    @property
    def forced_failover(self) -> int | None:
        """The ordinal a person asked to promote although it is not in sync."""
        raw = self._annotation(FORCE_FAILOVER)
        return int(raw) if raw is not None and raw.isdigit() else None

    @property
    def failover_failed(self) -> frozenset[int]:
        return _ordinals(self._annotation(FAILOVER_FAILED))

    @property
    def failover_epoch_floor(self) -> int:
        raw = self._annotation(FAILOVER_EPOCH_FLOOR)
        return int(raw) if raw is not None and raw.isdigit() else 0

    @property
    def roles_pending(self) -> frozenset[int]:
        return _ordinals(self._annotation(ROLES_PENDING))

    @property
    def last_failover(self) -> str | None:
        return self._annotation(LAST_FAILOVER)

    @property
    def metadata_synced(self) -> bool:
        return self._annotation(METADATA_SYNCED) == "true"

    @property
    def manual_roll(self) -> frozenset[str] | None:
        raw = self._annotation(MANUAL_ROLL)
        if raw is None:
            return None
        return frozenset(uid for uid in raw.split(",") if uid)

    @property
    def replicas(self) -> int:
        value = (self.statefulset or {}).get("spec", {}).get("replicas", 0)
        return value if isinstance(value, int) else 0

    @property
    def ready_replicas(self) -> int:
        return sum(1 for pod in self.pods.values() if pod.serving and pod.ordinal < self.replicas)


@dataclass(frozen=True)
class ClusterState:
    namesrv: Mapping[str, Any] | None
    namesrv_pods: Mapping[int, PodState]
    groups: Mapping[int, GroupState]

    def group(self, index: int) -> GroupState | None:
        return self.groups.get(index)


def _pods_of(pods: list[dict[str, Any]], component: str, group: str | None) -> dict[int, PodState]:
    out: dict[int, PodState] = {}
    for pod in pods:
        labels = pod.get("metadata", {}).get("labels") or {}
        if labels.get(common.LABEL_COMPONENT) != component:
            continue
        if group is not None and labels.get(common.LABEL_BROKER_GROUP) != group:
            continue
        state = pod_state(pod)
        if state is not None:
            out[state.ordinal] = state
    return out


async def observe(api: kubeapi.KubeApi, cluster: str, namespace: str, uid: str) -> ClusterState:
    selector = {common.LABEL_CLUSTER: cluster}
    statefulsets = [s for s in await api.list("StatefulSet", namespace, selector) if applying.owned_by(s, uid)]
    configmaps = [c for c in await api.list("ConfigMap", namespace, selector) if applying.owned_by(c, uid)]
    pods = await api.list("Pod", namespace, selector)
    by_name = {s["metadata"]["name"]: s for s in statefulsets}
    configs = {c["metadata"]["name"]: c for c in configmaps}
    indices = {i for i in (names.group_index(cluster, n) for n in by_name) if i is not None}
    indices |= {i for i in (names.group_index(cluster, n.removesuffix("-config")) for n in configs
                            if n.endswith("-config")) if i is not None}
    groups = {
        index: GroupState(
            index=index,
            name=names.broker_group(cluster, index),
            statefulset=by_name.get(names.broker_group(cluster, index)),
            configmap=configs.get(names.broker_config(cluster, index)),
            pods=_pods_of(pods, common.COMPONENT_BROKER, names.broker_group(cluster, index)),
        )
        for index in sorted(indices)
    }
    return ClusterState(
        namesrv=by_name.get(names.namesrv(cluster)),
        namesrv_pods=_pods_of(pods, common.COMPONENT_NAMESRV, None),
        groups=groups,
    )

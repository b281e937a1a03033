"""The ``proxy`` reconcile step: a cluster's gRPC proxy follows ``spec.proxy.enabled``.

Enabled: apply the proxy's ConfigMap, Service and Deployment (``rendering.proxy``), and a
PodDisruptionBudget while it has more than one replica, through ``applying`` like every other
child (never taking over another owner's object: ``Degraded/NameConflict``). Scaling, a new
image and a new rmq-proxy.json are Deployment changes that Kubernetes rolls by itself, so
nothing here restarts pods. The step reads how far the Deployment got from the object the
apply returned and reports it as ``status.proxy`` and the ``ProxyReady`` condition; the
cluster's own ``Ready`` stays about name servers and brokers (a proxy is optional, and a
broker group does not wait for it).

With ``spec.proxy.tls`` enforcing, the Secret is read first (``proxytls``): a missing or unusable
Secret is ``ProxyReady=False`` with its reason, and nothing is applied, so pods already running
keep what they serve; a usable one gives the digest the Deployment's template carries.

Disabled: the four objects are removed (only this cluster's) once, when the previous status
still has a ``proxy`` entry; a cluster that never had a proxy costs no call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from rocketq_operator import applying, kubeapi, names, proxytls
from rocketq_operator.conditions import Condition, Type
from rocketq_operator.rendering import pdb
from rocketq_operator.rendering import proxy as rendering
from rocketq_operator.spec import Cluster

if TYPE_CHECKING:
    from rocketq_operator.reconciler import ClusterPass

READY: Final = "Ready"
ROLLING: Final = "RollingUpdate"
NOT_READY: Final = "PodsNotReady"
NOT_APPLIED: Final = "NotApplied"
FORBIDDEN: Final = "Forbidden"


@dataclass(frozen=True)
class Outcome:
    """What the status gets: the ``ProxyReady`` condition and ``status.proxy`` (both None when disabled)."""

    condition: Condition | None = None
    status: dict[str, Any] | None = None


async def reconcile(step: ClusterPass, cluster: Cluster) -> Outcome:
    if not cluster.spec.proxy.enabled:
        if step.previous.get("proxy") is not None:
            await _remove(step, cluster)
        return Outcome()
    tls_digest = None
    if cluster.spec.proxy.tls.enabled and cluster.spec.proxy.tls.secret_name is not None:
        found = await proxytls.inspect(step.api, cluster.meta.namespace, cluster.spec.proxy.tls.secret_name)
        if isinstance(found, proxytls.Unusable):
            return await _unusable_secret(step, cluster, found)
        tls_digest = found
    try:
        deployment = await _apply(step, cluster, tls_digest)
    except kubeapi.Forbidden as exc:
        return _outcome(cluster, 0, Condition(Type.PROXY_READY, False, FORBIDDEN, (
            f"spec.proxy is enabled but the operator may not manage Deployments ({exc}); "
            "grant what the chart's operator role grants")))
    if deployment is None:  # refused: Degraded says why
        return _outcome(cluster, 0, Condition(Type.PROXY_READY, False, NOT_APPLIED,
                                              "the proxy's objects could not be applied (see Degraded)"))
    return _outcome(cluster, *readiness(cluster, deployment))


async def _unusable_secret(step: ClusterPass, cluster: Cluster, problem: proxytls.Unusable) -> Outcome:
    """ProxyReady=False with the Secret's problem; ready pods counted from what still runs (if anything)."""
    try:
        live = await step.api.get("Deployment", cluster.meta.namespace, names.proxy(cluster.meta.name))
    except kubeapi.Forbidden:
        live = None
    ready = readiness(cluster, live)[0] if live is not None and applying.owned_by(live, cluster.meta.uid) else 0
    return _outcome(cluster, ready, Condition(Type.PROXY_READY, False, problem.reason, problem.message))


async def _apply(step: ClusterPass, cluster: Cluster, tls_digest: str | None) -> Mapping[str, Any] | None:
    """Apply every proxy object; the Deployment as the API server returned it (None if refused)."""
    meta = cluster.meta
    await step.apply_one(rendering.render_proxy_configmap(cluster))
    await step.apply_one(rendering.render_proxy_service(cluster))
    result = await step.apply_one(rendering.render_proxy_deployment(cluster, tls_digest))
    if cluster.spec.proxy.replicas > 1:
        await step.apply_one(pdb.render_proxy_pdb(cluster))
    else:
        await applying.remove(step.api, "PodDisruptionBudget", meta.namespace, names.proxy(meta.name), meta.uid)
    return None if result is None else result.live


async def _remove(step: ClusterPass, cluster: Cluster) -> None:
    meta = cluster.meta
    name = names.proxy(meta.name)
    for kind, child in (("Deployment", name), ("PodDisruptionBudget", name), ("Service", name),
                        ("ConfigMap", names.proxy_config(meta.name))):
        await applying.remove(step.api, kind, meta.namespace, child, meta.uid)


def readiness(cluster: Cluster, deployment: Mapping[str, Any] | None) -> tuple[int, Condition]:
    """Ready pods and the condition, from a Deployment's status as its controller wrote it.

    Ready means Kubernetes' "rollout complete": the controller saw the latest spec, every pod
    runs the current template, none of an older one is left, and all are ready."""
    wanted = cluster.spec.proxy.replicas
    status = (deployment or {}).get("status") or {}
    generation = (deployment or {}).get("metadata", {}).get("generation")
    ready = int(status.get("readyReplicas") or 0)
    updated = int(status.get("updatedReplicas") or 0)
    total = int(status.get("replicas") or 0)
    seen = generation is None or int(status.get("observedGeneration") or 0) >= generation
    where = names.proxy_service_address(cluster.meta.name, cluster.meta.namespace, cluster.spec.proxy.grpc_port)
    if seen and updated == wanted and total == wanted and ready >= wanted:
        return ready, Condition(Type.PROXY_READY, True, READY, f"{ready}/{wanted} proxy pods ready at {where}")
    if not seen or updated < wanted or total > wanted:
        return ready, Condition(Type.PROXY_READY, False, ROLLING,
                                f"rolling out the proxy: {updated}/{wanted} updated, {ready} ready")
    return ready, Condition(Type.PROXY_READY, False, NOT_READY, f"{ready}/{wanted} proxy pods ready")


def _outcome(cluster: Cluster, ready: int, condition: Condition) -> Outcome:
    wanted = cluster.spec.proxy
    return Outcome(condition, {
        "replicas": wanted.replicas,
        "readyReplicas": ready,
        # One string for `kubectl get`'s Proxy column (a printer column shows one value).
        "ready": f"{ready}/{wanted.replicas}",
        "endpoint": names.proxy_service_address(cluster.meta.name, cluster.meta.namespace, wanted.grpc_port),
    })

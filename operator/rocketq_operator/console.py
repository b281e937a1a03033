"""The ``console`` reconcile step: a cluster's web console follows ``spec.console``.

Enabled: apply the Service, the Deployment and (with ``ingress.enabled``) the Ingress rendered
by ``rendering.console``, through ``applying`` like every other child (created or patched when
the spec changed, never taken over from another owner: a stranger's object of the same name is
a ``NameConflict`` in ``Degraded``). The step's result is ``status.console``: where the console
is reached and how many of its pods are ready. A console that is not ready does not make the
cluster less ready: brokers never wait for it.

Disabled: the three objects are removed (only objects this cluster owns). Removal is tried
only while the previous status still has a ``console`` entry, so a cluster that never had a
console costs no request for it; the same goes for an Ingress switched off (``console.ingress``
in the previous status). The console's users Secret belongs to the user and is never touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rocketq_operator import applying, names
from rocketq_operator.rendering import console as rendering
from rocketq_operator.spec import Cluster

if TYPE_CHECKING:
    from rocketq_operator.reconciler import ClusterPass


async def reconcile(step: ClusterPass, cluster: Cluster) -> dict[str, Any] | None:
    """Bring the console's children to the spec; the ``status.console`` to report (None: off)."""
    before = step.previous.get("console")
    before = before if isinstance(before, Mapping) else None
    if before is not None:
        for kind, name in _stale(cluster, before):
            await applying.remove(step.api, kind, cluster.meta.namespace, name, cluster.meta.uid)
    if not cluster.spec.console.enabled:
        return None
    ready = 0
    for desired in rendering.render(cluster):
        result = await step.apply_one(desired)
        if desired["kind"] == "Deployment" and result is not None and result.live is not None:
            ready = _ready_replicas(result.live)
    wanted = cluster.spec.console
    out: dict[str, Any] = {
        "service": names.console_service_address(cluster.meta.name, cluster.meta.namespace, wanted.port),
        "replicas": wanted.replicas,
        "readyReplicas": ready,
    }
    if wanted.ingress.enabled:
        out["ingress"] = wanted.ingress.host or "*"
    return out


def _stale(cluster: Cluster, before: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the previous pass had and this spec no longer wants."""
    gone = rendering.removable(cluster)
    if cluster.spec.console.enabled and "ingress" not in before:
        return []  # no Ingress was there to remove
    return gone


def _ready_replicas(live: Mapping[str, Any]) -> int:
    value = (live.get("status") or {}).get("readyReplicas")
    return value if isinstance(value, int) else 0

"""PodDisruptionBudgets: voluntary evictions (node drains) take at most one pod at a time.

One budget for the name servers and one per broker group. ``maxUnavailable: 1`` keeps a
MasterSlave group with one replica evictable (a budget that can never be met blocks drains
forever) while never letting a drain take a master and its slave together, and it keeps a
DLedger group's quorum (2 of 3, or 4 of 5) during a drain.
"""

from __future__ import annotations

from typing import Any, Final

from rocketq_operator import names
from rocketq_operator.rendering import common
from rocketq_operator.spec import Cluster

MAX_UNAVAILABLE: Final = 1


def _pdb(cluster: Cluster, name: str, component: str, group: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": common.metadata(cluster, name, component, group),
        "spec": {
            "maxUnavailable": MAX_UNAVAILABLE,
            "selector": {"matchLabels": common.selector_labels(cluster.meta.name, component, group)},
        },
    }


def render_namesrv_pdb(cluster: Cluster) -> dict[str, Any]:
    return _pdb(cluster, names.namesrv(cluster.meta.name), common.COMPONENT_NAMESRV, None)


def render_broker_pdb(cluster: Cluster, index: int) -> dict[str, Any]:
    group = names.broker_group(cluster.meta.name, index)
    return _pdb(cluster, group, common.COMPONENT_BROKER, group)


def render_pdbs(cluster: Cluster) -> list[dict[str, Any]]:
    """Every budget the cluster's spec asks for: name servers first, then each group."""
    return [render_namesrv_pdb(cluster)] + [
        render_broker_pdb(cluster, index) for index in range(cluster.spec.brokers.groups)
    ]

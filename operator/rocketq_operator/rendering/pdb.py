"""PodDisruptionBudgets: what voluntary evictions (node drains) may take from each group.

One budget for the name servers, one per broker group, and one for a proxy of more than one
replica. ``maxUnavailable: 1`` keeps a MasterSlave group with one replica evictable (a budget
that can never be met blocks drains forever) while never letting a drain take a master and its
slave together. A DLedger group's
budget is its quorum, ``minAvailable: <majority>`` (2 of 3, 3 of 5): an eviction never leaves
the group unable to elect or commit. With 3 members that is one pod at a time; a 5-member
group may lose two to evictions and still commit.
"""

from __future__ import annotations

from typing import Any, Final

from rocketq_operator import names
from rocketq_operator.rendering import common
from rocketq_operator.spec import BrokerMode, Cluster

MAX_UNAVAILABLE: Final = 1


def _pdb(cluster: Cluster, name: str, component: str, group: str | None,
         budget: dict[str, int]) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": common.metadata(cluster, name, component, group),
        "spec": {
            **budget,
            "selector": {"matchLabels": common.selector_labels(cluster.meta.name, component, group)},
        },
    }


def render_namesrv_pdb(cluster: Cluster) -> dict[str, Any]:
    return _pdb(cluster, names.namesrv(cluster.meta.name), common.COMPONENT_NAMESRV, None,
                {"maxUnavailable": MAX_UNAVAILABLE})


def render_broker_pdb(cluster: Cluster, index: int) -> dict[str, Any]:
    group = names.broker_group(cluster.meta.name, index)
    brokers = cluster.spec.brokers
    budget = ({"minAvailable": brokers.replicas_per_group // 2 + 1} if brokers.mode is BrokerMode.DLEDGER
              else {"maxUnavailable": MAX_UNAVAILABLE})
    return _pdb(cluster, group, common.COMPONENT_BROKER, group, budget)


def render_proxy_pdb(cluster: Cluster) -> dict[str, Any]:
    """The proxy's budget (only rendered for more than one replica: one proxy pod must stay evictable)."""
    return _pdb(cluster, names.proxy(cluster.meta.name), common.COMPONENT_PROXY, None,
                {"maxUnavailable": MAX_UNAVAILABLE})


def render_pdbs(cluster: Cluster) -> list[dict[str, Any]]:
    """Every budget the cluster's spec asks for: name servers first, then each group."""
    return [render_namesrv_pdb(cluster)] + [
        render_broker_pdb(cluster, index) for index in range(cluster.spec.brokers.groups)
    ]

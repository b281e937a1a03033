"""Where a cluster's masters are: from the ConfigMaps (MasterSlave) or the name servers (DLedger).

In MasterSlave mode the operator decides the master (``masterOrdinal`` in the group's
ConfigMap), so its address follows from names alone. In DLedger mode the group elects a
leader; the name servers know it as brokerId 0 of the group, and so does the operator after
asking them (``BrokerAdmin.cluster_brokers``). ``Registry`` is that answer: which addresses
each brokerName has registered, or ``known=False`` when no name server answered, in which case
callers wait instead of guessing. (The reconciler asks the DLedger members themselves first,
``dledger``; the registrations are its fallback and what seeding and drains write to.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rocketq_operator import brokeradmin, names
from rocketq_operator.observing import GroupState, PodState


@dataclass(frozen=True)
class Registry:
    known: bool
    groups: Mapping[str, Mapping[int, str]] = field(default_factory=dict)

    def addresses(self, group: str) -> set[str]:
        return set(self.groups.get(group, {}).values())

    def master_address(self, group: str) -> str | None:
        return self.groups.get(group, {}).get(0)


UNKNOWN = Registry(known=False)


async def registrations(admin: brokeradmin.BrokerAdmin, cluster: str, namespace: str,
                        namesrv_pods: Mapping[int, PodState]) -> Registry:
    """Ask the serving name servers, one after another, who is registered in ``cluster``."""
    for ordinal in sorted(o for o, pod in namesrv_pods.items() if pod.serving):
        try:
            answer = await admin.cluster_brokers(names.namesrv_address(cluster, namespace, ordinal), cluster)
        except brokeradmin.BrokerAdminError:
            continue
        return Registry(known=True, groups={k: dict(v) for k, v in answer.items()})
    return UNKNOWN


def ordinal_of(cluster: str, namespace: str, index: int, address: str | None, replicas: int) -> int | None:
    if address is None:
        return None
    for ordinal in range(replicas):
        if names.broker_address(cluster, namespace, index, ordinal) == address:
            return ordinal
    return None


def leader_ordinal(cluster: str, namespace: str, group: GroupState, registry: Registry) -> int | None:
    """The DLedger leader's ordinal, as the name servers report it."""
    return ordinal_of(cluster, namespace, group.index, registry.master_address(group.name),
                      max(group.replicas, len(group.pods)))


def master_address(cluster: str, namespace: str, group: GroupState, dledger: bool,
                   registry: Registry) -> str | None:
    """The address writes go to: the configured master, or the registered DLedger leader."""
    if dledger:
        return registry.master_address(group.name)
    return names.broker_address(cluster, namespace, group.index, group.master_ordinal)

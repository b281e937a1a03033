"""Which broker a StatefulSet pod becomes, from its ordinal and the group's master ordinal.

The broker process computes this itself (``rocketq broker --ordinal-from-hostname``); the
operator computes the same thing to know which pods must restart when the master moves.

MasterSlave: the pod whose ordinal equals ``masterOrdinal`` is the master (brokerId 0, role
from the spec). Every other pod is a SLAVE with a unique non-zero brokerId: ``ordinal + 1``
below the master's ordinal and ``ordinal`` above it. DLedger: pod N is peer ``n<N>``; the
group elects its own leader, so no ordinal is special.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BrokerIdentity:
    broker_id: int
    is_master: bool


def master_slave_identity(ordinal: int, master_ordinal: int) -> BrokerIdentity:
    if ordinal < 0 or master_ordinal < 0:
        raise ValueError(f"ordinals are non-negative, got {ordinal} and {master_ordinal}")
    if ordinal == master_ordinal:
        return BrokerIdentity(broker_id=0, is_master=True)
    return BrokerIdentity(broker_id=ordinal + 1 if ordinal < master_ordinal else ordinal, is_master=False)


def changed_by_master_move(replicas: int, old_master: int, new_master: int) -> list[int]:
    """Ordinals whose brokerId or role differs after the master moves: the pods to restart."""
    return [
        ordinal for ordinal in range(replicas)
        if master_slave_identity(ordinal, old_master) != master_slave_identity(ordinal, new_master)
    ]


def dledger_self_id(ordinal: int) -> str:
    return f"n{ordinal}"

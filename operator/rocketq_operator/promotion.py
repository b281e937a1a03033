"""Which slave may replace a lost MasterSlave master: a pure decision on replicated offsets.

A promoted slave restarts as brokerId 0 with the data it replicated; whatever the old master
had that it had not received is lost for good. So a slave is promoted only when it is *in
sync*:

- The reference is the furthest the group is known to have written: the highest of every
  slave's own view of its master's end (``commitLogMaxOffset + haBehindBytes``: a slave
  learns its master's end from each replication frame) and, when known, the master's last
  reported offset.
- A slave is refused when it is *empty* (CommitLog offset 0 while the reference is not: it
  never received anything, e.g. it never connected) or *lagging* (more than ``max_gap`` bytes
  behind the reference; the operator uses ``caught_up_bytes``, the same bound rolls use).
- Of the in-sync slaves the most caught up wins, the lowest ordinal on a tie.

When none is in sync the answer is "wait" with a reason that names every candidate and its
offset; a person who accepts the loss forces one ordinal (``rocketq.io/force-failover``),
which is taken as long as that slave answers at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocketq_operator.brokeradmin import BrokerRuntime


@dataclass(frozen=True)
class Decision:
    promote: int | None
    """The ordinal to make master, or None: wait."""
    reason: str
    reference: int
    """The offset the candidates were measured against."""


def reference_offset(slaves: Mapping[int, BrokerRuntime], master_last: int | None) -> int:
    """The furthest offset the group is known to have written (see the module docstring)."""
    views = [runtime.commitlog_max_offset + (runtime.ha_behind_bytes or 0) for runtime in slaves.values()]
    return max([*views, master_last or 0, 0])


def _refusal(offset: int, reference: int, max_gap: int) -> str | None:
    if offset == 0 and reference > 0:
        return "empty"
    if reference - offset > max_gap:
        return f"{reference - offset} bytes behind"
    return None


def decide(slaves: Mapping[int, BrokerRuntime], master_last: int | None, max_gap: int,
           forced: int | None = None) -> Decision:
    """Promote the most caught-up in-sync slave, the forced one, or none (with the reason)."""
    reference = reference_offset(slaves, master_last)
    if forced is not None:
        if forced in slaves:
            return Decision(forced, f"forced by annotation (offset {slaves[forced].commitlog_max_offset} "
                                    f"of {reference})", reference)
        return Decision(None, f"forced ordinal {forced} is not a serving slave that answers", reference)
    refused = {ordinal: _refusal(runtime.commitlog_max_offset, reference, max_gap)
               for ordinal, runtime in slaves.items()}
    in_sync = [ordinal for ordinal, why in refused.items() if why is None]
    if in_sync:
        best = max(in_sync, key=lambda ordinal: (slaves[ordinal].commitlog_max_offset, -ordinal))
        return Decision(best, f"in sync (offset {slaves[best].commitlog_max_offset} of {reference})", reference)
    if not slaves:
        return Decision(None, "no serving slave answers", reference)
    detail = ", ".join(f"ordinal {ordinal}: offset {slaves[ordinal].commitlog_max_offset} ({why})"
                       for ordinal, why in sorted(refused.items()))
    return Decision(None, f"no slave is in sync with offset {reference}: {detail}", reference)

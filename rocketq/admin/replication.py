"""A broker's replication state in one cell of ``clusterList`` (from GET_BROKER_RUNTIME_INFO).

A master reads ``2 slaves, 0 B behind`` (the best slave's lag) or ``no slave``; a slave reads
``in sync``, ``1.5 MiB behind`` or what its HA client is doing (``connecting``, ``no master
address``); a DLedger member reads ``dledger leader, term 3, commit 120``. A broker that reports
no HA keys (Apache RocketMQ, older rocketq) gets an empty cell.
"""

from __future__ import annotations

from collections.abc import Mapping

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_text(count: int) -> str:
    value = float(count)
    for unit in _UNITS:
        if value < 1024 or unit == _UNITS[-1]:
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def replication_text(runtime: Mapping[str, str]) -> str:
    if "dLegerRole" in runtime:  # a DLedger member (rocketq.dledger.brokerservice)
        return (f"dledger {runtime['dLegerRole'].lower()}, term {runtime.get('dLegerTerm', '?')}, "
                f"commit {runtime.get('dLegerCommitIndex', '?')}")
    connections = runtime.get("haConnectionCount")
    if connections is None or not connections.isdigit():
        return ""
    behind = size_text(int(runtime.get("haBehindBytes", "0") or 0))
    if runtime.get("brokerRole") != "SLAVE":
        count = int(connections)
        if count == 0:
            return "no slave"
        return f"{count} slave{'s' if count > 1 else ''}, {behind} behind"
    state = runtime.get("haClientState", "")
    if state != "transferring":
        return state or "not replicating"
    return "in sync" if runtime.get("haBehindBytes") == "0" else f"{behind} behind"

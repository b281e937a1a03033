"""``rocketq admin getDLedgerStatus``'s parsing of a member's runtime info, and clusterList's cell."""

from __future__ import annotations

import pytest

from rocketq.admin import dledger, replication
from rocketq.admin.errors import BodyError

LEADER = {
    "brokerRole": "SYNC_MASTER", "dLegerGroup": "broker-a", "dLegerSelfId": "n0", "dLegerRole": "LEADER",
    "dLegerTerm": "4", "dLegerLeaderId": "n0", "dLegerLeaderAddr": "10.0.0.1:10911", "dLegerCommitIndex": "120",
    "dLegerLastIndex": "121", "dLegerPeerMatchIndex": '{"n2": 118, "n1": 121}',
}


def test_a_leaders_status() -> None:
    status = dledger.DLedgerStatus.from_runtime("10.0.0.1:10911", LEADER)
    assert (status.group, status.self_id, status.role, status.term) == ("broker-a", "n0", "LEADER", 4)
    assert (status.commit_index, status.last_index) == (120, 121)
    assert status.peer_match_index == {"n1": 121, "n2": 118}
    assert dledger.row(status)[5] == "n0 (10.0.0.1:10911)" and dledger.row(status)[-1] == "n1=121, n2=118"
    assert status.to_json()["peerMatchIndex"] == {"n1": 121, "n2": 118}


def test_a_broker_without_dledger_keys_or_with_bad_ones() -> None:
    with pytest.raises(BodyError, match="not a DLedger broker"):
        dledger.DLedgerStatus.from_runtime("a:1", {"brokerRole": "ASYNC_MASTER"})
    with pytest.raises(BodyError, match="unreadable"):
        dledger.DLedgerStatus.from_runtime("a:1", {**LEADER, "dLegerTerm": "x"})
    with pytest.raises(BodyError, match="unreadable"):
        dledger.DLedgerStatus.from_runtime("a:1", {**LEADER, "dLegerPeerMatchIndex": "[1]"})


def test_cluster_list_cell() -> None:
    assert replication.replication_text(LEADER) == "dledger leader, term 4, commit 120"

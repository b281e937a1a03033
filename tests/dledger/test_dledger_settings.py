"""DLedger settings, dLegerPeers parsing and the currterm file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq import settings
from rocketq.dledger import peers
from rocketq.dledger.settings import DLedgerSettings
from rocketq.dledger.termstore import TermStore, TermStoreError, TermVote

PEERS = "n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913"


def test_rocketmq_dledger_conf_loads_with_dledger_defaults() -> None:
    values = {"dLegerGroup": "RaftNode00", "dLegerPeers": PEERS, "dLegerSelfId": "n1"}
    s = settings.build(DLedgerSettings, values, environ={})
    group = s.group()
    assert (group.name, group.self_id, group.quorum) == ("RaftNode00", "n1", 2)
    assert [p.member_id for p in group.others] == ["n0", "n2"]
    assert group.me.address == "127.0.0.1:40912"
    assert (s.heartbeat_interval, s.election_timeout, s.rpc_timeout) == (2.0, 6.0, 1.0)
    assert (s.min_vote_interval_ms, s.max_vote_interval_ms, s.max_wait_ack_time_ms) == (300, 1000, 2500)
    assert (s.leadership_transfer_wait_timeout, s.max_leadership_transfer_wait_index) == (1000, 1000)


def test_preferred_leader_keys_merge_in_order() -> None:
    s = DLedgerSettings(dleger_group="g", dleger_peers=PEERS, dleger_self_id="n0",
                        preferred_leader_id="n2", preferred_leader_ids="n1;n2")
    assert s.group().preferred == ("n2", "n1")


@pytest.mark.parametrize(("values", "message"), [
    ({"dLegerPeers": PEERS, "dLegerSelfId": "n0"}, "dLegerGroup is empty"),
    ({"dLegerGroup": "g", "dLegerPeers": PEERS, "dLegerSelfId": "n7"}, "dLegerSelfId='n7'"),
    ({"dLegerGroup": "g", "dLegerPeers": "", "dLegerSelfId": "n0"}, "no members"),
    ({"dLegerGroup": "g", "dLegerPeers": PEERS, "dLegerSelfId": "n0", "preferredLeaderId": "n9"}, "'n9'"),
])
def test_group_errors_name_the_key(values: dict[str, str], message: str) -> None:
    with pytest.raises(settings.SettingsError, match=message):
        settings.build(DLedgerSettings, values, environ={}).group()


@pytest.mark.parametrize(("key", "value", "message"), [
    ("heartBeatTimeIntervalMs", "0", "heartBeatTimeIntervalMs=0"),
    ("maxHeartBeatLeak", "0", "maxHeartBeatLeak=0"),
    ("minVoteIntervalMs", "1000", "must be below maxVoteIntervalMs"),
    ("maxPushTimeOutMs", "-5", "maxPushTimeOutMs=-5"),
    ("maxWaitAckTimeMs", "3600000", "maxWaitAckTimeMs=3600000"),
    ("maxLeadershipTransferWaitIndex", "-1", "maxLeadershipTransferWaitIndex=-1"),
    ("heartBeatTimeIntervalMs", "2s", "expected an integer"),
])
def test_bad_timing_is_refused_with_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(settings.SettingsError, match=message):
        settings.build(DLedgerSettings, {key: value}, environ={})


def test_peers_ids_split_at_the_first_dash_so_dns_names_may_have_dashes() -> None:
    parsed = peers.parse(" n0-rocketq-broker-0.rocketq:40911 ; n1-[::1]:40912;")
    assert parsed["n0"] == peers.Peer("n0", "rocketq-broker-0.rocketq", 40911)
    assert parsed["n1"].address == "[::1]:40912"


@pytest.mark.parametrize(("text", "message"), [
    ("127.0.0.1:40911", "expected id-host:port"),
    ("n0-127.0.0.1", "bad address"),
    ("n0-127.0.0.1:0", "bad address"),
    ("n0-a:1;n0-b:2", "listed twice"),
    ("n0-a:1;n1-a:1", "listed twice"),
    ("n 0-a:1", "letters, digits"),
    (";".join(f"n{i}-h:{i + 1}" for i in range(10)), "at most"),
])
def test_bad_peer_lists_are_refused(text: str, message: str) -> None:
    with pytest.raises(peers.PeersError, match=message):
        peers.parse(text)


def test_quorum_is_a_majority() -> None:
    assert [peers.quorum(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


def test_termstore_round_trip_and_fresh_start(tmp_path: Path) -> None:
    store = TermStore(tmp_path / "dledger-n0")
    assert store.load() == TermVote(0, None)
    store.save(TermVote(7, "n1"))
    assert TermStore(tmp_path / "dledger-n0").load() == TermVote(7, "n1")
    store.save(TermVote(8, None))
    assert store.load() == TermVote(8, None)
    assert store.path.read_text() == "currTerm=8\nvoteLeader=\n"
    assert not (tmp_path / "dledger-n0" / "currterm.tmp").exists()


@pytest.mark.parametrize("text", [b"currTerm=x\n", b"voteLeader=n1\n", b"currTerm=3\nvoteLeader=a b\n",
                                  b"\xff\xfe", b"currTerm=1\n" + b"#" * 5000])
def test_termstore_refuses_a_damaged_file(tmp_path: Path, text: bytes) -> None:
    (tmp_path / "currterm").write_bytes(text)
    with pytest.raises(TermStoreError):
        TermStore(tmp_path).load()

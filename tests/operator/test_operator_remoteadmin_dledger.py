"""RemotingBrokerAdmin's DLedger calls on the wire, against a remoting server playing a member.

The server is rocketq's own ``RemotingServer`` on 127.0.0.1 with two handlers: the runtime
info a DLedger member reports (the ``dLeger*`` keys of the contract) and DLedger's leadership
transfer (request code 51005, ext field ``transfereeId``), answered as a leader would. The
parser of the runtime keys is also fed arbitrary tables: it answers a member or a
``BrokerAdminError``, nothing else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rocketq_operator import remoteadmin
from rocketq_operator.brokeradmin import BrokerAdminError, DLedgerMember, RaftRole
from rocketq_operator.remoteadmin import RemotingBrokerAdmin

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingServer

LEADER_INFO = {
    "dLegerGroup": "demo-broker-0", "dLegerSelfId": "n0", "dLegerRole": "LEADER", "dLegerTerm": "7",
    "dLegerLeaderId": "n0", "dLegerLeaderAddr": "demo-broker-0-0.demo-broker-0.mq.svc:40911",
    "dLegerCommitIndex": "1200", "dLegerLastIndex": "1204", "dLegerPeerMatchIndex": '{"n1": 1204, "n2": 1100}',
    "commitLogMaxOffset": "99",
}


class Member:
    """A DLedger leader as far as the operator can tell: runtime info, and transfers it records."""

    def __init__(self, info: dict[str, str]) -> None:
        self.info = info
        self.transfers: list[dict[str, str]] = []
        self.refuse: str | None = None

    async def runtime(self, _conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps({"table": self.info}))

    async def transfer(self, _conn: Connection, request: RemotingCommand) -> RemotingCommand:
        self.transfers.append(dict(request.ext_fields or {}))
        if self.refuse is not None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=self.refuse)
        return request.response(ResponseCode.SUCCESS)


@pytest.fixture
async def member() -> AsyncIterator[tuple[Member, str]]:
    played = Member(dict(LEADER_INFO))
    server = RemotingServer({int(RequestCode.GET_BROKER_RUNTIME_INFO): played.runtime,
                             remoteadmin.TRANSFER_LEADERSHIP: played.transfer}, host="127.0.0.1")
    await server.start()
    try:
        yield played, f"127.0.0.1:{server.port}"
    finally:
        await server.close()


@pytest.fixture
async def admin() -> AsyncIterator[RemotingBrokerAdmin]:
    client = RemotingBrokerAdmin(timeout=5.0)
    try:
        yield client
    finally:
        await client.close()


async def test_a_members_raft_state_is_read_from_its_runtime_info(member: tuple[Member, str],
                                                                   admin: RemotingBrokerAdmin) -> None:
    played, address = member
    assert await admin.dledger_member(address) == DLedgerMember(
        group="demo-broker-0", self_id="n0", role=RaftRole.LEADER, term=7, commit_index=1200, last_index=1204,
        leader_id="n0", leader_address="demo-broker-0-0.demo-broker-0.mq.svc:40911",
        peer_match_index={"n1": 1204, "n2": 1100})
    played.info = {k: v for k, v in LEADER_INFO.items() if not k.startswith("dLeger")}
    with pytest.raises(BrokerAdminError, match="reports no dLegerRole: not a DLedger member"):
        await admin.dledger_member(address)


async def test_leadership_transfer_is_dledgers_request_with_the_transferee(member: tuple[Member, str],
                                                                           admin: RemotingBrokerAdmin) -> None:
    played, address = member
    await admin.transfer_leadership(address, "n2")
    assert played.transfers == [{"transfereeId": "n2"}]
    played.refuse = "n2 is not caught up"
    with pytest.raises(BrokerAdminError, match=r"cannot transfer leadership to n2: .*n2 is not caught up"):
        await admin.transfer_leadership(address, "n2")


async def test_the_engines_own_transfer_method_is_used_when_the_admin_client_has_one() -> None:
    class Client:
        def __init__(self) -> None:
            self.asked: list[tuple[str, str]] = []

        async def transfer_leadership(self, addr: str, transferee_id: str) -> None:
            self.asked.append((addr, transferee_id))

    client = Client()
    await remoteadmin._transfer(client, "b:10911", "n1")  # type: ignore[arg-type]
    assert client.asked == [("b:10911", "n1")]


@pytest.mark.parametrize(("change", "error"), [
    ({"dLegerRole": "WITNESS"}, "is not LEADER, FOLLOWER or CANDIDATE"),
    ({"dLegerTerm": "seven"}, "dLegerTerm='seven' is not an integer"),
    ({"dLegerCommitIndex": None}, "has no dLegerCommitIndex"),
    ({"dLegerPeerMatchIndex": "{n1: 3"}, "dLegerPeerMatchIndex is not JSON"),
    ({"dLegerPeerMatchIndex": '{"n1": "3"}'}, "not an object of peer ids to indexes"),
])
def test_bad_runtime_keys_are_clear_errors(change: dict[str, Any], error: str) -> None:
    info = {k: v for k, v in {**LEADER_INFO, **change}.items() if v is not None}
    with pytest.raises(BrokerAdminError, match=error):
        remoteadmin.dledger_runtime(info, "b:10911 runtime info")


def test_a_follower_without_leader_or_match_indexes_parses() -> None:
    follower = {"dLegerRole": "candidate", "dLegerTerm": "3", "dLegerCommitIndex": "5", "dLegerLastIndex": "6",
                "dLegerLeaderId": "", "dLegerSelfId": "n1"}
    assert remoteadmin.dledger_runtime(follower, "x") == DLedgerMember("", "n1", RaftRole.CANDIDATE, 3, 5, 6)


KEYS = st.sampled_from([*sorted(LEADER_INFO), "other"])


@settings(max_examples=300, deadline=None)
@given(table=st.dictionaries(KEYS, st.one_of(st.text(max_size=12), st.integers().map(str),
                                             st.sampled_from(["LEADER", "FOLLOWER", "{}", '{"n1": 2}']))))
def test_any_runtime_table_parses_to_a_member_or_a_clear_error(table: dict[str, str]) -> None:
    try:
        parsed = remoteadmin.dledger_runtime({**LEADER_INFO, **table} if "other" in table else table, "x")
    except BrokerAdminError as exc:
        assert str(exc).startswith("x")
    else:
        assert isinstance(parsed.role, RaftRole) and isinstance(parsed.term, int)

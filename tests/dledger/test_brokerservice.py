"""DLedgerService: the write gate, grouped commit waits, role following, runtime info, transfer.

The Raft member is a test double driven by hand (``HandMember``); the log and the store are real.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.settings import BrokerRole
from rocketq.dledger.brokerservice import DLedgerService, slave_broker_id
from rocketq.dledger.contract import Entry, MemberState, Role, RoleListener
from rocketq.dledger.storelog import StoreLog
from rocketq.ha.role import RoleChange
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.store.messagestore import MessageStore, PutRequest, PutStatus
from rocketq.store.settings import StoreSettings


class HandMember:
    """A RaftMember whose role, term and commits the test sets."""

    def __init__(self, raft_log: StoreLog) -> None:
        self.log = raft_log
        self.role = Role.FOLLOWER
        self.term = 1
        self.leader_id: str | None = None
        self.ready = False
        self.listeners: list[RoleListener] = []
        self.appends = 0
        self.transfers: list[str] = []

    def state(self) -> MemberState:
        match = {"n1": self.log.last_index, "n2": 0} if self.role is Role.LEADER else {}
        return MemberState("n0", self.role, self.term, self.leader_id, self.log.commit_index, self.log.last_index,
                           match)

    def add_role_listener(self, listener: RoleListener) -> None:
        self.listeners.append(listener)

    def leader_term(self) -> int | None:
        return self.term if self.role is Role.LEADER and self.ready else None

    def appended(self) -> None:
        self.appends += 1

    async def wait_committed(self, index: int, timeout: float) -> bool:
        raise AssertionError("the service groups its waits itself")

    async def transfer_leadership(self, to_id: str, timeout: float) -> bool:
        self.transfers.append(to_id)
        self.become(Role.FOLLOWER, self.term + 1, to_id)
        return True

    def become(self, role: Role, term: int, leader: str | None) -> None:
        self.role, self.term, self.leader_id = role, term, leader
        if role is Role.LEADER:  # what Raft does: a no-op in the new term, committed once a majority has it
            self.log.append([Entry(self.log.last_index + 1, term, b"")])
        for listener in self.listeners:
            listener(self.state())


class Group:
    def __init__(self, root: Path) -> None:
        self.store = MessageStore(StoreSettings(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 16),
                                  ("127.0.0.1", 10911))
        self.store.open()
        self.log = StoreLog(self.store, root / "dledger")
        self.store.append_hook = self.log
        self.member = HandMember(self.log)
        self.roles: list[RoleChange] = []
        self.service = DLedgerService(self.store, self.log, self.member, group="g", self_id="n0", wait_timeout_ms=300,
                                      change_role=self._changed, leader_addr=lambda: "10.0.0.9:10911")

    async def _changed(self, change: RoleChange) -> None:
        self.roles.append(change)

    async def lead(self) -> None:
        """Win an election and commit the no-op: the broker takes writes."""
        self.member.become(Role.LEADER, self.member.term + 1, "n0")
        self.member.ready = True
        self.log.commit(self.log.last_index)
        await until(lambda: self.service.writing)

    async def put(self) -> PutStatus:
        result = await self.store.put(PutRequest("T", 0, b"body"))
        return (await self.service.wait_for_slave([], result)).status


async def until(condition: object, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.005)


@pytest.fixture
async def group(tmp_path: Path) -> AsyncIterator[Group]:
    made = Group(tmp_path)
    await made.store.start()
    await made.service.start()
    yield made
    await made.service.close()
    await made.store.close()
    made.log.close()


async def test_a_follower_refuses_sends_naming_the_leader(group: Group) -> None:
    group.member.become(Role.FOLLOWER, 2, "n1")
    await until(lambda: group.roles)
    assert group.roles[-1] == RoleChange(BrokerRole.SLAVE, 1)
    remark = group.service.send_refusal()
    assert remark is not None and "n1 at 10.0.0.9:10911" in remark and "slave" in remark
    assert (await group.store.put(PutRequest("T", 0, b"body"))).status is PutStatus.SERVICE_NOT_AVAILABLE
    group.member.become(Role.CANDIDATE, 3, None)
    assert "no leader" in (group.service.send_refusal() or "")
    assert group.service.elections == 1


async def test_a_leader_writes_only_once_ready_and_answers_after_the_commit(group: Group) -> None:
    group.member.become(Role.LEADER, 2, "n0")
    await asyncio.sleep(0.05)
    assert not group.service.writing and "becoming the leader" in (group.service.send_refusal() or "")
    group.member.ready = True
    group.log.commit(group.log.last_index)  # the no-op
    await until(lambda: group.service.writing)
    assert group.roles[-1] == RoleChange(BrokerRole.SYNC_MASTER, 0)
    sends = [asyncio.ensure_future(group.put()) for _ in range(5)]
    await until(lambda: group.log.last_index == 6)
    assert group.member.appends == 5
    assert not any(s.done() for s in sends)
    group.log.commit(6)  # one commit releases every send it covers
    assert await asyncio.gather(*sends) == [PutStatus.PUT_OK] * 5
    assert group.store.get_max_offset("T", 0) == 5


async def test_a_send_not_committed_in_time_gets_flush_slave_timeout(group: Group) -> None:
    await group.lead()
    assert await group.put() is PutStatus.FLUSH_SLAVE_TIMEOUT
    assert group.store.get_max_offset("T", 0) == 0  # stored, never visible: not committed


async def test_stepping_down_closes_the_gate_and_answers_waiting_sends(group: Group) -> None:
    await group.lead()
    send = asyncio.ensure_future(group.put())
    await until(lambda: group.log.last_index == 2)
    group.member.become(Role.FOLLOWER, 5, "n2")
    assert not group.service.writing  # in the same turn as Raft reported it
    assert await send is PutStatus.FLUSH_SLAVE_TIMEOUT
    assert (await group.store.put(PutRequest("T", 0, b"x"))).status is PutStatus.SERVICE_NOT_AVAILABLE


async def test_a_commit_of_another_terms_entry_at_the_same_index_is_no_ack(group: Group) -> None:
    await group.lead()
    send = asyncio.ensure_future(group.put())
    await until(lambda: group.log.last_index == 2)
    group.service._writing_term = None  # as if deposed and the waiters not yet released
    group.log.truncate_after(1)
    group.log.append([Entry(2, 9, b"")])
    group.log.commit(2)
    assert await send is PutStatus.FLUSH_SLAVE_TIMEOUT


async def test_runtime_info_keys(group: Group) -> None:
    await group.lead()
    info = group.service.runtime_info()
    assert info["dLegerGroup"] == "g" and info["dLegerSelfId"] == "n0" and info["dLegerRole"] == "LEADER"
    assert info["dLegerLeaderId"] == "n0" and info["dLegerLeaderAddr"] == "10.0.0.9:10911"
    assert int(info["dLegerTerm"]) == group.member.term
    assert info["dLegerCommitIndex"] == info["dLegerLastIndex"] == "1"
    assert json.loads(info["dLegerPeerMatchIndex"]) == {"n1": 1, "n2": 0}
    group.member.become(Role.FOLLOWER, 9, None)
    info = group.service.runtime_info()
    assert info["dLegerPeerMatchIndex"] == "{}" and info["dLegerLeaderAddr"] == "" and info["dLegerRole"] == "FOLLOWER"


async def test_leadership_transfer_request(group: Group) -> None:
    handler = group.service.handlers()[RequestCode.DLEDGER_LEADERSHIP_TRANSFER]
    refused = await handler(None, RemotingCommand(code=RequestCode.DLEDGER_LEADERSHIP_TRANSFER,  # type: ignore[arg-type]
                                                  ext_fields={"transfereeId": "n1"}))
    assert refused.code == ResponseCode.SYSTEM_ERROR and "not the leader" in (refused.remark or "")
    await group.lead()
    done = await handler(None, RemotingCommand(code=RequestCode.DLEDGER_LEADERSHIP_TRANSFER,  # type: ignore[arg-type]
                                               ext_fields={"transfereeId": "n1"}))
    assert done.code == ResponseCode.SUCCESS and group.member.transfers == ["n1"]
    assert not group.service.writing


def test_slave_broker_ids() -> None:
    assert [slave_broker_id(i) for i in ("n0", "n1", "n12")] == [1, 2, 13]
    with pytest.raises(ValueError):
        slave_broker_id("leader")

"""The broker's side of a DLedger group: writes on the leader only, answers after a majority.

A DLedger broker owns one ``DLedgerService`` in place of the master/slave ``HAService`` and
offers the broker the same surface (``wait_for_slave``, ``status``, ``runtime_info``), so the
send path and the metrics read both the same way. What it adds:

* **The write gate.** The store (``StoreLog`` is its ``AppendHook``) accepts puts only while
  this member is the leader *and* the broker has taken the leader's role: Raft says the leader
  is ready (``leader_term()``: its no-op of the term committed), every entry is committed and
  dispatched, and the queue offsets were reset to the queues' ends. A step-down closes the gate
  in the same loop turn as Raft reports it.
* **Commit waits, grouped.** A stored send waits for its entry index to commit, like
  SYNC_MASTER's ``ReplicaWaiters`` (reused as they are, with entry indexes for offsets): each
  commit releases every waiter it covers. A waiter released by a commit still checks that the
  entry at its index carries the term it was stamped with (a deposed leader's entry may have
  been replaced). Not committed within ``maxWaitAckTimeMs``, or leadership lost first: the send
  gets FLUSH_SLAVE_TIMEOUT, as a SYNC_MASTER's does (the message may still commit).
* **Role following** (RocketMQ's DLedgerRoleChangeHandler). One owned task applies Raft's role
  changes in order through the broker's ``change_role``: LEADER becomes SYNC_MASTER with
  brokerId 0 once the gate may open; FOLLOWER or CANDIDATE becomes SLAVE with brokerId = the
  digits of ``dLegerSelfId`` + 1 (n0 -> 1), which serves reads and copies metadata from the
  leader's broker (the name servers' master address) by the master/slave metadata sync.
* **Leadership transfer** on the broker's remoting port: request code 51005 (DLedger's own
  LEADERSHIP_TRANSFER) with extField ``transfereeId``; SUCCESS once the transferee leads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Final

from rocketq import tasks
from rocketq.broker.settings import BrokerRole
from rocketq.dledger.contract import MemberState, RaftMember, Role
from rocketq.dledger.storelog import StoreLog
from rocketq.ha.role import RoleChange
from rocketq.ha.service import ReplicationStatus
from rocketq.ha.syncwait import ReplicaWaiters
from rocketq.protocol import codes
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import BatchPutRequest, PutRequest, PutResult, PutStatus
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)
_limited = LogLimiter(log, interval=30.0)

READY_POLL_S: Final = 0.02
"""How often a new leader checks whether it may take writes (Raft ready, log dispatched)."""
TRANSFER_TIMEOUT_S: Final = 10.0
"""How long a LEADERSHIP_TRANSFER request waits for the transferee to take over."""
_SELF_ID_NUMBER = re.compile(r"(\d+)$")


def slave_broker_id(self_id: str) -> int:
    """A follower's brokerId: the number ending ``dLegerSelfId`` plus one (n0 -> 1, n2 -> 3)."""
    match = _SELF_ID_NUMBER.search(self_id)
    if match is None:
        raise ValueError(f"dLegerSelfId={self_id!r}: must end in a number (n0, n1, ...) to give a brokerId")
    return int(match.group(1)) + 1


RoleChanger = Callable[[RoleChange], Awaitable[None]]


class DLedgerService:
    def __init__(self, store: MessageStore, raft_log: StoreLog, member: RaftMember, *, group: str, self_id: str,
                 wait_timeout_ms: int, change_role: RoleChanger, leader_addr: Callable[[], str]) -> None:
        self._store = store
        self._log = raft_log
        self._member = member
        self.group = group
        self.self_id = self_id
        self.slave_id = slave_broker_id(self_id)
        self._timeout = wait_timeout_ms / 1000
        self._change_role = change_role
        self._leader_addr = leader_addr
        self.waiters = ReplicaWaiters()
        self._writing_term: int | None = None
        """The term in which this broker took writes as the group's master; None: it does not."""
        self._changed = asyncio.Event()
        self._task = OwnedTask("dledger-role-follower", self._follow_roles)
        self.elections = 0
        """Elections this member started (it became a candidate)."""
        self._last_role: Role | None = None
        raft_log.leader_term = self._stamp_term
        raft_log.on_append = member.appended
        raft_log.on_commit = self.waiters.acknowledge
        raft_log.refusal_remark = "broker role is slave (a DLedger follower): send to the group's leader"
        member.add_role_listener(self._role_changed)

    # --- the surface the broker shares with HAService ----------------------------------------

    sync_master: Final = True
    """Every send waits for its commit (``SendHandlers`` calls ``wait_for_slave``)."""

    @property
    def ha_server_addr(self) -> str:
        return ""  # no HA port: members replicate through Raft's own port

    async def start(self) -> None:
        self._task.start()
        self._changed.set()  # apply the role Raft starts in

    async def close(self) -> None:
        """Stop following roles; waiting sends are answered FLUSH_SLAVE_TIMEOUT. Idempotent."""
        self._writing_term = None
        await self._task.stop()
        self.waiters.release_all()

    async def wait_for_slave(self, requests: list[PutRequest] | BatchPutRequest, result: PutResult) -> PutResult:
        """Hold a stored send until its entry is committed (``requests`` is the HA signature's)."""
        index = result.replication_index
        if not result.appended or index <= 0:
            return result
        term = self._log.term_at(index)
        if await self.waiters.wait(index, self._timeout) and self._log.term_at(index) == term:
            return result
        _limited.warning("commit-timeout", "DLedger: entry %d not committed within %.1f s (or leadership lost): "
                         "answering FLUSH_SLAVE_TIMEOUT", index, self._timeout)
        return dataclasses.replace(result, status=PutStatus.FLUSH_SLAVE_TIMEOUT)

    def status(self) -> ReplicationStatus:
        state = self._member.state()
        writing = self.writing
        peers = len(state.match_index) if writing else int(state.leader_id is not None)
        committed = self._log.committed_end
        return ReplicationStatus(writing, peers, committed, max(0, self._store.max_phy_offset - committed), 0.0,
                                 writing or state.leader_id is not None, "")

    # --- the write gate ------------------------------------------------------------------------

    @property
    def writing(self) -> bool:
        return self._stamp_term() is not None

    def _stamp_term(self) -> int | None:
        term = self._member.leader_term()
        return term if term is not None and term == self._writing_term else None

    def send_refusal(self) -> str | None:
        """Why a send is refused here (SERVICE_NOT_AVAILABLE's remark), None when this broker writes."""
        if self.writing:
            return None
        state = self._member.state()
        if state.leader_id is None:
            return f"DLedger group {self.group} has no leader now (term {state.term}): retry shortly"
        if state.leader_id == self.self_id:
            return f"broker is becoming the leader of DLedger group {self.group}: retry shortly"
        addr = self._leader_addr()
        return (f"broker role is slave (DLedger follower {self.self_id}); the leader of group {self.group} is "
                f"{state.leader_id}" + (f" at {addr}" if addr else ""))

    # --- role following ----------------------------------------------------------------------

    def _role_changed(self, state: MemberState) -> None:
        if state.role is Role.CANDIDATE and self._last_role is not Role.CANDIDATE:
            self.elections += 1
        self._last_role = state.role
        if state.role is not Role.LEADER or state.term != self._writing_term:
            if self._writing_term is not None:
                log.warning("DLedger: %s is no longer the writing leader (now %s, term %d)", self.self_id,
                            state.role.value, state.term)
            self._writing_term = None
            self.waiters.release_all()
        self._changed.set()

    async def _follow_roles(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            state = self._member.state()
            if state.role is Role.LEADER:
                term = await self._until_ready()
                if term is None:
                    continue  # no longer the leader: the listener set _changed again
                self._store.reset_pending_offsets()
                self._writing_term = term
                log.warning("DLedger: %s leads group %s in term %d: taking writes as brokerId 0", self.self_id,
                            self.group, term)
                await self._change_role(RoleChange(BrokerRole.SYNC_MASTER, codes.MASTER_ID))
            else:
                await self._change_role(RoleChange(BrokerRole.SLAVE, self.slave_id))

    async def _until_ready(self) -> int | None:
        """The term once Raft says this leader is ready and every entry is dispatched; None
        when leadership is lost first."""
        while True:
            term = self._member.leader_term()
            if term is not None and self._log.all_dispatched():
                return term
            if self._member.state().role is not Role.LEADER:
                return None
            await tasks.wait_event(self._changed, READY_POLL_S)
            if self._member.state().role is not Role.LEADER:
                return None

    # --- visible state -----------------------------------------------------------------------

    def runtime_info(self) -> dict[str, str]:
        """The DLedger keys of GET_BROKER_RUNTIME_INFO (the operator reads them by these names)."""
        state = self._member.state()
        leader = state.role is Role.LEADER
        return {
            "dLegerGroup": self.group,
            "dLegerSelfId": self.self_id,
            "dLegerRole": state.role.value,
            "dLegerTerm": str(state.term),
            "dLegerLeaderId": state.leader_id or "",
            "dLegerLeaderAddr": self._leader_addr() if state.leader_id else "",
            "dLegerCommitIndex": str(state.commit_index),
            "dLegerLastIndex": str(state.last_index),
            "dLegerPeerMatchIndex": json.dumps(dict(sorted(state.match_index.items())) if leader else {}),
        }

    def state(self) -> MemberState:
        return self._member.state()

    # --- leadership transfer -----------------------------------------------------------------

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.DLEDGER_LEADERSHIP_TRANSFER: self._transfer}

    async def _transfer(self, _conn: Connection, request: RemotingCommand) -> RemotingCommand:
        transferee = request.ext_fields.get("transfereeId", "").strip()
        state = self._member.state()
        if not transferee:
            return request.response(ResponseCode.SYSTEM_ERROR, "transfereeId is missing")
        if state.role is not Role.LEADER:
            return request.response(ResponseCode.SYSTEM_ERROR, f"{self.self_id} is not the leader of group "
                                    f"{self.group} (the leader is {state.leader_id or 'unknown'})")
        if transferee == self.self_id:
            return request.response(ResponseCode.SYSTEM_ERROR, f"{transferee} already leads group {self.group}")
        log.warning("DLedger: transferring leadership of group %s from %s to %s", self.group, self.self_id, transferee)
        # a task of its own: the remoting layer runs a handler's first step outside any task,
        # and the member times its wait with asyncio.timeout, which needs one
        moved = asyncio.get_running_loop().create_task(self._member.transfer_leadership(transferee, TRANSFER_TIMEOUT_S))
        if not await moved:
            return request.response(ResponseCode.SYSTEM_ERROR, f"leadership of group {self.group} did not move to "
                                    f"{transferee} within {TRANSFER_TIMEOUT_S:.0f} s")
        return request.response(ResponseCode.SUCCESS)

"""A member of a DLedger group: the Raft state machine behind ``contract.RaftMember``.

:class:`RaftNode` owns the member's term and vote (``termstore``), its role, its peer port
(``transport``) and, while it leads, one replication dispatcher and one heartbeat loop per
follower (``replication``). Everything that changes its state happens on the event loop in
one synchronous step per message or timer, so no two changes interleave.

- **Follower**: answers votes (``election``), heartbeats and pushes; commits what the leader
  committed, up to where its log is known to match the leader's. After the election timeout
  plus a random delay without a leader it campaigns (pre-vote first).
- **Leader**: appends an empty no-op entry of its term and replicates; it is *ready*
  (``leader_term()`` is its term) once that no-op is committed, because only then does it know
  every entry committed before it is committed in its log too. It steps down when no majority
  has answered it for the election timeout, so a leader cut off in a minority stops accepting
  writes within that time. Every second it checks the preferred leader (``preferredLeaderId``)
  and hands over to it once that member has caught up.
- **Leadership transfer**: the leader stops taking writes, waits until the target holds its
  whole log, then sends it TIMEOUT_NOW; the target campaigns at once, without pre-vote, and
  voters grant it even though they just heard from the (old) leader.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Final

from rocketq.dledger import election, replication, transport, wire
from rocketq.dledger.contract import Entry, MemberState, RaftLog, Role, RoleListener
from rocketq.dledger.settings import DLedgerSettings
from rocketq.dledger.termstore import TermStore, TermVote
from rocketq.ha.syncwait import ReplicaWaiters
from rocketq.tasks import OwnedTask, wait_event

log = logging.getLogger(__name__)

PREFERRED_CHECK_INTERVAL: Final = 1.0
"""Seconds between a leader's looks at the preferred leader (DLedger checks every second)."""
LEASE_CHECKS_PER_HEARTBEAT: Final = 2


@dataclass(slots=True)
class _Leadership:
    """What a leader keeps for the term it leads."""

    term: int
    noop_index: int
    match: dict[str, int]
    last_ack: dict[str, float]
    waiters: ReplicaWaiters = field(default_factory=ReplicaWaiters)
    dispatchers: dict[str, replication.Dispatcher] = field(default_factory=dict)
    ready: bool = False
    transferee: str | None = None


class RaftNode:
    """One member of a DLedger group (implements ``contract.RaftMember``)."""

    def __init__(
        self,
        settings: DLedgerSettings,
        raft_log: RaftLog,
        state_dir: str | os.PathLike[str],
        *,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.group = settings.group()
        self.self_id = self.group.self_id
        self.log = raft_log
        self._rng = rng or random.Random()
        self._clock = clock
        self._terms = TermStore(state_dir)
        saved = self._terms.load()
        self._term = saved.term
        self._voted_for = saved.voted_for
        self._role = Role.FOLLOWER
        self._leader_id: str | None = None
        self._commit_index = raft_log.committed_index
        self._matched = self._commit_index
        """Follower: entries up to here are known to be the current leader's too."""
        self._last_contact = -math.inf
        self._election_due = 0.0
        self._take_over = False
        self._leadership: _Leadership | None = None
        self._leader_tasks: set[asyncio.Task[None]] = set()
        self._listeners: list[RoleListener] = []
        self._notified: tuple[object, ...] = ()
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        self.elections = 0
        """Elections this member started (real votes, not pre-votes): a metric."""
        me = self.group.me
        self._server = transport.PeerServer(me.host, me.port, self._handle)
        self._clients = {p.member_id: transport.PeerClient(p.host, p.port) for p in self.group.others}
        self._election_task = OwnedTask(f"dledger-election-{self.self_id}", self._election_loop)
        self._preferred_task = OwnedTask(f"dledger-preferred-{self.self_id}", self._preferred_loop)

    # --- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on the peer port, then take part in elections."""
        await self._server.start()
        self._election_due = self._clock() + election.vote_delay(self.settings, self._rng)
        self._election_task.start()
        self._preferred_task.start()

    async def close(self) -> None:
        """Stop everything this member runs; safe to call twice."""
        await self._election_task.stop()
        await self._preferred_task.stop()
        self._end_leadership()
        tasks, self._leader_tasks = self._leader_tasks, set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.close()
        for client in self._clients.values():
            await client.close()

    # --- RaftMember -------------------------------------------------------------------------

    def state(self) -> MemberState:
        lead = self._leadership
        return MemberState(self.self_id, self._role, self._term, self._leader_id, self._commit_index,
                           self.log.last_index, dict(lead.match) if lead else {})

    def add_role_listener(self, listener: RoleListener) -> None:
        self._listeners.append(listener)

    def leader_term(self) -> int | None:
        lead = self._leadership
        if lead is None or not lead.ready or lead.transferee is not None:
            return None
        return lead.term

    def appended(self) -> None:
        lead = self._leadership
        if lead is not None:
            for dispatcher in lead.dispatchers.values():
                dispatcher.wake.set()
            self._advance_commit(lead)

    async def wait_committed(self, index: int, timeout: float) -> bool:
        lead = self._leadership
        if lead is None:
            return False
        return await lead.waiters.wait(index, timeout)

    async def transfer_leadership(self, to_id: str, timeout: float) -> bool:
        lead = self._leadership
        if lead is None or lead.transferee is not None:
            return False
        if to_id == self.self_id:
            return True
        if to_id not in lead.match:
            return False
        lead.transferee = to_id
        self._notify()  # writes stop: leader_term() is None while transferring
        try:
            async with asyncio.timeout(timeout):
                await self._until(lambda: self._leadership is not lead or lead.match[to_id] >= self.log.last_index)
                if self._leadership is not lead:
                    return False
                log.info("DLedger %s: handing leadership of term %d to %s", self.self_id, lead.term, to_id)
                answer = await self._clients[to_id].call(
                    wire.TimeoutNow(lead.term, self.group.name, self.self_id), self.settings.rpc_timeout)
                if not answer.ok:
                    return False
                await self._until(lambda: self._leader_id == to_id and self._term > lead.term)
                return True
        except (TimeoutError, transport.PeerUnavailable):
            return False
        finally:
            if self._leadership is lead:
                lead.transferee = None
                self._notify()

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            self._changed.clear()
            await self._changed.wait()

    # --- state changes ----------------------------------------------------------------------

    def _notify(self) -> None:
        """Tell listeners about a new role, term, leader or readiness (each change once)."""
        self._changed.set()
        snapshot = (self._role, self._term, self._leader_id, self.leader_term())
        if snapshot == self._notified:
            return
        self._notified = snapshot
        state = self.state()
        for listener in list(self._listeners):
            try:
                listener(state)
            except Exception:
                log.exception("DLedger role listener failed")

    def _save(self, term: int, voted_for: str | None) -> None:
        """Move to ``term`` (and vote), on disk first; a newer term makes this member a follower."""
        self._terms.save(TermVote(term, voted_for))
        newer = term > self._term
        self._term, self._voted_for = term, voted_for
        if newer:
            self._become_follower(leader_id=None)

    def _adopt_term(self, term: int) -> None:
        if term > self._term:
            self._save(term, None)

    def _become_follower(self, leader_id: str | None) -> None:
        if self._role is Role.LEADER:
            log.info("DLedger %s: leader of term %d steps down", self.self_id, self._term)
        self._end_leadership()
        self._role = Role.FOLLOWER
        if leader_id != self._leader_id:
            self._leader_id = leader_id
            self._matched = self._commit_index  # nothing past the commit index is known to match a new leader
        self._notify()

    def _end_leadership(self) -> None:
        lead, self._leadership = self._leadership, None
        if lead is None:
            return
        # Deposed by a newer term: its leader is probably speaking soon, give it the full timeout.
        self._contact(self._clock())
        self._changed.set()  # a transfer waiting on this leadership gives up now
        lead.waiters.release_all()
        for task in self._leader_tasks:
            task.cancel()

    def _contact(self, now: float) -> None:
        """Heard from the leader (or granted a vote): the next election waits a full timeout."""
        self._last_contact = now
        self._election_due = now + self.settings.election_timeout + election.vote_delay(self.settings, self._rng)

    def _heard_from_leader(self, now: float) -> bool:
        if self._role is Role.LEADER:
            return True
        return self._leader_id is not None and now - self._last_contact < self.settings.election_timeout

    # --- answering peers --------------------------------------------------------------------

    def _handle(self, msg: wire.Request) -> wire.Answer:
        if msg.group != self.group.name:
            raise transport.Refused(f"request for group {msg.group!r}; this member is in {self.group.name!r}")
        if msg.sender not in self._clients:
            raise transport.Refused(f"request from {msg.sender!r}, not a member of group {self.group.name!r}")
        if isinstance(msg, wire.VoteRequest):
            status = self._on_vote(msg)
        elif isinstance(msg, wire.Heartbeat):
            status = self._on_heartbeat(msg)
        elif isinstance(msg, wire.Push):
            status = self._on_push(msg)
        else:
            status = self._on_timeout_now(msg)
        last = self.log.last_index
        return wire.Answer(status, self._term, last, min(self._commit_index, last))

    def _on_vote(self, req: wire.VoteRequest) -> wire.Status:
        now = self._clock()
        if req.term < self._term:
            return wire.Status.EXPIRED_TERM
        if self._heard_from_leader(now) and not req.transfer and req.sender != self._leader_id:
            return wire.Status.HAS_LEADER
        current = election.log_is_current(req.last_term, req.last_index, self.log.last_term, self.log.last_index)
        if req.pre_vote:
            return wire.Status.OK if current else wire.Status.STALE_LOG
        if req.term > self._term:
            self._save(req.term, req.sender if current else None)
        elif self._voted_for is None and current:
            self._save(req.term, req.sender)
        if self._voted_for != req.sender:
            return wire.Status.ALREADY_VOTED if self._voted_for else wire.Status.STALE_LOG
        self._contact(now)
        return wire.Status.OK

    def _follow(self, term: int, leader_id: str) -> wire.Status:
        """A leader of ``term`` spoke: accept it (and its term) unless our term is newer."""
        if term < self._term:
            return wire.Status.EXPIRED_TERM
        self._adopt_term(term)
        if self._role is Role.LEADER:
            log.error("DLedger %s: %s claims term %d, which this member leads", self.self_id, leader_id, term)
            return wire.Status.NOT_READY
        if self._role is Role.CANDIDATE or self._leader_id != leader_id:
            if self._leader_id not in (None, leader_id):
                log.error("DLedger %s: two leaders in term %d (%s, %s)", self.self_id, term, self._leader_id, leader_id)
                return wire.Status.NOT_READY
            self._become_follower(leader_id)
        self._contact(self._clock())
        return wire.Status.OK

    def _follow_commit(self, leader_commit: int) -> None:
        commit = min(leader_commit, self._matched)
        if commit > self._commit_index:
            self._commit_index = commit
            self.log.commit(commit)

    def _on_heartbeat(self, msg: wire.Heartbeat) -> wire.Status:
        status = self._follow(msg.term, msg.sender)
        if status is wire.Status.OK:
            self._follow_commit(msg.commit_index)
        return status

    def _on_push(self, push: wire.Push) -> wire.Status:
        status = self._follow(push.term, push.sender)
        if status is not wire.Status.OK:
            return status
        status, matched = replication.apply_push(self.log, push, self._commit_index)
        if matched is not None:
            self._matched = matched
        self._follow_commit(push.commit_index)
        return status

    def _on_timeout_now(self, msg: wire.TimeoutNow) -> wire.Status:
        status = self._follow(msg.term, msg.sender)
        if status is wire.Status.OK:
            self._take_over = True
            self._election_due = self._clock()
            self._wake.set()
        return status

    # --- elections --------------------------------------------------------------------------

    async def _election_loop(self) -> None:
        lease_check = self.settings.heartbeat_interval / LEASE_CHECKS_PER_HEARTBEAT
        while True:
            now = self._clock()
            if self._role is Role.LEADER:
                lead = self._leadership
                if lead is not None and not self._majority_heard(lead, now):
                    log.warning("DLedger %s: no majority answered for %.1fs; leader of term %d steps down",
                                self.self_id, self.settings.election_timeout, lead.term)
                    self._become_follower(leader_id=None)
                    self._election_due = now + election.vote_delay(self.settings, self._rng)
                await wait_event(self._wake, lease_check)
            elif now < self._election_due:
                await wait_event(self._wake, self._election_due - now)
            else:
                try:
                    await self._campaign()
                except Exception:  # e.g. the log refused the no-op: stay a follower and try again later
                    log.exception("DLedger %s: election attempt failed", self.self_id)
                    self._become_follower(leader_id=None)
                    self._election_due = self._clock() + election.vote_delay(self.settings, self._rng)
            self._wake.clear()

    def _majority_heard(self, lead: _Leadership, now: float) -> bool:
        acks = sorted([now, *lead.last_ack.values()], reverse=True)
        return now - acks[self.group.quorum - 1] < self.settings.election_timeout

    async def _campaign(self) -> None:
        transfer, self._take_over = self._take_over, False
        if not transfer and self._leader_id is not None:
            log.info("DLedger %s: nothing from leader %s for %.1fs", self.self_id, self._leader_id,
                     self.settings.election_timeout)
            self._become_follower(leader_id=None)
        self._election_due = self._clock() + election.vote_delay(self.settings, self._rng)
        if not transfer:
            if not await self._poll(pre_vote=True, transfer=False):
                self._election_due = self._clock() + election.vote_delay(self.settings, self._rng)
                return
            if self._role is not Role.FOLLOWER or self._heard_from_leader(self._clock()):
                return  # a leader showed up while we asked
        self.elections += 1
        self._save(self._term + 1, self.self_id)
        self._role = Role.CANDIDATE
        self._leader_id = None
        self._notify()
        term = self._term
        log.info("DLedger %s: campaigning in term %d%s", self.self_id, term, " (transfer)" if transfer else "")
        won = await self._poll(pre_vote=False, transfer=transfer)
        if won and self._term == term and self._role is Role.CANDIDATE:
            self._become_leader()
        elif self._role is Role.CANDIDATE and self._term == term:
            self._become_follower(leader_id=None)
            self._election_due = self._clock() + election.vote_delay(self.settings, self._rng)

    async def _poll(self, *, pre_vote: bool, transfer: bool) -> bool:
        term = self._term + 1 if pre_vote else self._term
        request = wire.VoteRequest(term, self.group.name, self.self_id, self.log.last_index, self.log.last_term,
                                   pre_vote=pre_vote, transfer=transfer)

        def on_answer(answer: wire.Answer) -> bool:
            if answer.term > self._term and not (pre_vote and answer.ok):
                self._adopt_term(answer.term)
                return False
            return self._term == (term - 1 if pre_vote else term)

        return await election.poll(self._clients.values(), request, self.group.quorum - 1,
                                   self.settings.rpc_timeout, on_answer)

    # --- leading ----------------------------------------------------------------------------

    def _become_leader(self) -> None:
        noop = Entry(self.log.last_index + 1, self._term, b"")
        self.log.append([noop])
        now = self._clock()
        others = self._clients
        lead = _Leadership(self._term, noop.index, {p: 0 for p in others}, {p: now for p in others})
        self._leadership = lead
        self._role = Role.LEADER
        self._leader_id = self.self_id
        log.info("DLedger %s: leader of term %d (no-op at index %d)", self.self_id, lead.term, noop.index)
        for peer_id, client in others.items():
            dispatcher = replication.Dispatcher(
                self, self.log, client, term=lead.term, group=self.group.name, self_id=self.self_id,
                peer_id=peer_id, rpc_timeout=self.settings.rpc_timeout,
                idle_interval=self.settings.heartbeat_interval)
            lead.dispatchers[peer_id] = dispatcher
            self._spawn(dispatcher.run(), f"dledger-push-{self.self_id}-{peer_id}")
            self._spawn(self._heartbeats(lead, peer_id, client), f"dledger-heartbeat-{self.self_id}-{peer_id}")
        self._advance_commit(lead)
        self._notify()

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._leader_tasks.add(task)
        task.add_done_callback(self._leader_task_done)

    def _leader_task_done(self, task: asyncio.Task[None]) -> None:
        self._leader_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # Replication to this follower stopped: better to let another member lead.
            log.error("DLedger %s: %s died; stepping down", self.self_id, task.get_name(), exc_info=task.exception())
            if self._role is Role.LEADER:
                self._become_follower(leader_id=None)

    async def _heartbeats(self, lead: _Leadership, peer_id: str, client: transport.PeerClient) -> None:
        interval = self.settings.heartbeat_interval
        while self._leadership is lead:
            started = self._clock()
            beat = wire.Heartbeat(lead.term, self.group.name, self.self_id, self._commit_index)
            # A lost heartbeat needs nothing here: the lease check notices when a majority is gone.
            with contextlib.suppress(transport.PeerUnavailable):
                self.on_answer(peer_id, lead.term, await client.call(beat, self.settings.rpc_timeout))
            await asyncio.sleep(max(0.0, started + interval - self._clock()))

    # replication.Leadership, for the dispatchers

    def leading(self, term: int) -> bool:
        lead = self._leadership
        return lead is not None and lead.term == term

    @property
    def commit_index(self) -> int:
        return self._commit_index

    def on_answer(self, peer_id: str, term: int, answer: wire.Answer) -> None:
        if answer.term > self._term:
            self._adopt_term(answer.term)
            return
        lead = self._leadership
        if lead is not None and lead.term == term:
            lead.last_ack[peer_id] = self._clock()

    def on_match(self, peer_id: str, match_index: int) -> None:
        lead = self._leadership
        if lead is not None:
            lead.match[peer_id] = match_index
            self._advance_commit(lead)
            self._changed.set()

    def _advance_commit(self, lead: _Leadership) -> None:
        index = replication.quorum_index(self.log.last_index, lead.match.values(), self.group.quorum)
        if index <= self._commit_index or self.log.term_at(index) != lead.term:
            return  # an entry of an earlier term commits only with one of ours (Raft §5.4.2)
        self._commit_index = index
        self.log.commit(index)
        lead.waiters.acknowledge(index)
        for dispatcher in lead.dispatchers.values():
            dispatcher.wake.set()
        if not lead.ready and index >= lead.noop_index:
            lead.ready = True
            log.info("DLedger %s: leader of term %d ready for writes at index %d", self.self_id, lead.term, index)
            self._notify()

    # --- preferred leader -------------------------------------------------------------------

    async def _preferred_loop(self) -> None:
        while True:
            await asyncio.sleep(PREFERRED_CHECK_INTERVAL)
            target = self._preferred_target()
            if target is not None:
                await self.transfer_leadership(
                    target, self.settings.leadership_transfer_wait_timeout / 1000)

    def _preferred_target(self) -> str | None:
        """The first preferred member alive and close enough behind to hand leadership to."""
        lead = self._leadership
        preferred = self.group.preferred
        if lead is None or not lead.ready or not preferred or self.self_id in preferred:
            return None
        now = self._clock()
        for member_id in preferred:
            alive = now - lead.last_ack.get(member_id, -math.inf) < self.settings.election_timeout
            lag = self.log.last_index - lead.match.get(member_id, 0)
            if alive and lag < self.settings.max_leadership_transfer_wait_index:
                return member_id
        return None

"""Log replication: one dispatcher per follower on the leader, the push rules on the follower.

A leader runs a :class:`Dispatcher` for each follower (DLedger's EntryDispatcher). It moves
through three states:

- **COMPARE**: find the highest index where the follower's log matches the leader's. Logs that
  match at an index match everywhere below it (Raft's log matching property), so this is a
  binary search between what the follower has committed (committed entries are in every later
  leader's log) and where its log ends; the first probe is the end, which is where an in-sync
  follower answers yes at once.
- **TRUNCATE**: the follower holds entries past the match that the leader does not: a deposed
  leader's uncommitted tail. They go.
- **APPEND**: entries from the match on, in batches of at most ``PUSH_BATCH_BYTES`` of payload
  (at least one entry), one batch in flight at a time. Each acknowledged batch raises the
  follower's match index; when there is nothing to send and the follower has not yet learnt the
  leader's commit index, a COMMIT push tells it.

Any refusal or lost answer sends the dispatcher back to COMPARE, which is cheap when the logs
agree. The leader commits the highest index a majority holds (itself included) once that
entry is of its own term (:func:`quorum_index`); earlier entries commit with it.

On the follower, :func:`apply_push` checks each push against its log: it never truncates a
committed entry and appends only right after the entry the leader named, with that entry's term.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Iterable
from typing import Final, Protocol

from rocketq.dledger import transport, wire
from rocketq.dledger.contract import Entry, RaftLog
from rocketq.ratelimit import LogLimiter
from rocketq.tasks import wait_event

log = logging.getLogger(__name__)
limited = LogLimiter(log)

RETRY_DELAY: Final = 0.2
"""Seconds before a dispatcher tries a follower again after no answer (capped by the heartbeat
interval): short enough that a restarted follower is caught up at once, long enough not to spin
on a dead one."""
PUSH_BATCH_BYTES: Final = 1024 * 1024
"""Payload bytes per APPEND push: large enough to amortise a round trip, small enough to keep
one push well inside maxPushTimeOutMs on a slow link."""


class State(enum.Enum):
    COMPARE = "COMPARE"
    TRUNCATE = "TRUNCATE"
    APPEND = "APPEND"


class Leadership(Protocol):
    """What a dispatcher needs from the leader it works for."""

    def leading(self, term: int) -> bool:
        """Still the leader of ``term``? A dispatcher stops as soon as it is not."""

    @property
    def commit_index(self) -> int: ...

    def on_answer(self, peer_id: str, term: int, answer: wire.Answer) -> None:
        """Any answer from the peer: proof of life, or a newer term that ends this leadership."""

    def on_match(self, peer_id: str, match_index: int) -> None:
        """The peer holds the leader's log up to ``match_index``."""


class Deposed(Exception):
    """The leadership this dispatcher served has ended."""


class Dispatcher:
    def __init__(
        self,
        leader: Leadership,
        log_: RaftLog,
        client: transport.PeerClient,
        *,
        term: int,
        group: str,
        self_id: str,
        peer_id: str,
        rpc_timeout: float,
        idle_interval: float,
    ) -> None:
        self._leader = leader
        self._log = log_
        self._client = client
        self._term = term
        self._group = group
        self._self_id = self_id
        self.peer_id = peer_id
        self._rpc_timeout = rpc_timeout
        self._idle = idle_interval
        self.state = State.COMPARE
        self.match_index = 0
        self._follower_last = 0
        self._follower_commit = 0
        self.wake = asyncio.Event()
        """Set by the leader when there is something new to send (entries or a commit index)."""

    async def run(self) -> None:
        while self._leader.leading(self._term):
            try:
                if self.state is State.COMPARE:
                    await self._compare()
                elif self.state is State.TRUNCATE:
                    await self._truncate()
                else:
                    await self._append_or_wait()
            except transport.PeerUnavailable:
                self.state = State.COMPARE
                await asyncio.sleep(min(RETRY_DELAY, self._idle))
            except _LogGap as gap:
                limited.warning(self.peer_id, "DLedger follower %s needs entry %d, which this leader no "
                                "longer holds; it cannot catch up", self.peer_id, gap.index)
                self.state = State.COMPARE
                await asyncio.sleep(self._idle)
            except Deposed:
                return

    async def _send(self, op: wire.PushOp, index: int, entries: tuple[Entry, ...] = ()) -> wire.Answer:
        index_term = self._log.term_at(index) if op is not wire.PushOp.COMMIT else 0
        if index_term is None:
            raise _LogGap(index)
        push = wire.Push(self._term, self._group, self._self_id, op, index, index_term,
                         self._leader.commit_index, entries)
        answer = await self._client.call(push, self._rpc_timeout)
        self._leader.on_answer(self.peer_id, self._term, answer)
        if answer.term > self._term or not self._leader.leading(self._term):
            raise Deposed
        self._follower_last = answer.last_index
        self._follower_commit = answer.commit_index
        return answer

    async def _compare(self) -> None:
        low, high = 0, self._log.last_index  # entries up to ``low`` match; the match is in low..high
        probe = high
        while low < high:
            answer = await self._send(wire.PushOp.COMPARE, probe)
            if answer.ok:
                low = probe
            else:
                high = probe - 1
            high = min(high, answer.last_index)
            low = max(low, min(answer.commit_index, high))
            # A follower that is merely behind answers no with a shorter log: try its end next.
            probe = high if answer.last_index < probe else (low + high + 1) // 2
        self._matched(low)
        self.state = State.TRUNCATE if self._follower_last > low else State.APPEND

    async def _truncate(self) -> None:
        answer = await self._send(wire.PushOp.TRUNCATE, self.match_index)
        self.state = State.APPEND if answer.ok else State.COMPARE

    async def _append_or_wait(self) -> None:
        next_index = self.match_index + 1
        if next_index <= self._log.last_index:
            entries = tuple(self._log.read(next_index, PUSH_BATCH_BYTES))
            answer = await self._send(wire.PushOp.APPEND, self.match_index, entries)
            if answer.ok:
                self._matched(self.match_index + len(entries))
            else:
                self.state = State.COMPARE
        elif self._follower_commit < min(self._leader.commit_index, self.match_index):
            before = self._follower_commit
            await self._send(wire.PushOp.COMMIT, 0)
            if self._follower_commit <= before:
                self.state = State.COMPARE  # it forgot where it matches us (a restart): find out again
        else:
            self.wake.clear()
            await wait_event(self.wake, self._idle)

    def _matched(self, index: int) -> None:
        self.match_index = index
        self._leader.on_match(self.peer_id, index)


class _LogGap(Exception):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def quorum_index(leader_last: int, matches: Iterable[int], quorum: int) -> int:
    """The highest index held by ``quorum`` members, the leader (holding ``leader_last``) included."""
    ordered = sorted([leader_last, *matches], reverse=True)
    return ordered[quorum - 1]


def apply_push(log_: RaftLog, push: wire.Push, commit_index: int) -> tuple[wire.Status, int | None]:
    """Apply a push from the current leader: (status, index the log now matches the leader to,
    None when the push says nothing about that)."""
    if push.op is wire.PushOp.COMMIT:
        return wire.Status.OK, None
    if log_.term_at(push.index) != push.index_term:
        return wire.Status.INCONSISTENT, None
    if push.op is wire.PushOp.COMPARE:
        return wire.Status.OK, push.index
    if push.op is wire.PushOp.TRUNCATE:
        if push.index < commit_index:
            log.error("DLedger leader asked to truncate after %d, below the commit index %d; refused",
                      push.index, commit_index)
            return wire.Status.INCONSISTENT, None
        if log_.last_index > push.index:
            log_.truncate_after(push.index)
        return wire.Status.OK, push.index
    if push.index != log_.last_index:
        return wire.Status.INCONSISTENT, None  # a retransmission or a gap: the leader compares again
    if push.entries:
        log_.append(push.entries)
    return wire.Status.OK, push.index + len(push.entries)

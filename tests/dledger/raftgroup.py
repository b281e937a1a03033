"""A DLedger group of RaftNodes in one event loop, over real loopback TCP, for the Raft tests.

Each member keeps its MemLog and state directory across restarts (they are its "disk").
``cut`` isolates a member: every request to or from it fails as if the network were down, while
its own timers keep running (so it campaigns, as a partitioned member does).

``faults`` (a :class:`Faults`, None for a clean network) makes each call between two members
meet a seeded random fate on top of the cuts:

- the request is lost (the caller gets PeerUnavailable; the peer never sees it);
- the request is delayed before it is sent, so a later call between the same two members
  (a heartbeat, a push, a vote: each runs in its own task) can overtake it;
- the peer handles the request but its answer is lost: the peer changed its state (granted a
  vote, appended, truncated) and the caller believes nothing happened;
- the answer is delayed.

The caller's timeout covers all of it: a delay that outlasts it is a lost request or answer.
Each caller's own requests stay in order, as on the one TCP connection between two members
(the transport drops requests of an older connection, so TCP never reorders them for Raft).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memlog import MemLog

from rocketq.dledger import transport, wire
from rocketq.dledger.contract import Entry, Role
from rocketq.dledger.node import RaftNode
from rocketq.dledger.settings import DLedgerSettings
from rocketq.local.ports import free_port

FAST = {
    "heart_beat_time_interval_ms": 100,
    "max_heart_beat_leak": 3,
    "min_vote_interval_ms": 50,
    "max_vote_interval_ms": 200,
    "max_push_time_out_ms": 500,
    "leadership_transfer_wait_timeout": 3000,
}
"""Short timing for tests: a leader is missed after 300 ms; generous RPC timeouts for a busy box."""
LOST_AFTER = 0.05
"""Seconds a call to a cut member, or whose request is lost, takes to fail: long enough not to
spin, far shorter than an RPC timeout so that the tests do not wait for nothing."""


@dataclass(frozen=True, slots=True)
class Faults:
    """The chance of each fault per call (request and answer drawn independently)."""

    drop_request: float = 0.0
    delay_request: float = 0.0
    drop_answer: float = 0.0
    delay_answer: float = 0.0
    max_delay: float = 0.0
    """Seconds: each delay is uniform in 0..max_delay."""


async def until(condition: Callable[[], object], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


class RaftGroup:
    def __init__(self, root: Path, size: int = 3, *, faults: Faults | None = None, seed: int = 0,
                 **timing: object) -> None:
        self.ids = [f"n{i}" for i in range(size)]
        self.peers = ";".join(f"{i}-127.0.0.1:{free_port()}" for i in self.ids)
        self.timing = {**FAST, **timing}
        self.root = root
        self.logs = {i: MemLog() for i in self.ids}
        self.nodes: dict[str, RaftNode] = {}
        self._cut: set[str] = set()
        self.faults = faults
        """Message faults now in force (None: only cuts); may be changed at any time."""
        self.seed = seed
        self._rng = random.Random(seed)
        self.fault_counts: Counter[str] = Counter()
        """How often each message fault struck (keys: the Faults field names)."""

    def settings(self, member_id: str) -> DLedgerSettings:
        return DLedgerSettings(dleger_group="g", dleger_peers=self.peers, dleger_self_id=member_id,
                               **self.timing)  # type: ignore[arg-type]

    async def start(self, member_id: str | None = None) -> None:
        for i in [member_id] if member_id else self.ids:
            node = RaftNode(self.settings(i), self.logs[i], self.root / i, rng=random.Random(self._rng.random()))
            self.nodes[i] = node
            self._wire_cuts(node)
            await node.start()

    async def stop(self, member_id: str) -> None:
        await self.nodes.pop(member_id).close()

    async def close(self) -> None:
        for node in list(self.nodes.values()):
            await node.close()
        self.nodes.clear()

    def running(self) -> list[RaftNode]:
        return list(self.nodes.values())

    def leaders(self) -> list[RaftNode]:
        return [n for n in self.nodes.values() if n.state().role is Role.LEADER]

    def ready_leader(self) -> RaftNode | None:
        ready = [n for n in self.nodes.values() if n.leader_term() is not None and n.self_id not in self._cut]
        return ready[0] if len(ready) == 1 else None

    async def wait_leader(self, timeout: float = 15.0) -> RaftNode:
        await until(lambda: self.ready_leader() is not None, timeout, "a ready leader")
        leader = self.ready_leader()
        assert leader is not None
        return leader

    # --- network cuts -----------------------------------------------------------------------

    def cut(self, member_id: str) -> None:
        self._cut.add(member_id)

    def heal(self, member_id: str) -> None:
        self._cut.discard(member_id)

    def _wire_cuts(self, node: RaftNode) -> None:
        for peer_id, client in node._clients.items():
            client.call = self._guarded(node.self_id, peer_id, client.call)  # type: ignore[method-assign]

    def _guarded(self, src: str, dst: str, call: Callable[..., object]) -> Callable[..., object]:
        async def guarded(request: wire.Request, timeout: float) -> wire.Answer:
            if src in self._cut or dst in self._cut:
                await asyncio.sleep(min(timeout, LOST_AFTER))
                raise transport.PeerUnavailable(f"{src} -> {dst} is cut")
            if self.faults is None:
                return await call(request, timeout)  # type: ignore[no-any-return, misc]
            return await self._faulty(self.faults, f"{src} -> {dst}", call, request, timeout)
        return guarded

    async def _faulty(self, faults: Faults, line: str, call: Callable[..., object], request: wire.Request,
                      timeout: float) -> wire.Answer:
        """One call meeting the fault model (drawn up front, so one seed gives one sequence of fates)."""
        rng = self._rng
        lose_request = rng.random() < faults.drop_request
        request_delay = rng.uniform(0, faults.max_delay) if rng.random() < faults.delay_request else 0.0
        lose_answer = rng.random() < faults.drop_answer
        answer_delay = rng.uniform(0, faults.max_delay) if rng.random() < faults.delay_answer else 0.0
        if lose_request:
            self.fault_counts["drop_request"] += 1
            await asyncio.sleep(min(timeout, LOST_AFTER))
            raise transport.PeerUnavailable(f"{line}: request lost")
        self.fault_counts.update({"delay_request": request_delay > 0, "drop_answer": lose_answer,
                                  "delay_answer": answer_delay > 0 and not lose_answer})
        try:
            async with asyncio.timeout(timeout):
                await asyncio.sleep(request_delay)
                answer: wire.Answer = await call(request, timeout)  # type: ignore[misc]
                if lose_answer:  # the peer has acted on the request; only its answer is gone
                    raise transport.PeerUnavailable(f"{line}: answer lost")
                await asyncio.sleep(answer_delay)
                return answer
        except TimeoutError:
            raise transport.PeerUnavailable(f"{line}: no answer within {timeout:.3f}s") from None


async def write(node: RaftNode, payloads: list[bytes]) -> int:
    """Append ``payloads`` as the broker does on a leader; the index of the last one."""
    term = node.leader_term()
    assert term is not None, f"{node.self_id} is not a ready leader"
    start = node.log.last_index + 1
    node.log.append([Entry(start + k, term, p) for k, p in enumerate(payloads)])
    node.appended()
    return start + len(payloads) - 1

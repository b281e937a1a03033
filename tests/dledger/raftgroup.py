"""A DLedger group of RaftNodes in one event loop, over real loopback TCP, for the Raft tests.

Each member keeps its MemLog and state directory across restarts (they are its "disk").
``cut`` isolates a member: every request to or from it fails as if the network were down, while
its own timers keep running (so it campaigns, as a partitioned member does).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
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


async def until(condition: Callable[[], object], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


class RaftGroup:
    def __init__(self, root: Path, size: int = 3, **timing: object) -> None:
        self.ids = [f"n{i}" for i in range(size)]
        self.peers = ";".join(f"{i}-127.0.0.1:{free_port()}" for i in self.ids)
        self.timing = {**FAST, **timing}
        self.root = root
        self.logs = {i: MemLog() for i in self.ids}
        self.nodes: dict[str, RaftNode] = {}
        self._cut: set[str] = set()

    def settings(self, member_id: str) -> DLedgerSettings:
        return DLedgerSettings(dleger_group="g", dleger_peers=self.peers, dleger_self_id=member_id,
                               **self.timing)  # type: ignore[arg-type]

    async def start(self, member_id: str | None = None) -> None:
        for i in [member_id] if member_id else self.ids:
            node = RaftNode(self.settings(i), self.logs[i], self.root / i)
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
                await asyncio.sleep(min(timeout, 0.05))
                raise transport.PeerUnavailable(f"{src} -> {dst} is cut")
            return await call(request, timeout)  # type: ignore[no-any-return, misc]
        return guarded


async def write(node: RaftNode, payloads: list[bytes]) -> int:
    """Append ``payloads`` as the broker does on a leader; the index of the last one."""
    term = node.leader_term()
    assert term is not None, f"{node.self_id} is not a ready leader"
    start = node.log.last_index + 1
    node.log.append([Entry(start + k, term, p) for k, p in enumerate(payloads)])
    node.appended()
    return start + len(payloads) - 1

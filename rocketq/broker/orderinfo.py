"""Orderly POP: which messages of a queue a group holds, and whether the queue is blocked.

An orderly pop (``order=true``) writes no checkpoint. Instead the queue is *locked to its
batch*: until every message the last pop returned is acked, or its invisible time has passed,
further pops of that group skip the queue (a pop carrying the same ``attemptId``, a client's
retry of a lost answer, is let through). The group's committed offset stays at the first
un-acked message, so when the invisible time passes the same messages are popped again, in
order, with their pop count (the reconsume times the client sees) one higher. This is RocketMQ's
``ConsumerOrderInfoManager``, kept per ``(topic, group, queueId)``.

The table is saved to ``config/consumerOrderInfo.json`` (rocketq's own layout, with RocketMQ's
short field names) by the broker's offset flush task and at shutdown; after a crash a batch
whose state was not saved yet is popped again at once (at-least-once, never lost: its offset
was not committed past it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.store import configfiles

log = logging.getLogger(__name__)

Key = tuple[str, str, int]
"""(topic, group, queueId)."""


@dataclass(slots=True)
class OrderInfo:
    pop_time: int
    invisible_time: int
    offsets: list[int]
    next_offset: int
    """Where the group continues once every offset is acked (past messages the filter skipped)."""
    counts: dict[int, int] = field(default_factory=dict)
    """Times each offset was popped before this batch."""
    next_visible: dict[int, int] = field(default_factory=dict)
    """Per-offset next-visible times changed by CHANGE_MESSAGE_INVISIBLETIME."""
    acked: set[int] = field(default_factory=set)
    attempt_id: str | None = None

    def visible_at(self, offset: int) -> int:
        return self.next_visible.get(offset, self.pop_time + self.invisible_time)

    @property
    def done(self) -> bool:
        return all(o in self.acked for o in self.offsets)

    def blocks(self, now_ms: int, attempt_id: str | None) -> bool:
        if attempt_id and attempt_id == self.attempt_id:
            return False
        return any(self.visible_at(o) > now_ms for o in self.offsets if o not in self.acked)

    def commit_offset(self) -> int:
        """The group's offset: the first un-acked message, or past the batch once all are acked."""
        return min((o for o in self.offsets if o not in self.acked), default=self.next_offset)

    def to_json(self) -> dict[str, Any]:
        return {"popTime": self.pop_time, "i": self.invisible_time, "o": self.offsets, "n": self.next_offset,
                "oc": {str(k): v for k, v in self.counts.items()},
                "ot": {str(k): v for k, v in self.next_visible.items()},
                "cm": sorted(self.acked), "a": self.attempt_id}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> OrderInfo:
        return cls(int(raw["popTime"]), int(raw["i"]), [int(o) for o in raw["o"]], int(raw["n"]),
                   {int(k): int(v) for k, v in (raw.get("oc") or {}).items()},
                   {int(k): int(v) for k, v in (raw.get("ot") or {}).items()},
                   {int(o) for o in raw.get("cm") or []}, raw.get("a"))


class OrderInfoTable:
    def __init__(self, path: Path) -> None:
        self._path = path
        self.table: dict[Key, OrderInfo] = {}
        self._dirty = False

    def get(self, key: Key) -> OrderInfo | None:
        return self.table.get(key)

    def put(self, key: Key, info: OrderInfo) -> None:
        self.table[key] = info
        self._dirty = True

    def ack(self, key: Key, offset: int) -> OrderInfo | None:
        """Mark one offset consumed; the info (for the new commit offset), or None if unknown."""
        info = self.table.get(key)
        if info is None or offset not in info.offsets:
            return None
        info.acked.add(offset)
        if info.done:
            del self.table[key]
        self._dirty = True
        return info

    def change_invisible(self, key: Key, offset: int, visible_at: int) -> bool:
        info = self.table.get(key)
        if info is None or offset not in info.offsets or offset in info.acked:
            return False
        info.next_visible[offset] = visible_at
        self._dirty = True
        return True

    def load(self) -> None:
        raw = configfiles.read_json(self._path)
        if not isinstance(raw, dict):
            return
        for key, queues in (raw.get("table") or {}).items():
            topic, _sep, group = str(key).partition("@")
            try:
                for qid, info in queues.items():
                    self.table[(topic, group, int(qid))] = OrderInfo.from_json(info)
            except (AttributeError, KeyError, TypeError, ValueError):
                log.warning("ignoring unreadable order info %r in %s", key, self._path)

    def persist(self, force: bool = False) -> None:
        if not (self._dirty or force):
            return
        out: dict[str, dict[str, Any]] = {}
        for (topic, group, qid), info in self.table.items():
            out.setdefault(f"{topic}@{group}", {})[str(qid)] = info.to_json()
        configfiles.write_json_atomic(self._path, {"table": out})
        self._dirty = False

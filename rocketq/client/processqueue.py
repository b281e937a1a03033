"""ProcessQueue: the messages of one assigned queue that were pulled but are not done yet.

A push consumer pulls a queue ahead of its listener. What was pulled and not yet consumed sits
here, keyed by queue offset, and this is what makes two things work:

- **Flow control.** The pull loop pauses the queue when the cache holds too many messages
  (``pullThresholdForQueue``), too many bytes of bodies (``pullThresholdSizeForQueue``) or
  spans too wide a range of offsets (``consumeConcurrentlyMaxSpan``: one slow message must not
  let the others run arbitrarily far ahead, since the commit point cannot pass it).
- **The commit point.** Messages finish out of order, so the offset that may be committed is
  the smallest offset still here; when nothing is left it is one past the largest offset ever
  put here (``remove`` returns it). Committing anything larger could lose a message on a
  crash; committing this can only redeliver some (at-least-once).

A queue taken away by a rebalance is marked ``dropped``: its pull loop stops and results of
listener calls still running are not committed. This object does no I/O and has no lock: it
is used from one event loop.

For orderly consumption it also carries the state of the queue's broker lock (``locked``,
renewed at ``last_lock_timestamp``, considered lost locally after ``LOCK_MAX_LIVE_TIME``), and
``first`` hands out the oldest messages, in offset order, for the next listener call.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable

from rocketq.protocol.messagetypes import MessageExt

MIB = 1024 * 1024
LOCK_MAX_LIVE_TIME = 30.0
"""Seconds after its last renewal a broker lock is no longer trusted here
(``rocketmq.client.rebalance.lockMaxLiveTime``; the broker keeps it for 60 s)."""


class ProcessQueue:
    def __init__(self) -> None:
        self._messages: dict[int, MessageExt] = {}
        self._offsets: list[int] = []
        self.msg_size = 0
        """Sum of the body lengths of the cached messages."""
        self.queue_offset_max = -1
        self.dropped = False
        self.last_pull_timestamp = time.monotonic()
        self.last_consume_timestamp = time.monotonic()
        self.locked = False
        """Orderly, CLUSTERING: this client holds the queue's lock on its master broker."""
        self.last_lock_timestamp = 0.0

    def lock_expired(self) -> bool:
        return time.monotonic() - self.last_lock_timestamp > LOCK_MAX_LIVE_TIME

    def mark_locked(self, locked: bool) -> None:
        self.locked = locked
        if locked:
            self.last_lock_timestamp = time.monotonic()

    def first(self, count: int) -> list[MessageExt]:
        """The ``count`` lowest-offset messages, in order (orderly consumption's next batch)."""
        return [self._messages[offset] for offset in self._offsets[:count]]

    def replace(self, msg: MessageExt) -> None:
        """Put a changed copy (e.g. a counted-up reconsumeTimes) in place of a cached message."""
        if msg.queue_offset in self._messages:
            self._messages[msg.queue_offset] = msg

    @property
    def msg_count(self) -> int:
        return len(self._offsets)

    @property
    def msg_size_mib(self) -> int:
        return self.msg_size // MIB

    def max_span(self) -> int:
        """Distance between the smallest and largest cached offset (0 when empty)."""
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    def put(self, messages: Iterable[MessageExt]) -> int:
        """Cache pulled messages; returns how many were new (an offset already held is skipped)."""
        added = 0
        for msg in messages:
            offset = msg.queue_offset
            if offset in self._messages:
                continue
            self._messages[offset] = msg
            bisect.insort(self._offsets, offset)
            self.msg_size += len(msg.body)
            self.queue_offset_max = max(self.queue_offset_max, offset)
            added += 1
        self.last_pull_timestamp = time.monotonic()
        return added

    def remove(self, messages: Iterable[MessageExt]) -> int:
        """Forget consumed messages; return the offset to commit, or -1 when nothing was cached."""
        if not self._offsets:
            return -1
        for msg in messages:
            cached = self._messages.pop(msg.queue_offset, None)
            if cached is None:
                continue
            del self._offsets[bisect.bisect_left(self._offsets, msg.queue_offset)]
            self.msg_size -= len(cached.body)
        self.last_consume_timestamp = time.monotonic()
        return self._offsets[0] if self._offsets else self.queue_offset_max + 1

    def clear(self) -> None:
        self._messages.clear()
        self._offsets.clear()
        self.msg_size = 0

    def __contains__(self, offset: int) -> bool:
        return offset in self._messages

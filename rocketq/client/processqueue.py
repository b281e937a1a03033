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

The cache is one dict kept in ascending offset order (a pull answers a queue's messages in
order, each pull after the last), so its first key is the commit point and its last the top of
the span, with no sorted index beside it: ``put`` and ``remove`` cost one dict operation per
message. A put that would break the order (a message re-cached below others) re-sorts the dict.
With the native codecs those two loops over a batch run in C (``_native.cache_put`` and
``cache_remove``: the same dict operations in the same order); ``_put_each`` and
``_remove_each`` are the reference.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable

from rocketq.protocol import nativecodecs
from rocketq.protocol.messagetypes import MessageExt

MIB = 1024 * 1024
LOCK_MAX_LIVE_TIME = 30.0
"""Seconds after its last renewal a broker lock is no longer trusted here
(``rocketmq.client.rebalance.lockMaxLiveTime``; the broker keeps it for 60 s)."""


class ProcessQueue:
    def __init__(self) -> None:
        self._messages: dict[int, MessageExt] = {}
        """Cached messages by queue offset, in ascending offset order."""
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
        return list(itertools.islice(self._messages.values(), count))

    def replace(self, msg: MessageExt) -> None:
        """Put a changed copy (e.g. a counted-up reconsumeTimes) in place of a cached message."""
        if msg.queue_offset in self._messages:
            self._messages[msg.queue_offset] = msg

    @property
    def msg_count(self) -> int:
        return len(self._messages)

    @property
    def msg_size_mib(self) -> int:
        return self.msg_size // MIB

    def max_span(self) -> int:
        """Distance between the smallest and largest cached offset (0 when empty)."""
        cached = self._messages
        return next(reversed(cached)) - next(iter(cached)) if cached else 0

    def within(self, count: int, size_mib: int, span: int | None) -> bool:
        """Flow control's limits in one call: at most ``count`` messages, ``size_mib`` MiB of
        bodies (as ``msg_size_mib``) and, unless ``span`` is None, ``span`` between the smallest
        and largest offset (as ``max_span``)."""
        cached = self._messages
        if len(cached) > count or self.msg_size // MIB > size_mib:
            return False
        return span is None or not cached or next(reversed(cached)) - next(iter(cached)) <= span

    def put(self, messages: Iterable[MessageExt]) -> int:
        """Cache pulled messages; returns how many were new (an offset already held is skipped)."""
        cached = self._messages
        before = len(cached)
        top = next(reversed(cached)) if cached else -1
        if _native is not None and type(messages) is list:
            top, size, in_order = _native.cache_put(cached, messages, top)
        else:
            top, size, in_order = _put_each(cached, messages, top)
        added = len(cached) - before
        if not in_order:
            self._messages = dict(sorted(cached.items()))
        self.msg_size += size
        if top > self.queue_offset_max:
            self.queue_offset_max = top
        self.last_pull_timestamp = time.monotonic()
        return added

    def remove(self, messages: Iterable[MessageExt]) -> int:
        """Forget consumed messages; return the offset to commit, or -1 when nothing was cached."""
        cached = self._messages
        if not cached:
            return -1
        if _native is not None and type(messages) is list:
            self.msg_size -= _native.cache_remove(cached, messages)
        else:
            self.msg_size -= _remove_each(cached, messages)
        self.last_consume_timestamp = time.monotonic()
        return next(iter(cached)) if cached else self.queue_offset_max + 1

    def clear(self) -> None:
        self._messages.clear()
        self.msg_size = 0

    def __contains__(self, offset: int) -> bool:
        return offset in self._messages


def _put_each(cached: dict[int, MessageExt], messages: Iterable[MessageExt], top: int) -> tuple[int, int, bool]:
    """Put each message under its offset unless that offset is held: (the largest offset
    now, the bodies' size added, whether every new offset was above all before it)."""
    size = 0
    in_order = True
    for msg in messages:
        offset = msg.queue_offset
        if offset > top:  # the usual case: above every cached key, so not one of them
            top = offset
        elif offset in cached:
            continue
        else:
            in_order = False
        cached[offset] = msg
        size += len(msg.body)
    return top, size, in_order


def _remove_each(cached: dict[int, MessageExt], messages: Iterable[MessageExt]) -> int:
    """Take each message's offset out; the size of the bodies that were cached under them."""
    size = 0
    for msg in messages:
        gone = cached.pop(msg.queue_offset, None)
        if gone is not None:
            size += len(gone.body)
    return size


_native = nativecodecs.native

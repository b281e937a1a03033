"""Auto-renew: the proxy keeps the messages a push consumer holds invisible until it answers.

A PushConsumer receives with ``auto_renew`` and no invisible time: it may take as long as its
listener needs. As RocketMQ's proxy (``DefaultReceiptHandleManager``), rocketq pops such
messages with ``defaultInvisibleTimeMills`` (60 s) and remembers each handle per (client,
group). Every ``renewSchedulePeriodMillis`` it looks at them; one whose invisible time ends
within ``renewAheadTimeMillis`` is:

- renewed (CHANGE_MESSAGE_INVISIBLETIME, a new handle kept in place of the old) by the renew
  policy's next step, 1m 3m 5m 10m 30m 1h then 1h again, while it has been held for less than
  ``renewMaxTimeMillis`` (3 h) since it was received;
- past that, given back: its invisible time set to the group's retry delay for its reconsume
  times (the default customized policy, skipping its first two steps as RocketMQ does), and
  forgotten;
- forgotten after ``maxRenewRetryTimes`` failed renewals in a row, or at once when the broker
  calls its handle invalid (it is back in the queue already).

Ack, ChangeInvisibleDuration and the DLQ forward take the message out (``release``) and use
the newest handle: the client only knows the one it received. A client that goes away
(``clear``: termination, stream end, silence; or a scan finding it no longer registered) has
all its held messages set to ``invisibleTimeMillisWhenClear`` (1 s), so another consumer gets
them about a second later instead of after the renewed time.

Times are wall-clock epoch ms, as in the handles (the broker's pop time plus invisible time);
the clock is injectable for tests. The renewer owns its scan task and the tasks of ``clear``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from rocketq.proxy.receipts import ReceiptHandle
from rocketq.proxy.status import Code, ProxyError
from rocketq.ratelimit import LogLimiter

log = logging.getLogger(__name__)

RENEW_STEPS_MS: Final = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
"""RocketMQ's ``RenewStrategyPolicy``: the invisible time of the n-th renewal (the last repeats)."""
MAX_HELD: Final = 100_000
"""Messages held for renewal at once; beyond it a message is not renewed (it expires as usual)."""
RENEW_CONCURRENCY: Final = 16
"""Renewals sent to brokers at once."""

Change = Callable[["Held", int], Awaitable[str]]
"""Set a held message's invisible time (ms) from now; returns the new handle text."""
Key = tuple[str, str]
"""(client id, group)."""


@dataclass(frozen=True, slots=True)
class RenewSettings:
    ahead_ms: int
    max_ms: int
    period_ms: int
    max_retries: int
    clear_ms: int


@dataclass
class Held:
    group: str
    topic: str
    message_id: str
    handle: str
    """The newest handle text."""
    received_ms: int
    reconsume_times: int
    renew_times: int = 0
    failures: int = 0
    busy: asyncio.Future[None] | None = None
    """Set while a change of this message is at a broker: a release waits for it."""
    next_visible_ms: int = 0
    """When the newest handle's invisible time ends (kept, not parsed again at every scan)."""

    def renewed(self, handle: str) -> None:
        self.handle = handle
        self.next_visible_ms = ReceiptHandle.parse(handle).extra.next_visible_time


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def same_message(a: str, b: str) -> bool:
    """Two handles of one message (broker, queue and offset), whatever their checkpoints."""
    try:
        x, y = ReceiptHandle.parse(a).extra, ReceiptHandle.parse(b).extra
    except ProxyError:
        return False
    return (x.broker_name, x.queue_id, x.queue_offset) == (y.broker_name, y.queue_id, y.queue_offset)


class Renewer:
    def __init__(self, settings: RenewSettings, change: Change, retry_delay_ms: Callable[[int], int],
                 alive: Callable[[str], bool], clock: Callable[[], int] = wall_ms) -> None:
        """``retry_delay_ms(reconsume_times)``: the group's retry delay; ``alive(client_id)``:
        whether the client is still registered."""
        self.settings = settings
        self._change = change
        self._retry_delay_ms = retry_delay_ms
        self._alive = alive
        self._clock = clock
        self._held: dict[Key, dict[str, Held]] = {}
        self._count = 0
        self._task: asyncio.Task[None] | None = None
        self._clearing: set[asyncio.Task[None]] = set()
        self._limit = asyncio.Semaphore(RENEW_CONCURRENCY)
        self._warnings = LogLimiter(log)

    def __len__(self) -> int:
        return self._count

    def hold(self, client_id: str, group: str, topic: str, message_id: str, handle: str,
             reconsume_times: int) -> None:
        """Renew this received message until it is released."""
        if self._count >= MAX_HELD:
            self._warnings.warning("full", "%d messages held for renewal: %s will not be renewed", MAX_HELD,
                                   message_id)
            return
        try:
            extra = ReceiptHandle.parse(handle).extra
        except ProxyError:
            return  # never renewable; its ack will say INVALID_RECEIPT_HANDLE
        group_held = self._held.setdefault((client_id, group), {})
        if message_id not in group_held:
            self._count += 1
        group_held[message_id] = Held(group, topic, message_id, handle, extra.pop_time, reconsume_times,
                                      next_visible_ms=extra.next_visible_time)

    async def release(self, client_id: str, group: str, message_id: str, handle: str) -> str | None:
        """Stop renewing a message the client answered; its newest handle, or None if not held."""
        group_held = self._held.get((client_id, group))
        held = group_held.get(message_id) if group_held else None
        if held is None or not same_message(held.handle, handle):
            return None
        if held.busy is not None:
            await asyncio.shield(held.busy)  # the renewal's new handle is the one to use
        if group_held is not None and group_held.pop(message_id, None) is not None:
            self._count -= 1
            if not group_held:
                self._held.pop((client_id, group), None)
        return held.handle

    # --- the scan ---------------------------------------------------------------------------

    def due(self) -> list[tuple[Key, Held]]:
        """Held messages whose invisible time ends within ``renewAheadTimeMillis``."""
        now = self._clock()
        return [(key, held) for key, group_held in self._held.items() for held in group_held.values()
                if held.busy is None and held.next_visible_ms - now <= self.settings.ahead_ms]

    async def scan(self) -> None:
        """One pass: let go of departed clients, renew or give back what is due."""
        for key in [k for k in self._held if not self._alive(k[0])]:
            self._clear_key(key)
        due = self.due()
        await asyncio.gather(*(self._renew(key, held) for key, held in due))

    async def _renew(self, key: Key, held: Held) -> None:
        held.busy = asyncio.get_running_loop().create_future()
        try:
            async with self._limit:
                if self._clock() - held.received_ms >= self.settings.max_ms:
                    await self._give_back(key, held)
                else:
                    await self._extend(key, held)
        finally:
            held.busy.set_result(None)
            held.busy = None

    async def _extend(self, key: Key, held: Held) -> None:
        invisible = RENEW_STEPS_MS[min(held.renew_times, len(RENEW_STEPS_MS) - 1)]
        try:
            held.renewed(await self._change(held, invisible))
        except Exception as exc:
            held.failures += 1
            invalid = isinstance(exc, ProxyError) and exc.code == Code.INVALID_RECEIPT_HANDLE
            if invalid or held.failures >= self.settings.max_retries:
                self._forget(key, held)
            self._warnings.warning(key[0], "renewal of %s for %s failed (%d): %s", held.message_id, key[0],
                                   held.failures, exc)
            return
        held.renew_times += 1
        held.failures = 0

    async def _give_back(self, key: Key, held: Held) -> None:
        self._forget(key, held)
        try:
            await self._change(held, self._retry_delay_ms(held.reconsume_times))
        except Exception as exc:
            self._warnings.warning(key[0], "giving back %s after %d ms failed: %s", held.message_id,
                                   self.settings.max_ms, exc)

    def _forget(self, key: Key, held: Held) -> None:
        group_held = self._held.get(key)
        if group_held is not None and group_held.get(held.message_id) is held:
            del group_held[held.message_id]
            self._count -= 1
            if not group_held:
                del self._held[key]

    # --- a client gone ----------------------------------------------------------------------

    def clear(self, client_id: str) -> None:
        """The client went away: its held messages become visible after ``invisibleTimeMillisWhenClear``."""
        for key in [k for k in self._held if k[0] == client_id]:
            self._clear_key(key)

    def give_back(self, client_id: str, messages: list[Held]) -> None:
        """Received messages the client will never get (its stream broke): no longer held, and
        visible again after ``invisibleTimeMillisWhenClear``."""
        newest = []
        for held in messages:
            group_held = self._held.get((client_id, held.group))
            tracked = group_held.get(held.message_id) if group_held else None
            if tracked is not None and same_message(tracked.handle, held.handle):
                self._forget((client_id, held.group), tracked)
                held = tracked  # it may have been renewed already
            newest.append(held)
        self._clear_soon(newest)

    def _clear_key(self, key: Key) -> None:
        group_held = self._held.pop(key, {})
        self._count -= len(group_held)
        self._clear_soon(list(group_held.values()))

    def _clear_soon(self, held: list[Held]) -> None:
        if not held:
            return
        task = asyncio.get_running_loop().create_task(self._clear_all(held))
        self._clearing.add(task)
        task.add_done_callback(self._clearing.discard)

    async def _clear_all(self, held: list[Held]) -> None:
        async def one(h: Held) -> None:
            if h.busy is not None:
                await asyncio.shield(h.busy)
            async with self._limit:
                try:
                    await self._change(h, self.settings.clear_ms)
                except Exception as exc:  # it comes back after its renewed time instead
                    self._warnings.warning(h.group, "making %s visible again failed: %s", h.message_id, exc)
        await asyncio.gather(*(one(h) for h in held))

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._scan_forever(), name="proxy-auto-renew")

    async def _scan_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.period_ms / 1000)
            try:
                await self.scan()
            except Exception as exc:  # one bad pass must not end renewals for good
                self._warnings.warning("scan", "auto-renew scan failed: %r", exc)

    async def close(self) -> None:
        """Stop renewing; held messages are given back as for a departed client. Idempotent."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for key in list(self._held):
            self._clear_key(key)
        await asyncio.gather(*list(self._clearing), return_exceptions=True)

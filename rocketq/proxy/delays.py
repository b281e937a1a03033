"""DELAY messages: a v2 delivery timestamp sent as the nearest delay level rocketq's brokers have.

RocketMQ 5's proxy writes a DELAY message's ``delivery_timestamp`` into ``TIMER_DELIVER_MS`` and
the broker's timer wheel delivers it at that millisecond. rocketq's brokers have RocketMQ 4's
delay levels only (``messageDelayLevel``, docs/messaging.md), so the proxy sends the message
with the first level whose delay is not shorter than the time left until the timestamp: the
message is never delivered early, and late by at most the gap to that level (with the default
levels: a 7 s delay is delivered after 10 s). A timestamp already past is sent without delay;
one beyond the last level is clamped to it. ``TIMER_DELIVER_MS`` is kept in the properties, so
a consumer still sees the delivery time the producer asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

NO_DELAY = 0


def level_for(delay_ms: int, levels_ms: Sequence[int]) -> int:
    """The 1-based delay level for a wait of ``delay_ms`` (0: none), in any level order."""
    if delay_ms <= 0 or not levels_ms:
        return NO_DELAY
    long_enough = [(ms, level) for level, ms in enumerate(levels_ms, 1) if ms >= delay_ms]
    if long_enough:
        return min(long_enough)[1]
    return max((ms, level) for level, ms in enumerate(levels_ms, 1))[1]

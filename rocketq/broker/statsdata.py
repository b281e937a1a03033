"""VIEW_BROKER_STATS_DATA (315): message counts per topic and per group over the last minute,
hour and day, for ``mqadmin statsAll``.

RocketMQ's ``BrokerStatsManager`` keeps StatsItems named ``TOPIC_PUT_NUMS`` (key: topic) and
``GROUP_GET_NUMS`` (key: ``topic@group``) and answers ``{statsMinute, statsHour, statsDay}``,
each ``{sum, tps, avgpt}``. rocketq counts nothing on the send or pull path: the traffic sampler
(``broker.traffic``) already measures, every sample, how far each topic's max offsets and each
group's committed offsets moved, and ``StatsWindows`` adds those deltas up:

- the minute window from the raw samples of the last ``MINUTE_S`` (a few entries per key);
- the hour and day windows from per-minute buckets, at most ``DAY_MINUTES`` per key, so memory
  stays bounded however long the broker runs.

``tps`` is the window's sum over its length; ``avgpt`` (average time per put or get) is 0, as
rocketq does not time individual messages per topic. A key never seen is SYSTEM_ERROR
"The stats <name> <key> not exist", RocketMQ's answer. Group counts come from committed
offsets, so they trail the consumer by its commit interval.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Mapping
from typing import Final

import orjson

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import ViewBrokerStatsDataRequestHeader
from rocketq.remoting.connection import Connection, Handler

TOPIC_PUT_NUMS: Final = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS: Final = "GROUP_GET_NUMS"
MINUTE_S: Final = 60.0
HOUR_MINUTES: Final = 60
DAY_MINUTES: Final = 24 * 60
MAX_KEYS: Final = 100_000
"""Keys tracked at most (topics plus topic@group pairs); a new key beyond it is not tracked."""


class _Series:
    """One key's counts: raw samples of the last minute, and per-minute buckets of the last day."""

    __slots__ = ("minutes", "recent")

    def __init__(self) -> None:
        self.recent: collections.deque[tuple[float, int]] = collections.deque()
        self.minutes: collections.deque[list[int]] = collections.deque()
        """[minute index, count] pairs, oldest first."""

    def add(self, now: float, count: int) -> None:
        self.recent.append((now, count))
        minute = int(now // 60)
        if self.minutes and self.minutes[-1][0] == minute:
            self.minutes[-1][1] += count
        else:
            self.minutes.append([minute, count])
        self.trim(now)

    def trim(self, now: float) -> None:
        while self.recent and self.recent[0][0] <= now - MINUTE_S:
            self.recent.popleft()
        oldest = int(now // 60) - DAY_MINUTES
        while self.minutes and self.minutes[0][0] <= oldest:
            self.minutes.popleft()

    def window(self, now: float, minutes: int) -> int:
        first = int(now // 60) - minutes
        return sum(count for minute, count in self.minutes if minute > first)


def _stats(total: int, seconds: float) -> dict[str, float | int]:
    return {"sum": total, "tps": round(total / seconds, 2), "avgpt": 0.0}


class StatsWindows:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._series: dict[tuple[str, str], _Series] = {}

    def record(self, put_deltas: Mapping[str, int], get_deltas: Mapping[tuple[str, str], int]) -> None:
        """One traffic sample's deltas: messages put per topic, committed per (group, topic)."""
        now = self._clock()
        for topic, count in put_deltas.items():
            self._add((TOPIC_PUT_NUMS, topic), now, count)
        for (group, topic), count in get_deltas.items():
            self._add((GROUP_GET_NUMS, f"{topic}@{group}"), now, count)

    def _add(self, key: tuple[str, str], now: float, count: int) -> None:
        series = self._series.get(key)
        if series is None:
            if len(self._series) >= MAX_KEYS:
                return
            series = self._series[key] = _Series()
        series.add(now, count)

    def view(self, name: str, key: str) -> dict[str, dict[str, float | int]] | None:
        """RocketMQ's BrokerStatsData JSON for one item, or None when it was never recorded."""
        series = self._series.get((name, key))
        if series is None:
            return None
        now = self._clock()
        series.trim(now)
        minute = sum(count for _, count in series.recent)
        return {"statsMinute": _stats(minute, MINUTE_S),
                "statsHour": _stats(series.window(now, HOUR_MINUTES), HOUR_MINUTES * 60.0),
                "statsDay": _stats(series.window(now, DAY_MINUTES), DAY_MINUTES * 60.0)}

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.VIEW_BROKER_STATS_DATA: self.view_stats}

    async def view_stats(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = ViewBrokerStatsDataRequestHeader.from_ext(request.ext_fields)
        data = self.view(header.stats_name, header.stats_key)
        if data is None:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    f"The stats <{header.stats_name}> <{header.stats_key}> not exist")
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(data))

"""``mqadmin statsAll``: per topic and consumer group, backlog and message rates.

For every topic the name servers know (``%RETRY%``/``%DLQ%`` skipped), or one (``-t``):

- In: VIEW_BROKER_STATS_DATA ``TOPIC_PUT_NUMS``/topic on each master of the topic; InTPS adds
  the masters' last-minute tps, InMsg24Hour their last-day sums;
- the groups consuming it (QUERY_TOPIC_CONSUME_BY_WHO on each master);
- per group: Accumulation, the backlog (Σ brokerOffset - consumerOffset, GET_CONSUME_STATS on the
  masters), and Out from ``GROUP_GET_NUMS``/``topic@group``.

A broker with no stats item for a key yet (nothing counted since it started) answers
SYSTEM_ERROR "... not exist"; that counts as 0, as mqadmin treats it. ``active_only`` keeps the
rows mqadmin's ``-a`` keeps: topics with messages in the last day (and, per group, groups that
consumed some).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketq.admin import adminbodies, cluster
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, BodyError
from rocketq.protocol import codes, headers
from rocketq.protocol.codes import RequestCode, ResponseCode

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


@dataclass(frozen=True, slots=True)
class StatsRow:
    topic: str
    group: str
    """Empty for a topic nobody consumes."""
    accumulation: int
    in_tps: float
    out_tps: float
    in_msg_24h: int
    out_msg_24h: int

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "consumerGroup": self.group, "accumulation": self.accumulation,
                "inTPS": self.in_tps, "outTPS": self.out_tps, "inMsg24Hour": self.in_msg_24h,
                "outMsg24Hour": self.out_msg_24h}


async def broker_stats(admin: AdminClient, addr: str, name: str, key: str) -> tuple[float, int]:
    """(last-minute tps, last-day sum) of one stats item on one broker; (0, 0) when it has none."""
    try:
        response = await admin.call(addr, RequestCode.VIEW_BROKER_STATS_DATA,
                                    headers.ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key))
    except AdminError as exc:
        if exc.code == ResponseCode.SYSTEM_ERROR:
            return 0.0, 0
        raise
    raw = adminbodies.load(response.body, "broker stats data")
    if not isinstance(raw, dict) or not isinstance(raw.get("statsMinute"), dict) \
            or not isinstance(raw.get("statsDay"), dict):
        raise BodyError(f"broker stats data of {name} {key} from {addr} lacks statsMinute/statsDay")
    try:
        return float(raw["statsMinute"].get("tps", 0)), int(raw["statsDay"].get("sum", 0))
    except (TypeError, ValueError):
        raise BodyError(f"broker stats data of {name} {key} from {addr} holds a non-number") from None


async def _summed(admin: AdminClient, masters: list[str], name: str, key: str) -> tuple[float, int]:
    tps, total = 0.0, 0
    for addr in masters:
        one_tps, one_total = await broker_stats(admin, addr, name, key)
        tps, total = tps + one_tps, total + one_total
    return round(tps, 2), total


async def topic_rows(admin: AdminClient, topic: str, *, active_only: bool = False) -> list[StatsRow]:
    _, named = await cluster.route_masters(admin, topic)
    masters = [addr for _, addr in named]
    in_tps, in_total = await _summed(admin, masters, TOPIC_PUT_NUMS, topic)
    groups = sorted({g for addr in masters for g in await admin.consumed_by(addr, topic)})
    if not groups:
        return [] if active_only and in_total == 0 else [StatsRow(topic, "", 0, in_tps, 0.0, in_total, 0)]
    rows = []
    for group in groups:
        out_tps, out_total = await _summed(admin, masters, GROUP_GET_NUMS, f"{topic}@{group}")
        if active_only and (in_total == 0 or out_total == 0):
            continue
        backlog = await cluster.consumer_progress(admin, group, topic, masters=masters)
        rows.append(StatsRow(topic, group, backlog.total_diff, in_tps, out_tps, in_total, out_total))
    return rows


async def stats_all(admin: AdminClient, *, topic: str | None = None, active_only: bool = False) -> list[StatsRow]:
    topics = [topic] if topic else sorted(
        t for t in await admin.all_topics()
        if not t.startswith((codes.RETRY_GROUP_TOPIC_PREFIX, codes.DLQ_GROUP_TOPIC_PREFIX)))
    rows: list[StatsRow] = []
    for name in topics:
        try:
            rows.extend(await topic_rows(admin, name, active_only=active_only))
        except AdminError as exc:
            if exc.code != ResponseCode.TOPIC_NOT_EXIST or topic:
                raise  # a topic deleted while we went through the list is skipped
    return rows

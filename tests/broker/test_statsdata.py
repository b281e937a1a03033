"""VIEW_BROKER_STATS_DATA's windows (``rocketq.broker.statsdata``) on a fake clock."""

from __future__ import annotations

import orjson

from rocketq.broker import statsdata
from rocketq.broker.statsdata import StatsWindows
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import ViewBrokerStatsDataRequestHeader


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_minute_hour_and_day_windows_add_the_sampled_deltas() -> None:
    clock = Clock()
    stats = StatsWindows(clock)
    stats.record({"Orders": 30}, {("cg", "Orders"): 10})
    clock.now += 30 * 60  # half an hour later: out of the minute window, still in the hour
    stats.record({"Orders": 12}, {})
    clock.now += 10
    view = stats.view(statsdata.TOPIC_PUT_NUMS, "Orders")
    assert view is not None
    assert view["statsMinute"] == {"sum": 12, "tps": 0.2, "avgpt": 0.0}
    assert view["statsHour"]["sum"] == 42 and view["statsDay"]["sum"] == 42
    clock.now += 2 * 3600  # the hour has passed, the day has not
    view = stats.view(statsdata.TOPIC_PUT_NUMS, "Orders")
    assert view is not None and (view["statsMinute"]["sum"], view["statsHour"]["sum"], view["statsDay"]["sum"]) == (
        0, 0, 42)
    clock.now += 24 * 3600
    view = stats.view(statsdata.TOPIC_PUT_NUMS, "Orders")
    assert view is not None and view["statsDay"]["sum"] == 0
    group = stats.view(statsdata.GROUP_GET_NUMS, "Orders@cg")
    assert group is not None and group["statsDay"]["sum"] == 0


async def test_the_handler_answers_rocketmqs_shape_or_not_exist() -> None:
    stats = StatsWindows(Clock())
    stats.record({"Orders": 6}, {})

    async def ask(name: str, key: str) -> RemotingCommand:
        header = ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key)
        request = RemotingCommand(code=RequestCode.VIEW_BROKER_STATS_DATA, ext_fields=header.to_ext())
        return await stats.view_stats(None, request)  # type: ignore[arg-type]

    found = await ask(statsdata.TOPIC_PUT_NUMS, "Orders")
    assert found.code == ResponseCode.SUCCESS
    assert orjson.loads(found.body)["statsMinute"]["sum"] == 6
    missing = await ask(statsdata.GROUP_GET_NUMS, "Orders@nobody")
    assert (missing.code, missing.remark) == (ResponseCode.SYSTEM_ERROR,
                                              "The stats <GROUP_GET_NUMS> <Orders@nobody> not exist")

"""Chart samples: the bounded history, a real sampling round, and the charts page's data."""

from __future__ import annotations

import orjson
from aiohttp.test_utils import TestClient

from rocketq.console import history, keys
from rocketq.console.rates import RateMeter, broker_tps

Client = TestClient  # type: ignore[type-arg]


def test_history_is_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(history, "MAX_SERIES", 2)
    samples = history.History()
    for i in range(history.MAX_POINTS + 5):
        samples.add("lag a", i, i)
    samples.add("lag b", 0, 1)
    samples.add("in c", 0, 1)  # a third series: the oldest one goes
    assert samples.group("lag ") == {"b": [(0, 1)]}
    assert samples.group("in ") == {"c": [(0, 1)]}


def test_rates_from_counters() -> None:
    clock = iter([0.0, 10.0, 20.0, 30.0])
    meter = RateMeter(clock=lambda: next(clock))
    assert broker_tps(meter, "b", {"msgPutTotalTodayNow": "100", "msgGetTotalTodayNow": "5"}) == (None, None)
    assert broker_tps(meter, "b", {"msgPutTotalTodayNow": "300", "msgGetTotalTodayNow": "5"}) == (10.0, 0.0)
    # a broker reporting its own TPS (Apache RocketMQ) is believed
    assert broker_tps(meter, "b", {"putTps": "7.5 7.0 6.0", "getTransferedTps": "1.0 1 1"}) == (7.5, 1.0)


async def test_a_sampling_round_feeds_the_charts(admin_console: Client) -> None:
    app = admin_console.app
    sampler = history.Sampler(app[keys.ADMIN], app[keys.HISTORY])
    await sampler.sample()
    await sampler.sample()
    samples = app[keys.HISTORY]
    assert any(name.startswith("broker-a ") for name in samples.group(history.TPS_IN))
    text = await (await admin_console.get("/charts")).text()
    assert text.count('class="chart"') == 3
    data = orjson.loads(text.split('data-series="', 2)[1].split('"', 1)[0].replace("&#34;", '"'))
    assert data == {group: [list(p) for p in points] for group, points in samples.group(history.LAG).items()}

"""Charts: lag per consumer group and messages per second per broker, over the samples the
console took (``rocketq.console.history``). The page carries the series as JSON; the package's
``console.js`` draws them as SVG lines, with no library and nothing from the internet."""

from __future__ import annotations

from typing import Any

import aiohttp_jinja2
import orjson
from aiohttp import web

from rocketq.console import history, keys

routes = web.RouteTableDef()


@routes.get("/charts")
@aiohttp_jinja2.template("charts.html")
async def charts_page(request: web.Request) -> dict[str, Any]:
    samples = request.app[keys.HISTORY]
    charts = [("Consumer lag (messages)", history.LAG), ("Messages in per second", history.TPS_IN),
              ("Messages out per second", history.TPS_OUT)]
    return {"charts": [(title, orjson.dumps(samples.group(prefix)).decode()) for title, prefix in charts],
            "interval": request.app[keys.CONFIG].sample_interval}

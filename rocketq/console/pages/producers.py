"""Producers: the connections of a producer group, as a master of one of its topics sees them
(GET_PRODUCER_CONNECTION_LIST; a producer heartbeats every broker of the topics it sends to)."""

from __future__ import annotations

from typing import Any

import aiohttp_jinja2
from aiohttp import web

from rocketq.admin import clientstatus
from rocketq.console import forms, keys

routes = web.RouteTableDef()


@routes.get("/producers")
@aiohttp_jinja2.template("producers.html")
async def producers_page(request: web.Request) -> dict[str, Any]:
    query = request.query
    if "group" not in query:
        return {"group": "", "topic": "", "connections": None}
    group, topic = forms.group(query), forms.topic(query)
    connections = await clientstatus.producer_connection(request.app[keys.ADMIN], group, topic)
    return {"group": group, "topic": topic, "connections": connections}

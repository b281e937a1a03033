"""Templates: jinja2 over the package's ``templates/``, with what every page needs in its context.

Autoescaping is on for every template: topic names, message bodies and properties come from
producers the console does not trust, and must never become markup.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web

from rocketq.admin import replication, timestamps
from rocketq.console import keys
from rocketq.console.sessions import Session


def setup(app: web.Application) -> None:
    env = aiohttp_jinja2.setup(
        app,
        loader=jinja2.PackageLoader("rocketq.console", "templates"),
        autoescape=jinja2.select_autoescape(default=True),
        undefined=jinja2.StrictUndefined,
        context_processors=[page_context],
    )
    env.filters["when"] = lambda ms: timestamps.human(int(ms)) if ms else ""
    env.filters["size"] = lambda n: replication.size_text(int(n))
    env.filters["tojson_pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)


async def page_context(request: web.Request) -> dict[str, Any]:
    session: Session | None = request.get(keys.SESSION)  # None only if the session guard itself failed
    return {
        "user": session.user if session else None,
        "csrf_token": session.csrf_token if session else "",
        "flashes": session.take_flashes() if session else [],
        "path": request.path,
    }

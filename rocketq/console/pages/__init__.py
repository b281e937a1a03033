"""One module per page group; each exposes ``routes`` (an aiohttp ``RouteTableDef``)."""

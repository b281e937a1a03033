"""The shared /metrics + /health listener, on a free port on 127.0.0.1."""

from __future__ import annotations

import aiohttp
from prometheus_client import CollectorRegistry, Counter

from rocketq.metrics.http import MetricsServer


async def test_serves_its_registry_and_health_and_closes_twice() -> None:
    registry = CollectorRegistry()
    Counter("rocketq_test_things", "things", registry=registry).inc(3)
    healthy = [True]
    server = MetricsServer(registry, lambda: healthy[0], host="127.0.0.1", port=0)
    await server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/metrics") as resp:
                assert resp.status == 200
                assert resp.headers["Content-Type"].startswith("text/plain")
                assert "rocketq_test_things_total 3.0" in await resp.text()
            async with http.get(base + "/health") as resp:
                assert resp.status == 200
            healthy[0] = False
            async with http.get(base + "/health") as resp:
                assert resp.status == 503
            async with http.get(base + "/other") as resp:
                assert resp.status == 404
    finally:
        await server.close()
        await server.close()

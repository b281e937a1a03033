"""gRPC proxy tests: real `rocketq namesrv`, `rocketq broker` and `rocketq proxy` processes on
127.0.0.1 (tests/integration's launcher), driven by the official Python client in a child process.
The cluster's pieces are in proxycluster.py."""

from __future__ import annotations

import asyncio
import pathlib
import sys
from collections.abc import Iterator

import pytest

_SHARED = pathlib.Path(__file__).resolve().parents[1] / "integration"
if str(_SHARED) not in sys.path:
    sys.path.insert(0, str(_SHARED))

from clusterprocs import Processes  # noqa: E402 - importable once the path above is set
from proxycluster import FAST_BROKER, ProxyCluster, create_topics, proxy_json  # noqa: E402
from pyclient import PyClient  # noqa: E402

from rocketq.local.ports import free_port  # noqa: E402


@pytest.fixture(scope="module")
def proxy_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyCluster]:
    """One cluster per test module (each test uses its own topics or groups); clients are per cluster."""
    tmp_path = tmp_path_factory.mktemp("proxy")
    procs = Processes(tmp_path)
    clients: list[PyClient] = []
    try:
        ns = procs.namesrv()
        broker = procs.broker(ns.address, config=FAST_BROKER)
        asyncio.run(create_topics(ns.address, broker.address))
        proxy = procs.start(["proxy", "-n", ns.address, "--grpc-port", str(free_port()),
                             "-c", str(proxy_json(tmp_path))], "proxy")
        proxy.address = proxy.address.replace("0.0.0.0", "127.0.0.1")
        yield ProxyCluster(ns, broker, proxy, tmp_path, clients)
    finally:
        for c in clients:
            c.close()
        procs.stop_all()

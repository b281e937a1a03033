"""gRPC proxy tests: real `rocketq namesrv`, `rocketq broker` and `rocketq proxy` processes on
127.0.0.1 (tests/integration's launcher), driven by the official Python client in a child process."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

_SHARED = pathlib.Path(__file__).resolve().parents[1] / "integration"
if str(_SHARED) not in sys.path:
    sys.path.insert(0, str(_SHARED))

from clusterprocs import Proc, Processes  # noqa: E402 - importable once the path above is set
from pyclient import PyClient  # noqa: E402

from rocketq.admin.adminbodies import GroupConfig  # noqa: E402
from rocketq.admin.client import AdminClient  # noqa: E402
from rocketq.local.ports import free_port  # noqa: E402
from rocketq.protocol.sharedbodies import TopicConfig  # noqa: E402
from rocketq.protocol.topicattributes import MESSAGE_TYPE  # noqa: E402

TOPICS = {"GrpcNormal": "NORMAL", "GrpcFifo": "FIFO", "GrpcDelay": "DELAY", "GrpcTx": "TRANSACTION",
          "GrpcShared": "NORMAL", "GrpcOrderly": "FIFO", "GrpcPresence": "NORMAL", "GrpcRenew": "NORMAL",
          "GrpcBatch": "NORMAL", "GrpcBatchMixed": "NORMAL", "GrpcBatchAck": "NORMAL", "GrpcBatchFifo": "FIFO"}
"""Topics by their ``message.type`` (the client refuses to send a type the route does not accept)."""
ORDERLY_GROUPS = ("grpc-orderly",)
"""Groups created with consumeMessageOrderly: their consumers pop FIFO."""
FAST_BROKER = {"reviveInterval": "200", "messageDelayLevel": "1s 2s 3s 5s", "transactionTimeOut": "2000",
               "transactionCheckInterval": "1000"}
FAST_PROXY = {"defaultInvisibleTimeMills": 4000, "renewAheadTimeMillis": 2500, "renewSchedulePeriodMillis": 500,
              "grpcProxyRelayRequestTimeoutInSeconds": 2}
"""Push consumers' messages renewed within seconds, and a relayed request's wait cut short."""
ROUTE_WAIT_S = 30.0


@dataclass
class ProxyCluster:
    namesrv: Proc
    broker: Proc
    proxy: Proc
    tmp: pathlib.Path
    _clients: list[PyClient]

    @property
    def endpoint(self) -> str:
        return self.proxy.address

    def client(self, *, answer_stacks: bool = False) -> PyClient:
        c = PyClient(self.endpoint, self.tmp / f"pyclient-{len(self._clients)}", answer_stacks=answer_stacks)
        self._clients.append(c)
        return c


async def create_topics(namesrv: str, broker: str, credentials: tuple[str, str] = ("", "")) -> None:
    """The test topics on ``broker``; ``credentials``: an admin account when the broker has ACL on."""
    async with AdminClient(namesrv, access_key=credentials[0], secret_key=credentials[1]) as admin:
        for topic, kind in TOPICS.items():
            await admin.create_topic(broker, TopicConfig(topic, 4, 4, attributes=((MESSAGE_TYPE, kind),)))
        for group in ORDERLY_GROUPS:
            await admin.create_group(broker, GroupConfig(group, consume_message_orderly=True))
        deadline = time.monotonic() + ROUTE_WAIT_S
        for topic in TOPICS:
            while True:
                try:
                    await admin.topic_route(topic)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)


def _proxy_json(tmp: pathlib.Path) -> pathlib.Path:
    conf = tmp / "rmq-proxy.json"
    conf.write_text(json.dumps({"rocketMQClusterName": "DefaultCluster", "messageDelayLevel": "1s 2s 3s 5s",
                                **FAST_PROXY}))
    return conf


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
                             "-c", str(_proxy_json(tmp_path))], "proxy")
        proxy.address = proxy.address.replace("0.0.0.0", "127.0.0.1")
        yield ProxyCluster(ns, broker, proxy, tmp_path, clients)
    finally:
        for c in clients:
            c.close()
        procs.stop_all()


def wait_until(probe: Callable[[], object], timeout: float = 60.0, every: float = 0.5) -> object:
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(every)

"""The gRPC proxy tests' cluster: topics by message type, broker and proxy settings, the
``ProxyCluster`` the ``proxy_cluster`` fixture (conftest.py) yields, and waits.

A module of its own, not conftest.py, so that test modules import it by a name no other
test directory uses (``from conftest import`` picks whichever conftest was imported first
when several test directories are collected in one run)."""

from __future__ import annotations

import asyncio
import json
import pathlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from clusterprocs import Proc  # tests/integration, put on sys.path by conftest.py
from pyclient import PyClient

from rocketq.admin.adminbodies import GroupConfig
from rocketq.admin.client import AdminClient
from rocketq.protocol.sharedbodies import TopicConfig
from rocketq.protocol.topicattributes import MESSAGE_TYPE

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


def proxy_json(tmp: pathlib.Path) -> pathlib.Path:
    conf = tmp / "rmq-proxy.json"
    conf.write_text(json.dumps({"rocketMQClusterName": "DefaultCluster", "messageDelayLevel": "1s 2s 3s 5s",
                                **FAST_PROXY}))
    return conf


def wait_until(probe: Callable[[], object], timeout: float = 60.0, every: float = 0.5) -> object:
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(every)

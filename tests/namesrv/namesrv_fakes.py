"""What the name-server tests send: broker registrations and queries built as a broker builds them."""

from __future__ import annotations

from rocketq.local.ports import free_port
from rocketq.namesrv import registerbodies
from rocketq.namesrv.registerbodies import RegisterBrokerBody
from rocketq.protocol import headers
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.sharedbodies import DataVersion, TopicConfig

__all__ = ["V1", "free_port", "register", "route_query"]

V1 = DataVersion(timestamp=1_700_000_000_000, counter=1)


def register(
    name: str = "broker-a",
    broker_id: int = 0,
    addr: str = "127.0.0.1:10911",
    cluster: str = "DefaultCluster",
    ha: str = "127.0.0.1:10912",
    topics: tuple[str | TopicConfig, ...] = ("TopicTest",),
    version: DataVersion = V1,
    compress: bool = False,
    crc: bool = True,
    heartbeat_timeout_ms: int | None = None,
) -> RemotingCommand:
    configs = tuple(t if isinstance(t, TopicConfig) else TopicConfig(t, 4, 4, 6) for t in topics)
    body = registerbodies.encode_register_body(RegisterBrokerBody(configs, version), compress=compress)
    header = headers.RegisterBrokerRequestHeader(
        broker_name=name, broker_addr=addr, cluster_name=cluster, ha_server_addr=ha, broker_id=broker_id,
        compressed=compress, body_crc32=registerbodies.java_crc32(body) if crc else 0,
        heartbeat_timeout_millis=heartbeat_timeout_ms)
    return RemotingCommand(code=RequestCode.REGISTER_BROKER, ext_fields=header.to_ext(), body=body)


def route_query(topic: str) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC,
                           ext_fields=headers.TopicHeader(topic=topic).to_ext())


"""LOCAL mode: the gRPC endpoint inside a broker process (``grpcServerPort`` in broker.conf).

RocketMQ's broker starts its proxy in LOCAL mode when told to; rocketq starts the same endpoint
when broker.conf sets ``grpcServerPort``, after the broker serves, and stops it before the
broker closes. The proxy keys of rmq-proxy.json may be given in broker.conf too; keys both
know (``namesrvAddr``, ``maxMessageSize``, ``messageDelayLevel``) are the broker's own values.

First slice: the endpoint reaches its broker through loopback remoting, exactly as the CLUSTER
proxy does (routes from the broker's name servers, so the broker needs ``namesrvAddr``); routes
advertise the broker's host (``brokerIP1``, or ``grpcAdvertisedHost``) with the gRPC port.
In-process calls into the broker's handlers would save the loopback hop; not done yet.

ACL: with ``aclEnable=true`` in the same broker.conf, the endpoint checks v2 clients against the
broker's own live table (the same accounts, reloaded with it), and signs its loopback calls with
an account the process makes at start and the broker accepts beside the file's
(``credentials.internal``), as RocketMQ's LOCAL proxy calls its broker unchecked in-process.
The CLUSTER keys for the proxy's account (``enableAclRpcHookForClusterMode``, ...) are not used.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq import settings
from rocketq.broker.server import BrokerServer
from rocketq.proxy import credentials, tls
from rocketq.proxy.server import ProxyServer, certificate_hosts
from rocketq.proxy.settings import ProxyMode, ProxySettings
from rocketq.settings import SettingsError

PORT_KEY = "grpcServerPort"


def local_settings(values: Mapping[str, str], overrides: Mapping[str, str]) -> ProxySettings | None:
    """The LOCAL endpoint's settings from broker.conf, or None when ``grpcServerPort`` is not set."""
    merged = {**values, **overrides}
    if PORT_KEY not in merged:
        return None
    built = settings.build(ProxySettings, merged, overrides={"proxyMode": ProxyMode.LOCAL.value})
    if not built.namesrv_addr:
        raise SettingsError(f"{PORT_KEY} needs namesrvAddr: the LOCAL endpoint finds routes through the name servers")
    return built


class BrokerWithEndpoint:
    """A broker and its LOCAL gRPC endpoint, started and stopped together."""

    def __init__(self, broker: BrokerServer, proxy_settings: ProxySettings) -> None:
        self.broker = broker
        self.proxy_settings = proxy_settings
        self.proxy: ProxyServer | None = None
        # the certificate files are checked here, before the broker binds anything
        self.key_pair = tls.key_pair(proxy_settings, certificate_hosts(proxy_settings, broker.host))
        self.credentials: credentials.Credentials | None = None
        if broker.acl_settings.acl_enable:
            self.credentials, broker.acl_internal = credentials.internal()

    @property
    def address(self) -> str:
        return self.broker.address

    async def start(self) -> None:
        await self.broker.start()
        self.proxy = ProxyServer(self.proxy_settings, local_host=self.broker.host,
                                 acl_settings=self.broker.acl_settings, key_pair=self.key_pair,
                                 credentials=self.credentials, acl_table=self.broker.acl)
        await self.proxy.start()
        if self.broker.metrics_registry is not None:  # the proxy's series on the broker's /metrics
            self.broker.metrics_registry.register(self.proxy.metrics.registry)

    async def close(self) -> None:
        if self.proxy is not None:
            await self.proxy.close()
        await self.broker.close()

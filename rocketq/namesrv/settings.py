"""The name server's settings, read from a namesrv.conf with RocketMQ's key names.

``NamesrvSettings`` is one frozen group: where to listen, where the KV file lives, how often to
look for silent brokers and how long silence may last. Values are checked when the object is
built, so a bad namesrv.conf stops the process at startup with a message naming the key, never
later (every port is range-checked: 0..65535, metricsPort also -1 for off). Keys RocketMQ's
name server knows but rocketq does not use (``rocketmqHome``, ``serverWorkerThreads``, ...) are
reported by the caller as ignored, not rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rocketq import settings
from rocketq.namesrv import kvconfig
from rocketq.protocol import frames
from rocketq.remoting import limits
from rocketq.settings import SettingsError, setting

DEFAULT_LISTEN_PORT: Final = 9876
DEFAULT_METRICS_PORT: Final = settings.PORT_ANY
"""Any free port: RocketMQ's name server has no metrics port, so none is assumed free on a host
that also runs brokers; the chosen one is logged. Kubernetes pods are given a fixed one."""
MIN_FRAME_MAX_LENGTH: Final = 64 * 1024
"""Smaller frames could not carry a registration of even a modest broker."""
MAX_FRAME_MAX_LENGTH: Final = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class NamesrvSettings:
    listen_port: int = setting("listenPort", DEFAULT_LISTEN_PORT,
                               "TCP port for remoting clients and brokers; 0 picks a free one.")
    bind_address: str = setting("bindAddress", "0.0.0.0",
                                "Address the remoting and metrics listeners bind to.")
    kv_config_path: str = setting("kvConfigPath", kvconfig.DEFAULT_PATH,
                                  "File holding PUT_KV_CONFIG values across restarts (~ is expanded).")
    scan_not_active_broker_interval: int = setting(
        "scanNotActiveBrokerInterval", 10_000, "Milliseconds between scans for silent brokers.")
    broker_channel_expired_time: int = setting(
        "brokerChannelExpiredTime", 120_000,
        "Milliseconds a broker may stay silent before its routes are dropped (RocketMQ's "
        "BROKER_CHANNEL_EXPIRED_TIME); a broker's own heartbeatTimeoutMillis takes precedence.")
    frame_max_length: int = setting(
        "frameMaxLength", frames.DEFAULT_MAX_FRAME_SIZE,
        "Largest remoting frame accepted, in bytes (com.rocketmq.remoting.frameMaxLength).")
    metrics_port: int = setting("metricsPort", DEFAULT_METRICS_PORT,
                                "HTTP port for /metrics and /health; 0 = any free port, -1 = off.")
    order_message_enable: bool = setting(
        "orderMessageEnable", False,
        "Add the ORDER_TOPIC_CONFIG KV value of a topic to its route as orderTopicConf.")
    delete_topic_with_broker_registration: bool = setting(
        "deleteTopicWithBrokerRegistration", False,
        "When a master's topic set changes, drop its queues of topics it no longer reports.")

    def __post_init__(self) -> None:
        settings.check_port("listenPort", self.listen_port)
        settings.check_port("metricsPort", self.metrics_port, lowest=settings.PORT_OFF)
        if not self.bind_address:
            raise SettingsError("bindAddress must not be empty")
        if not self.kv_config_path:
            raise SettingsError("kvConfigPath must not be empty")
        _positive("scanNotActiveBrokerInterval", self.scan_not_active_broker_interval)
        _positive("brokerChannelExpiredTime", self.broker_channel_expired_time)
        if not MIN_FRAME_MAX_LENGTH <= self.frame_max_length <= MAX_FRAME_MAX_LENGTH:
            raise SettingsError(f"frameMaxLength={self.frame_max_length}: expected "
                                f"{MIN_FRAME_MAX_LENGTH}..{MAX_FRAME_MAX_LENGTH} bytes")
        if self.listen_port > 0 and self.listen_port == self.metrics_port:
            raise SettingsError(f"listenPort and metricsPort are both {self.listen_port}")
        limits.ConnectionLimits(self.server_channel_max_idle_time_seconds, self.server_max_connections)  # checks

    @property
    def scan_interval_s(self) -> float:
        return self.scan_not_active_broker_interval / 1000

    @property
    def broker_timeout_s(self) -> float:
        return self.broker_channel_expired_time / 1000

    server_channel_max_idle_time_seconds: int = setting(
        "serverChannelMaxIdleTimeSeconds", limits.DEFAULT_IDLE_SECONDS,
        "Seconds without traffic after which a connection is closed; 0 never.")
    server_max_connections: int = setting(
        "serverMaxConnections", 0,
        "Connections open at once; 0 = the open-file limit less a reserve (rocketq).")

    @property
    def connection_limits(self) -> limits.ConnectionLimits:
        return limits.ConnectionLimits(self.server_channel_max_idle_time_seconds, self.server_max_connections)


def _positive(key: str, value: int) -> None:
    if value <= 0:
        raise SettingsError(f"{key}={value}: expected a positive number of milliseconds")

"""The gRPC proxy's settings: RocketMQ proxy's key names, read from rmq-proxy.json.

RocketMQ's proxy reads ``conf/rmq-proxy.json``, a JSON object of ProxyConfig fields (the shipped
one is ``{"rocketMQClusterName": "DefaultCluster"}``). rocketq reads the same file: every value
may be a JSON string, number or boolean, and is checked as the broker's settings are (a bad
value stops the process at start-up naming the key). Keys RocketMQ's proxy knows but rocketq
does not use are reported as ignored, not rejected, so a RocketMQ file works unchanged.

``proxyMode`` CLUSTER talks remoting to the brokers the name server (``namesrvAddr``) lists;
LOCAL is the endpoint a broker starts inside itself when its broker.conf sets ``grpcServerPort``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rocketq import settings
from rocketq.acl.settings import AclSettings
from rocketq.proxy.credentials import InnerClientSettings
from rocketq.settings import SettingsError, setting
from rocketq.store.settings import parse_delay_levels

DEFAULT_GRPC_PORT: Final = 8081
DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
MIN_INVISIBLE_MS_FOR_RECEIVE: Final = 10_000
MAX_INVISIBLE_MS: Final = 12 * 3600 * 1000
MAX_DELAY_MS: Final = 24 * 3600 * 1000
DEFAULT_INVISIBLE_MS: Final = 60_000
CHANNEL_EXPIRED_MS: Final = 120_000
RELAY_TIMEOUT_S: Final = 5
RENEW_AHEAD_MS: Final = 10_000
RENEW_MAX_MS: Final = 3 * 3600 * 1000
RENEW_PERIOD_MS: Final = 5_000
MAX_RENEW_RETRIES: Final = 3
INVISIBLE_MS_WHEN_CLEAR: Final = 1_000
DEFAULT_DELAY_LEVELS: Final = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
MODE_KEY: Final = "tls.server.mode"
"""RocketMQ's TlsSystemConfig property; rocketq reads it as a key (rocketq/proxy/tls.py explains)."""
DISABLED: Final = "disabled"
PERMISSIVE: Final = "permissive"
ENFORCING: Final = "enforcing"
TLS_MODES: Final = (DISABLED, PERMISSIVE, ENFORCING)


class ProxyMode(enum.Enum):
    CLUSTER = "CLUSTER"
    LOCAL = "LOCAL"


@dataclass(frozen=True, slots=True)
class ProxySettings:
    proxy_mode: ProxyMode = setting(  # noqa: RUF009 - setting() returns a dataclass field
        "proxyMode", ProxyMode.CLUSTER,
        "CLUSTER: remoting to the brokers the name server lists; LOCAL: inside a broker.")
    rocketmq_cluster_name: str = setting("rocketMQClusterName", "DefaultCluster",
                                         "The broker cluster this proxy fronts (reported in routes and logs).")
    namesrv_addr: str = setting("namesrvAddr", "", "Name servers, host:port;host:port.", env="NAMESRV_ADDR")
    grpc_server_port: int = setting("grpcServerPort", DEFAULT_GRPC_PORT,
                                    "Port of the apache.rocketmq.v2 gRPC endpoint; 0 picks a free one.")
    bind_address: str = setting("grpcBindAddress", "0.0.0.0", "Address the gRPC listener binds to (rocketq's key).")
    metrics_port: int = setting(
        "metricsPort", settings.PORT_ANY,
        "HTTP /metrics and /health of `rocketq proxy` (the broker's key); 0 = any free port, -1 = off. "
        "LOCAL mode: the proxy's series are on the broker's own metrics port.")
    advertised_host: str = setting(
        "grpcAdvertisedHost", "",
        "Host put in routes in LOCAL mode (rocketq's key); empty: the broker's own address host.")
    max_message_size: int = setting("maxMessageSize", DEFAULT_MAX_MESSAGE_SIZE,
                                    "Largest message body accepted (MESSAGE_BODY_TOO_LARGE above).")
    enable_topic_message_type_check: bool = setting(
        "enableTopicMessageTypeCheck", True, "Told to producers: check a message's type against the queue's.")
    min_invisible_time_mills_for_recv: int = setting(
        "minInvisibleTimeMillsForRecv", MIN_INVISIBLE_MS_FOR_RECEIVE, "Shortest invisible time a receive may ask.")
    max_invisible_time_mills: int = setting("maxInvisibleTimeMills", MAX_INVISIBLE_MS,
                                            "Longest invisible time a receive or change may ask.")
    max_delay_time_mills: int = setting("maxDelayTimeMills", MAX_DELAY_MS,
                                        "How far ahead a delivery timestamp may be (ILLEGAL_DELIVERY_TIME).")
    message_delay_level: str = setting(
        "messageDelayLevel", DEFAULT_DELAY_LEVELS,
        "The brokers' delay levels (rocketq: a delivery timestamp is sent as the first level that is not earlier).")

    # --- v2 clients at the brokers, relayed commands, auto-renew (RocketMQ proxy's keys) ---------
    channel_expired_timeout: int = setting(
        "channelExpiredTimeout", CHANNEL_EXPIRED_MS,
        "ms without a Heartbeat after which a v2 client is unregistered from the brokers.")
    grpc_proxy_relay_request_timeout_in_seconds: int = setting(
        "grpcProxyRelayRequestTimeoutInSeconds", RELAY_TIMEOUT_S,
        "How long a broker's request relayed to a client (thread stack, verify) waits for its answer.")
    default_invisible_time_mills: int = setting(
        "defaultInvisibleTimeMills", DEFAULT_INVISIBLE_MS,
        "Invisible time of an auto-renewed receive (a push consumer's); renewed before it ends.")
    enable_batch_ack: bool = setting(
        "enableBatchAck", True,
        "Ack the entries of one AckMessage for one broker with one BATCH_ACK_MESSAGE (RocketMQ's default: false).")
    enable_proxy_auto_renew: bool = setting(
        "enableProxyAutoRenew", True, "Renew the invisible time of messages a push consumer holds (auto_renew).")
    renew_ahead_time_millis: int = setting("renewAheadTimeMillis", RENEW_AHEAD_MS,
                                           "Renew a held message this long before it would become visible.")
    renew_max_time_millis: int = setting(
        "renewMaxTimeMillis", RENEW_MAX_MS,
        "After this long since it was received, a held message is given back by the group's retry delay.")
    renew_schedule_period_millis: int = setting("renewSchedulePeriodMillis", RENEW_PERIOD_MS,
                                                "How often held messages are checked for renewal.")
    max_renew_retry_times: int = setting("maxRenewRetryTimes", MAX_RENEW_RETRIES,
                                         "Failed renewals of one message before it is left to expire.")
    invisible_time_millis_when_clear: int = setting(
        "invisibleTimeMillisWhenClear", INVISIBLE_MS_WHEN_CLEAR,
        "Invisible time given to the held messages of a client that went away (visible again soon).")

    tls_server_mode: str = setting(
        MODE_KEY, DISABLED,
        "disabled: plaintext gRPC; enforcing: TLS only (any case); permissive is refused (see proxy/tls.py).")
    tls_test_mode_enable: bool = setting(
        "tlsTestModeEnable", True, "With TLS: serve a self-signed certificate made at start instead of the files.")
    tls_cert_path: str = setting("tlsCertPath", "", "With TLS, test mode off: the certificate chain (PEM); "
                                 "empty = $ROCKETMQ_HOME/conf/tls/rocketmq.crt")
    tls_key_path: str = setting("tlsKeyPath", "", "With TLS, test mode off: its unencrypted private key (PEM); "
                                "empty = $ROCKETMQ_HOME/conf/tls/rocketmq.key")

    def __post_init__(self) -> None:
        settings.check_port("grpcServerPort", self.grpc_server_port)
        settings.check_port("metricsPort", self.metrics_port, lowest=settings.PORT_OFF)
        _check_tls_mode(self.tls_server_mode.lower())
        if self.proxy_mode is ProxyMode.CLUSTER:
            if not self.namesrv_addr:
                raise SettingsError("namesrvAddr is required in CLUSTER mode")
            settings.check_addresses("namesrvAddr", self.namesrv_addr)
        if self.max_message_size <= 0:
            raise SettingsError(f"maxMessageSize={self.max_message_size}: expected a positive size")
        if not 0 < self.min_invisible_time_mills_for_recv <= self.max_invisible_time_mills:
            raise SettingsError("minInvisibleTimeMillsForRecv must be positive and at most maxInvisibleTimeMills")
        if self.max_delay_time_mills <= 0:
            raise SettingsError(f"maxDelayTimeMills={self.max_delay_time_mills}: expected a positive time")
        parse_delay_levels(self.message_delay_level)
        _check_positive(channelExpiredTimeout=self.channel_expired_timeout,
                        grpcProxyRelayRequestTimeoutInSeconds=self.grpc_proxy_relay_request_timeout_in_seconds,
                        defaultInvisibleTimeMills=self.default_invisible_time_mills,
                        renewAheadTimeMillis=self.renew_ahead_time_millis,
                        renewMaxTimeMillis=self.renew_max_time_millis,
                        renewSchedulePeriodMillis=self.renew_schedule_period_millis,
                        invisibleTimeMillisWhenClear=self.invisible_time_millis_when_clear)

    @property
    def tls_enabled(self) -> bool:
        return self.tls_server_mode.lower() == ENFORCING


def _check_positive(**values: int) -> None:
    for key, value in values.items():
        if value <= 0:
            raise SettingsError(f"{key}={value}: expected a positive number")


def _check_tls_mode(mode: str) -> None:
    if mode not in TLS_MODES:
        raise SettingsError(f"{MODE_KEY}={mode!r}: expected one of {', '.join(TLS_MODES)}")
    if mode == PERMISSIVE:
        raise SettingsError(f"{MODE_KEY}=permissive: rocketq's gRPC port is either TLS or plaintext "
                            f"(no per-connection detection); use {ENFORCING} or {DISABLED}")


def read_json(path: str | Path) -> dict[str, str]:
    """rmq-proxy.json as key → text (what ``settings.build`` takes); SettingsError if unreadable."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise SettingsError(f"cannot read config file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise SettingsError(f"cannot parse config file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"config file {path}: expected a JSON object of ProxyConfig keys")
    return {str(k): _text(str(k), v) for k, v in data.items()}


def _text(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    # RocketMQ's proxy has list/object keys too; rocketq uses none of them, so they pass unread
    return json.dumps(value)


def load(values: Mapping[str, str],
         overrides: Mapping[str, str] | None = None) -> tuple[ProxySettings, AclSettings, list[str]]:
    """Settings (the proxy's and its ACL's) from the file's values plus overrides, and the keys nothing
    uses (the proxy's own account, ``load_inner_client``, is a use)."""
    merged = {**values, **(overrides or {})}
    return (settings.build(ProxySettings, merged), settings.build(AclSettings, merged),
            settings.unknown_keys(merged, [ProxySettings, AclSettings, InnerClientSettings]))


def load_inner_client(values: Mapping[str, str], overrides: Mapping[str, str] | None = None) -> InnerClientSettings:
    """The keys of the proxy's own ACL account (rocketq/proxy/credentials.py)."""
    return settings.build(InnerClientSettings, {**values, **(overrides or {})})

"""Broker settings: RocketMQ's broker.conf keys, grouped by what they control.

Each group checks its values when it is built (``__post_init__``), so a bad broker.conf,
environment variable or ``--set`` stops the process before it binds or opens anything, with the
key named. Ports are range-checked (``listenPort=70000`` must not become port 4464), and so is
every port inside ``namesrvAddr``. ``metricsPort`` defaults to 0, any free port: RocketMQ's
brokers have no such port, so its config files start several brokers and a name server on one
host without choosing one; -1 turns the HTTP listener off.
"""

from __future__ import annotations

import enum
import socket
from dataclasses import dataclass
from typing import Final

from rocketq import settings
from rocketq.remoting import limits
from rocketq.settings import SettingsError, setting

MIN_FRAME_MAX_LENGTH: Final = 64 * 1024
"""Smaller frames could not carry a registration or a pull answer of even a modest broker."""


class BrokerRole(enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


def default_host_ip() -> str:
    """The address other hosts can reach us at: the interface a route to the world would use."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # no packet is sent for a UDP connect
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    broker_cluster_name: str = setting("brokerClusterName", "DefaultCluster", "cluster this broker belongs to")
    broker_name: str = setting("brokerName", "broker-a", "broker group name; master and slaves share it")
    broker_id: int = setting("brokerId", 0, "0 is the master, 1.. are slaves")
    broker_role: BrokerRole = setting(  # noqa: RUF009 - setting() returns a dataclass field
        "brokerRole", BrokerRole.ASYNC_MASTER, "ASYNC_MASTER, SYNC_MASTER or SLAVE"
    )
    broker_ip1: str = setting("brokerIP1", "", "advertised host; empty = the host's primary IP", env="BROKER_IP1")
    listen_port: int = setting("listenPort", 10911, "remoting port for clients")
    listen_host: str = setting("listenHost", "0.0.0.0", "address the remoting port binds to (rocketq)")
    namesrv_addr: str = setting("namesrvAddr", "", "name servers, host:port;host:port", env="NAMESRV_ADDR")
    ha_listen_port: int = setting(
        "haListenPort", 0, "port slaves replicate from (advertised to namesrv); 0 = listenPort + 1"
    )
    metrics_port: int = setting(
        "metricsPort", settings.PORT_ANY, "HTTP /metrics and /health; 0 = any free port, -1 = off (rocketq)"
    )

    def __post_init__(self) -> None:
        settings.check_port("listenPort", self.listen_port)
        settings.check_port("haListenPort", self.ha_listen_port)
        if not self.ha_listen_port and self.listen_port == settings.MAX_PORT:
            raise SettingsError(f"listenPort={self.listen_port} leaves no listenPort + 1 for haListenPort: set it")
        settings.check_port("metricsPort", self.metrics_port, lowest=settings.PORT_OFF)
        settings.check_addresses("namesrvAddr", self.namesrv_addr)
        if self.broker_id < 0:
            raise SettingsError(f"brokerId={self.broker_id}: expected 0 (master) or a positive slave id")
        if self.listen_port > 0 and self.listen_port == self.metrics_port:
            raise SettingsError(f"listenPort and metricsPort are both {self.listen_port}")


@dataclass(frozen=True, slots=True)
class BrokerBehaviour:
    auto_create_topic_enable: bool = setting("autoCreateTopicEnable", True, "create topics on first send (TBW102)")
    auto_create_subscription_group: bool = setting(
        "autoCreateSubscriptionGroup", True, "create subscription groups on first heartbeat/pull"
    )
    default_topic_queue_nums: int = setting("defaultTopicQueueNums", 8, "queues of an auto-created topic")
    enable_mixed_message_type: bool = setting(
        "enableMixedMessageType", False, "accept topics with attribute message.type=MIXED (RocketMQ 5)")
    broker_permission: int = setting("brokerPermission", 6, "6 RW, 4 read-only (draining), 2 write-only")
    register_name_server_period: int = setting("registerNameServerPeriod", 30000, "ms between registrations")
    long_polling_enable: bool = setting("longPollingEnable", True, "hold pulls until a message arrives")
    short_polling_time_mills: int = setting("shortPollingTimeMills", 1000, "hold time without long polling")
    client_channel_max_idle_time: int = setting(
        "channelExpiredTimeout", 120000, "ms without heartbeat before a client is dropped"
    )
    client_scan_interval: int = setting("clientScanInterval", 10000, "ms between client liveness scans (rocketq)")
    flush_consumer_offset_interval: int = setting(
        "flushConsumerOffsetInterval", 5000, "ms between consumerOffset.json writes"
    )
    max_sends_in_flight: int = setting(
        "sendThreadPoolQueueCapacity", 10000, "sends waiting for the store before SYSTEM_BUSY"
    )
    server_max_frame_size: int = setting("frameMaxLength", 16 * 1024 * 1024, "largest accepted frame")
    max_message_size: int = setting("maxMessageSize", 4 * 1024 * 1024, "largest message body accepted")
    trace_topic_enable: bool = setting("traceTopicEnable", False, "create the message trace topic")
    msg_trace_topic_name: str = setting("msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC", "message trace topic")
    start_accept_send_request_time_stamp: int = setting(
        "startAcceptSendRequestTimeStamp", 0, "refuse sends before this epoch ms"
    )
    server_channel_max_idle_time_seconds: int = setting(
        "serverChannelMaxIdleTimeSeconds", limits.DEFAULT_IDLE_SECONDS,
        "seconds without traffic after which a client connection is closed; 0 never"
    )
    server_max_connections: int = setting(
        "serverMaxConnections", 0, "client connections open at once; 0 = open-file limit less a reserve (rocketq)"
    )
    enable_property_filter: bool = setting(
        "enablePropertyFilter", False, "accept SQL92 subscriptions and filter pulls by message properties"
    )
    store_reply_message_enable: bool = setting(
        "storeReplyMessageEnable", True, "also store request-reply replies in <cluster>_REPLY_TOPIC"
    )
    metrics_max_topic_series: int = setting(
        "metricsMaxTopicSeries", 2000,
        "per-topic/per-group series per metric family; the rest summed under topic/group=\"_other_\" (rocketq)"
    )
    # transactions (rocketq.broker.transactions)
    reject_transaction_message: bool = setting(
        "rejectTransactionMessage", False, "answer half messages with NO_PERMISSION"
    )
    transaction_time_out: int = setting(
        "transactionTimeOut", 6000, "ms after its birth before an unfinished transaction is checked"
    )
    transaction_check_interval: int = setting(
        "transactionCheckInterval", 60000, "ms between passes of the transaction check loop"
    )
    transaction_check_max: int = setting(
        "transactionCheckMax", 15, "checks of one transaction before it is discarded"
    )
    # orderly consumers (rocketq.broker.locks)
    rebalance_lock_max_live_time: int = setting(
        "rebalanceLockMaxLiveTime", 60000,
        "ms a queue lock lives without renewal (RocketMQ: rocketmq.broker.rebalance.lockMaxLiveTime)"
    )

    # POP consumption (rocketq.broker.pop, rocketq.broker.revive)
    revive_queue_num: int = setting("reviveQueueNum", 8, "queues of the revive topic holding POP checkpoints")
    revive_interval: int = setting("reviveInterval", 1000, "ms between passes of the POP revive service")
    pop_polling_size: int = setting("popPollingSize", 1024, "pops held per topic before POLLING_FULL")
    max_pop_polling_size: int = setting("maxPopPollingSize", 100000, "pops held in all before POLLING_FULL")
    enable_retry_topic_v2: bool = setting(
        "enableRetryTopicV2", False, "POP retry topic %RETRY%<group>+<topic> instead of %RETRY%<group>_<topic>"
    )
    default_message_request_mode: str = setting(
        "defaultMessageRequestMode", "PULL", "PULL or POP: QUERY_ASSIGNMENT's mode for a group that set none"
    )
    default_pop_share_queue_num: int = setting(
        "defaultPopShareQueueNum", -1, "POP groups: clients sharing each queue - 1 (<= 0: every client pops all)"
    )
    server_load_balancer_enable: bool = setting(
        "serverLoadBalancerEnable", True, "QUERY_ASSIGNMENT balances over the group's clients (else all queues)"
    )

    def __post_init__(self) -> None:
        positive = {
            "reviveQueueNum": self.revive_queue_num,
            "reviveInterval": self.revive_interval,
            "popPollingSize": self.pop_polling_size,
            "maxPopPollingSize": self.max_pop_polling_size,
            "defaultTopicQueueNums": self.default_topic_queue_nums,
            "registerNameServerPeriod": self.register_name_server_period,
            "shortPollingTimeMills": self.short_polling_time_mills,
            "channelExpiredTimeout": self.client_channel_max_idle_time,
            "clientScanInterval": self.client_scan_interval,
            "flushConsumerOffsetInterval": self.flush_consumer_offset_interval,
            "sendThreadPoolQueueCapacity": self.max_sends_in_flight,
            "maxMessageSize": self.max_message_size,
            "transactionCheckInterval": self.transaction_check_interval,
            "transactionCheckMax": self.transaction_check_max,
            "rebalanceLockMaxLiveTime": self.rebalance_lock_max_live_time,
            "metricsMaxTopicSeries": self.metrics_max_topic_series,
        }
        for key, value in positive.items():
            if value <= 0:
                raise SettingsError(f"{key}={value}: must be positive")
        if self.default_message_request_mode not in ("PULL", "POP"):
            raise SettingsError(f"defaultMessageRequestMode={self.default_message_request_mode}: PULL or POP")
        if self.transaction_time_out < 0:
            raise SettingsError(f"transactionTimeOut={self.transaction_time_out}: must not be negative")
        if self.broker_permission & ~7:
            raise SettingsError(f"brokerPermission={self.broker_permission}: expected a combination of "
                                "4 (read), 2 (write), 1 (inherit)")
        if self.server_max_frame_size < MIN_FRAME_MAX_LENGTH:
            raise SettingsError(f"frameMaxLength={self.server_max_frame_size}: at least {MIN_FRAME_MAX_LENGTH}")
        limits.ConnectionLimits(self.server_channel_max_idle_time_seconds, self.server_max_connections)  # checks

    @property
    def connection_limits(self) -> limits.ConnectionLimits:
        return limits.ConnectionLimits(self.server_channel_max_idle_time_seconds, self.server_max_connections)

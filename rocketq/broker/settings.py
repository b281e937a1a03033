"""Broker settings: RocketMQ's broker.conf keys, grouped by what they control."""

from __future__ import annotations

import enum
import socket
from dataclasses import dataclass

from rocketq.settings import setting


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
    metrics_port: int = setting("metricsPort", 5557, "HTTP /metrics and /health; 0 disables (rocketq)")


@dataclass(frozen=True, slots=True)
class BrokerBehaviour:
    auto_create_topic_enable: bool = setting("autoCreateTopicEnable", True, "create topics on first send (TBW102)")
    auto_create_subscription_group: bool = setting(
        "autoCreateSubscriptionGroup", True, "create subscription groups on first heartbeat/pull"
    )
    default_topic_queue_nums: int = setting("defaultTopicQueueNums", 8, "queues of an auto-created topic")
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
    wait_time_mills_in_send_queue: int = setting(
        "waitTimeMillsInSendQueue", 200, "a send queued longer than this is answered SYSTEM_BUSY"
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
    reject_transaction_message: bool = setting("rejectTransactionMessage", False, "NO_PERMISSION for half messages")

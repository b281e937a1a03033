"""Client settings: RocketMQ's client options with RocketMQ's names and defaults.

Each field is declared with RocketMQ's own key (``sendMsgTimeout``, ``pullBatchSize``) so a
properties file written for a Java client loads with ``rocketq.settings.build``; in Python the
same option is the snake_case name (``send_msg_timeout``). Durations keep RocketMQ's unit,
milliseconds, so numbers copied from Java configs mean the same thing.

``ProducerSettings`` and ``PushConsumerSettings`` extend ``ClientSettings`` (name servers,
instance name, timers shared by every client). ``configure`` builds one from keyword arguments,
with the environment (``NAMESRV_ADDR``) filling what the caller did not give, and validates it.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from rocketq import settings
from rocketq.client.errors import ClientStateError
from rocketq.protocol import addresses
from rocketq.protocol.codes import AUTO_CREATE_TOPIC_KEY
from rocketq.settings import setting

MIB: Final = 1024 * 1024
DEFAULT_MAX_RECONSUME_TIMES: Final = 16
"""What ``maxReconsumeTimes=-1`` means for a concurrent consumer: 16 redeliveries, then the DLQ."""


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"
    """The group shares the queues: each message is consumed by one member."""
    BROADCASTING = "BROADCASTING"
    """Every member consumes every message; offsets are kept locally."""


class ConsumeFromWhere(enum.Enum):
    """Where a group with no stored offset starts. A stored offset always wins."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSettings:
    namesrv_addr: str = setting("namesrvAddr", "", "Name servers, `host:port;host:port`.", env="NAMESRV_ADDR")
    instance_name: str = setting(
        "instanceName", "DEFAULT",
        "Second half of the client id. DEFAULT becomes `<pid>#<nanos>`, unique per client object.")
    client_ip: str = setting("clientIP", "", "First half of the client id; empty: the address used to reach "
                             "the first name server.")
    poll_name_server_interval: int = setting("pollNameServerInterval", 30000, "ms between route refreshes.")
    heartbeat_broker_interval: int = setting("heartbeatBrokerInterval", 30000, "ms between broker heartbeats.")
    mq_client_api_timeout: int = setting("mqClientApiTimeout", 3000, "ms for name-server and admin-style calls.")
    # ACL (RocketMQ's SessionCredentials): with an access key every request is signed
    access_key: str = setting("accessKey", "", "ACL account; empty: requests are not signed.")
    secret_key: str = setting("secretKey", "", "The account's secret, signs requests (never sent).", secret=True)
    security_token: str = setting("securityToken", "", "Optional token sent with signed requests.", secret=True)

    def __post_init__(self) -> None:
        _positive(self, "poll_name_server_interval", "heartbeat_broker_interval", "mq_client_api_timeout")
        if bool(self.access_key) != bool(self.secret_key):
            raise ClientStateError("access_key and secret_key go together: give both or neither")

    def credentials(self) -> dict[str, str]:
        """The ACL options as keyword arguments for another client of the same account."""
        return {"access_key": self.access_key, "secret_key": self.secret_key, "security_token": self.security_token}

    def namesrv_list(self) -> list[str]:
        return addresses.split_list(self.namesrv_addr)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerSettings(ClientSettings):
    send_msg_timeout: int = setting("sendMsgTimeout", 3000, "ms for one send, retries included.")
    retry_times_when_send_failed: int = setting("retryTimesWhenSendFailed", 2, "Extra attempts of a sync send.")
    retry_times_when_send_async_failed: int = setting(
        "retryTimesWhenSendAsyncFailed", 2, "Extra attempts of an async send.")
    retry_another_broker_when_not_store_ok: bool = setting(
        "retryAnotherBrokerWhenNotStoreOK", False, "Resend elsewhere when the status is not SEND_OK.")
    compress_msg_body_over_howmuch: int = setting(
        "compressMsgBodyOverHowmuch", 4096, "Bodies larger than this many bytes are zlib-compressed.")
    max_message_size: int = setting("maxMessageSize", 4 * MIB, "Largest body (or batch) sent, in bytes.")
    create_topic_key: str = setting("createTopicKey", AUTO_CREATE_TOPIC_KEY, "Route used for unknown topics.")
    default_topic_queue_nums: int = setting("defaultTopicQueueNums", 4, "Queues of an auto-created topic.")
    send_latency_fault_enable: bool = setting(
        "sendLatencyFaultEnable", True, "Avoid brokers that were slow or failed recently.")

    def __post_init__(self) -> None:
        ClientSettings.__post_init__(self)
        _positive(self, "send_msg_timeout", "max_message_size", "default_topic_queue_nums")
        _non_negative(self, "retry_times_when_send_failed", "retry_times_when_send_async_failed",
                      "compress_msg_body_over_howmuch")


@dataclass(frozen=True, slots=True, kw_only=True)
class PushConsumerSettings(ClientSettings):
    # An enum member is immutable; ruff cannot see that through setting().
    message_model: MessageModel = setting(  # noqa: RUF009
        "messageModel", MessageModel.CLUSTERING, "CLUSTERING or BROADCASTING.")
    consume_from_where: ConsumeFromWhere = setting(  # noqa: RUF009
        "consumeFromWhere", ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, "Start of a group with no stored offset.")
    consume_timestamp: str = setting(
        "consumeTimestamp", "", "yyyyMMddHHmmss (local time) for CONSUME_FROM_TIMESTAMP; empty: 30 min before start.")
    consume_thread_max: int = setting("consumeThreadMax", 20, "Listener calls running at once.")
    consume_message_batch_max_size: int = setting("consumeMessageBatchMaxSize", 1, "Messages per listener call.")
    pull_batch_size: int = setting("pullBatchSize", 32, "Messages asked for per pull.")
    pull_interval: int = setting("pullInterval", 0, "ms to wait between pulls of one queue.")
    pull_threshold_for_queue: int = setting("pullThresholdForQueue", 1000, "Cached messages that pause a queue.")
    pull_threshold_size_for_queue: int = setting(
        "pullThresholdSizeForQueue", 100, "Cached MiB of bodies that pause a queue.")
    consume_concurrently_max_span: int = setting(
        "consumeConcurrentlyMaxSpan", 2000, "Offset span in a queue's cache that pauses it.")
    max_reconsume_times: int = setting("maxReconsumeTimes", -1, "Redeliveries before the DLQ; -1 means 16.")
    broker_suspend_max_time_millis: int = setting(
        "brokerSuspendMaxTimeMillis", 15000, "ms the broker may hold a pull with no message.")
    consumer_timeout_millis_when_suspend: int = setting(
        "consumerTimeoutMillisWhenSuspend", 30000, "ms a held pull may take before the client gives up.")
    persist_consumer_offset_interval: int = setting(
        "persistConsumerOffsetInterval", 5000, "ms between offset commits.")
    rebalance_interval: int = setting("rebalanceInterval", 20000, "ms between rebalances.")
    await_termination_millis_when_shutdown: int = setting(
        "awaitTerminationMillisWhenShutdown", 0, "ms close() lets running listener calls finish before cancelling.")
    offset_store_dir: str = setting(
        "localOffsetStoreDir", "", "Directory of broadcasting offsets; empty: ~/.rocketmq_offsets.")
    suspend_current_queue_time_millis: int = setting(
        "suspendCurrentQueueTimeMillis", 1000, "Orderly: ms a queue waits after SUSPEND_CURRENT_QUEUE_A_MOMENT.")
    consume_tps_limit: float = setting(
        "consumeTpsLimit", 0.0, "rocketq's own: messages per second handed to the listener at most "
        "(paced evenly, across all queues); 0: no limit.")

    def __post_init__(self) -> None:
        ClientSettings.__post_init__(self)
        _positive(self, "consume_thread_max", "consume_message_batch_max_size", "pull_batch_size",
                  "pull_threshold_for_queue", "pull_threshold_size_for_queue", "consume_concurrently_max_span",
                  "broker_suspend_max_time_millis", "consumer_timeout_millis_when_suspend",
                  "persist_consumer_offset_interval", "rebalance_interval")
        _non_negative(self, "pull_interval", "await_termination_millis_when_shutdown")
        if self.consumer_timeout_millis_when_suspend <= self.broker_suspend_max_time_millis:
            raise ClientStateError("consumerTimeoutMillisWhenSuspend must exceed brokerSuspendMaxTimeMillis")
        if self.max_reconsume_times < -1:
            raise ClientStateError("maxReconsumeTimes must be -1 (default 16) or >= 0")
        if isinstance(self.consume_tps_limit, bool) or not isinstance(self.consume_tps_limit, int | float) \
                or not 0 <= self.consume_tps_limit < float("inf"):
            raise ClientStateError(f"consumeTpsLimit={self.consume_tps_limit!r}: expected messages/s >= 0")

    @property
    def effective_max_reconsume_times(self) -> int:
        return DEFAULT_MAX_RECONSUME_TIMES if self.max_reconsume_times == -1 else self.max_reconsume_times


@dataclass(frozen=True, slots=True, kw_only=True)
class PullConsumerSettings(ClientSettings):
    broker_suspend_max_time_millis: int = setting(
        "brokerSuspendMaxTimeMillis", 20000, "ms the broker may hold a blocking pull with no message.")
    consumer_timeout_millis_when_suspend: int = setting(
        "consumerTimeoutMillisWhenSuspend", 30000, "ms a blocking pull may take before the client gives up.")
    consumer_pull_timeout_millis: int = setting("consumerPullTimeoutMillis", 10000, "ms for a non-blocking pull.")

    def __post_init__(self) -> None:
        ClientSettings.__post_init__(self)
        _positive(self, "broker_suspend_max_time_millis", "consumer_timeout_millis_when_suspend",
                  "consumer_pull_timeout_millis")
        if self.consumer_timeout_millis_when_suspend <= self.broker_suspend_max_time_millis:
            raise ClientStateError("consumerTimeoutMillisWhenSuspend must exceed brokerSuspendMaxTimeMillis")


S = TypeVar("S", bound=ClientSettings)


def configure(cls: type[S], options: dict[str, Any]) -> S:
    """Defaults, then the environment, then ``options``; unknown names and bad values raise."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ClientStateError(f"unknown {cls.__name__} option(s): {', '.join(unknown)}")
    base = settings.build(cls, {})
    given = {k: v for k, v in options.items() if v is not None}
    try:
        return dataclasses.replace(base, **given)
    except (TypeError, ValueError) as exc:
        raise ClientStateError(str(exc)) from None


def _positive(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ClientStateError(f"{name}={value!r}: expected a positive integer")


def _non_negative(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ClientStateError(f"{name}={value!r}: expected a non-negative integer")

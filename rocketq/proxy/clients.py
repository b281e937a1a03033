"""The v2 clients the proxy knows: who they are (request metadata) and what they told it (Settings).

Every v2 call carries metadata; RocketMQ's proxy reads ``x-mq-client-id`` (required: a blank
one is CLIENT_ID_REQUIRED), ``x-mq-namespace``, ``x-mq-language``, ``x-mq-client-version`` and
``x-mq-protocol`` from it. A client first opens the Telemetry stream and writes its
``Settings``; the proxy keeps them per client id (Heartbeat and NotifyClientTermination need
them: UNRECOGNIZED_CLIENT_TYPE without) and answers with the settings merged with its own, as
``GrpcClientSettingsManager`` does:

- a producer gets the backoff policy (3 attempts, 10 ms … 1 s, doubling), ``max_body_size`` =
  ``maxMessageSize`` (a reply without it makes the Python client refuse every send) and
  ``validate_message_type``;
- a consumer gets ``receive_batch_size`` 32, ``long_polling_timeout`` 20 s, ``fifo`` (its
  group's ``consumeMessageOrderly``, read by the caller) and the default customized retry
  backoff with 17 attempts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from google.protobuf import duration_pb2

from rocketq.acl.plainacl import Account
from rocketq.protocol import subscription
from rocketq.protocol.subscription import SubscriptionData
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb
from rocketq.proxy.v2 import service_pb2 as spb

CLIENT_ID: Final = "x-mq-client-id"
NAMESPACE: Final = "x-mq-namespace"
LANGUAGE: Final = "x-mq-language"
CLIENT_VERSION: Final = "x-mq-client-version"
PRODUCER_MAX_ATTEMPTS: Final = 3
PRODUCER_BACKOFF_INITIAL_MS: Final = 10
PRODUCER_BACKOFF_MAX_MS: Final = 1000
PRODUCER_BACKOFF_MULTIPLIER: Final = 2.0
CONSUMER_BATCH_SIZE: Final = 32
CONSUMER_LONG_POLLING_MS: Final = 20_000
CONSUMER_MAX_ATTEMPTS: Final = 17
"""``retryMaxTimes`` (16) + 1."""
CONSUMER_RETRY_DELAYS_S: Final = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800,
                                  3600, 7200)
"""RocketMQ's default ``CustomizedRetryPolicy`` (the delay levels' times)."""
RETRY_POLICY_SKIP: Final = 2
"""``CustomizedRetryPolicy.nextDelayDuration`` starts at step ``reconsumeTimes + 2``."""
MAX_OUTGOING_COMMANDS: Final = 1024
"""Server → client telemetry commands queued per client before new ones are dropped."""


@dataclass(frozen=True, slots=True)
class Caller:
    client_id: str
    namespace: str
    language: str
    version: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    account: Account | None = None
    """The ACL account the call was signed with (None: ACL off, or a white-listed peer)."""


def caller(metadata: Iterable[tuple[str, str | bytes]] | None) -> Caller:
    """Who is calling; ProxyError CLIENT_ID_REQUIRED without a client id."""
    values = {k.lower(): v if isinstance(v, str) else v.decode(errors="replace") for k, v in metadata or ()}
    client_id = values.get(CLIENT_ID, "").strip()
    if not client_id:
        raise ProxyError(Code.CLIENT_ID_REQUIRED, "x-mq-client-id is required")
    return Caller(client_id, values.get(NAMESPACE, ""), values.get(LANGUAGE, ""), values.get(CLIENT_VERSION, ""),
                  values)


def _ms(ms: int) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMilliseconds(ms)
    return d


Outgoing = asyncio.Queue[spb.TelemetryCommand | None]
"""One Telemetry stream's outgoing commands (None ends the stream)."""


@dataclass
class Client:
    settings: pb.Settings
    stream: Outgoing | None = None
    """The client's open Telemetry stream, where server commands (transaction checks) go."""
    since_ms: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    """When its Settings first arrived (epoch ms)."""

    @property
    def client_type(self) -> int:
        return int(self.settings.client_type)

    @property
    def group(self) -> str | None:
        if self.settings.HasField("subscription") and self.settings.subscription.HasField("group"):
            return str(self.settings.subscription.group.name)
        return None

    @property
    def topics(self) -> list[str]:
        if self.settings.HasField("publishing"):
            return [t.name for t in self.settings.publishing.topics]
        return []


def subscriptions(settings: pb.Settings) -> list[SubscriptionData]:
    """A consumer's subscriptions as remoting SubscriptionData (one that does not parse is left
    out: the receives that use it are refused with ILLEGAL_FILTER_EXPRESSION anyway)."""
    out = []
    for entry in settings.subscription.subscriptions:
        kind = subscription.EXPRESSION_SQL92 if entry.expression.type == pb.SQL else subscription.EXPRESSION_TAG
        with contextlib.suppress(subscription.SubscriptionError):
            out.append(subscription.build(entry.topic.name, entry.expression.expression, kind))
    return out


def retry_delay_ms(reconsume_times: int) -> int:
    """The default customized retry policy's delay for a message consumed ``reconsume_times`` times
    (RocketMQ's ``CustomizedRetryPolicy.nextDelayDuration``: it starts two steps in)."""
    index = min(max(reconsume_times, 0) + RETRY_POLICY_SKIP, len(CONSUMER_RETRY_DELAYS_S) - 1)
    return CONSUMER_RETRY_DELAYS_S[index] * 1000


def merged_settings(received: pb.Settings, *, max_body_size: int, validate_type: bool,
                    fifo: bool = False) -> pb.Settings:
    """The Settings reply: the client's own, completed with the proxy's values (module docstring).
    ProxyError BAD_REQUEST for settings that are neither publishing nor subscription."""
    out = pb.Settings()
    out.CopyFrom(received)
    if received.HasField("publishing"):
        out.backoff_policy.CopyFrom(pb.RetryPolicy(
            max_attempts=PRODUCER_MAX_ATTEMPTS, exponential_backoff=pb.ExponentialBackoff(
                initial=_ms(PRODUCER_BACKOFF_INITIAL_MS), max=_ms(PRODUCER_BACKOFF_MAX_MS),
                multiplier=PRODUCER_BACKOFF_MULTIPLIER)))
        out.publishing.max_body_size = max_body_size
        out.publishing.validate_message_type = validate_type
    elif received.HasField("subscription"):
        out.backoff_policy.CopyFrom(pb.RetryPolicy(
            max_attempts=CONSUMER_MAX_ATTEMPTS,
            customized_backoff=pb.CustomizedBackoff(next=[_ms(s * 1000) for s in CONSUMER_RETRY_DELAYS_S])))
        out.subscription.receive_batch_size = CONSUMER_BATCH_SIZE
        out.subscription.long_polling_timeout.CopyFrom(_ms(CONSUMER_LONG_POLLING_MS))
        out.subscription.fifo = fifo
    else:
        raise ProxyError(Code.BAD_REQUEST, "settings hold neither publishing nor subscription")
    return out


class ClientTable:
    """Settings and telemetry queues by client id."""

    def __init__(self) -> None:
        self._clients: dict[str, Client] = {}

    def register(self, client_id: str, settings: pb.Settings, stream: Outgoing | None = None) -> Client:
        client = self._clients.setdefault(client_id, Client(settings))
        client.settings = settings
        client.stream = stream
        return client

    def detach(self, client_id: str, stream: Outgoing) -> bool:
        """The stream closed: server commands have nowhere to go until the client reopens one.
        False when it was not the client's current stream (a newer one replaced it)."""
        client = self._clients.get(client_id)
        if client is not None and client.stream is stream:
            client.stream = None
            return True
        return False

    def get(self, client_id: str) -> Client | None:
        return self._clients.get(client_id)

    def require(self, client_id: str) -> Client:
        client = self._clients.get(client_id)
        if client is None:
            raise ProxyError(Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")
        return client

    def forget(self, client_id: str) -> None:
        self._clients.pop(client_id, None)

    def count_by_type(self) -> dict[int, int]:
        """Known clients by ``ClientType`` value (the proxy's client gauge)."""
        return dict(Counter(c.client_type for c in self._clients.values()))

    def producers_of(self, topic: str) -> list[Client]:
        return [c for c in self._clients.values() if c.client_type == pb.PRODUCER and topic in c.topics]

"""The operator's settings and the shared clients one operator process owns.

``OperatorConfig`` holds the knobs that are not part of any custom resource (how often to
look, how long to wait before failing over or giving up a drain), read from environment
variables so the Helm chart can set them. ``Runtime`` bundles what every handler uses: the
Kubernetes API, the BrokerAdmin, the config, metrics and a clock. It is created by the startup
handler, kept in kopf's operator memo and closed by the cleanup handler; there is no
module-level state, so one process serves any number of clusters in any namespaces.

``Context`` is one reconcile pass's view: the runtime, the object being reconciled, a way to
post Kubernetes Events about it, a logger and the time the pass started.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rocketq.ttlcache import TtlCache
from rocketq_operator import brokeradmin, kubeapi, ticking
from rocketq_operator.metrics import Metrics, MetricsServer

ENV_PREFIX: Final = "ROCKETQ_OPERATOR_"
CLUSTER_KIND: Final = "RocketMQCluster"
ENTITY_PASSES: Final = 16
"""Topic and consumer-group passes that run at once. Each makes at most a few API calls, and the
API client's calls share a few threads: unbounded, the thousands of passes kopf starts for the
objects it sees at startup queue their calls ahead of the cluster passes they are waiting for."""


class ConfigError(ValueError):
    """An environment variable holds a value the operator cannot use."""


@dataclass(frozen=True)
class OperatorConfig:
    reconcile_interval: float = 15.0
    """Seconds between level-based passes over each cluster (health, rolls, failover, drains)."""
    entity_interval: float = 60.0
    """Seconds between re-checks of each topic and consumer group on every master."""
    failover_grace: float = 30.0
    """Seconds a MasterSlave master may be missing or unready before a slave replaces it."""
    drain_timeout: float = 600.0
    """Seconds a group being removed may keep unconsumed messages before DrainTimeout."""
    retry_delay: float = 10.0
    """Seconds before a pass that failed on an API or broker error runs again."""
    caught_up_bytes: int = 1 << 20
    """A slave this close (CommitLog bytes) to its master counts as caught up for a roll."""
    caught_up_entries: int = 1024
    """A DLedger follower this close (committed entries) to its leader counts as caught up: a
    roll restarts the next member, or hands leadership to it, only then."""
    admin_timeout: float = 5.0
    read_cache_ttl: float = 5.0
    """Seconds a cluster's view and a broker's topic and group tables are shared between topic and
    consumer-group passes (``rocketq.ttlcache``): one read per cluster and per broker, not per object."""
    """Seconds to wait for a broker or name server to answer an admin request."""
    metrics_port: int = 9090
    """Port of /metrics (and a /healthz of its own); 0 turns the endpoint off. Not 8080: that is
    where the image and the chart run kopf's --liveness endpoint."""
    standalone: bool = True
    """Run without kopf peering (one operator replica, as the chart deploys it)."""
    json_logs: bool = True
    access_key: str = ""
    """The operator's own account on clusters with ACL (``spec.acl``): it signs every broker call
    with it, as RocketMQ's AclClientRPCHook does. Empty: unsigned calls."""
    secret_key: str = field(default="", repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OperatorConfig:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in ("reconcile_interval", "entity_interval", "failover_grace", "drain_timeout",
                     "retry_delay", "admin_timeout", "read_cache_ttl"):
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None:
                values[name] = _positive_float(name, raw)
        for name in ("caught_up_bytes", "caught_up_entries", "metrics_port"):
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None:
                values[name] = _int_in(name, raw, 0, 65535 if name == "metrics_port" else 1 << 62)
        for name in ("standalone", "json_logs"):
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None:
                if raw.lower() not in ("true", "false"):
                    raise ConfigError(f"{ENV_PREFIX}{name.upper()}={raw!r}: expected true or false")
                values[name] = raw.lower() == "true"
        access_key = env.get(ENV_PREFIX + "ACCESS_KEY", "")
        secret_key = env.get(ENV_PREFIX + "SECRET_KEY", "")
        if bool(access_key) != bool(secret_key):
            raise ConfigError(f"{ENV_PREFIX}ACCESS_KEY and {ENV_PREFIX}SECRET_KEY go together: set both or neither")
        return cls(**values, access_key=access_key, secret_key=secret_key)


def _positive_float(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{ENV_PREFIX}{name.upper()}={raw!r}: expected a number of seconds") from None
    if not 0 < value < 86400 * 30:
        raise ConfigError(f"{ENV_PREFIX}{name.upper()}={raw!r}: expected more than 0 and less than 30 days")
    return value


def _int_in(name: str, raw: str, low: int, high: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{ENV_PREFIX}{name.upper()}={raw!r}: expected an integer") from None
    if not low <= value <= high:
        raise ConfigError(f"{ENV_PREFIX}{name.upper()}={raw!r}: expected {low}..{high}")
    return value


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(tz=datetime.UTC)


class Announcements:
    """Which Warning Events this operator already posted, per object and topic.

    A pass may start from a body older than the previous pass's status write (a watch event
    queued before it), so the status alone cannot tell what was already said; this memory can,
    for as long as the process lives (after a restart the status is all there is).
    """

    def __init__(self) -> None:
        self._told: dict[tuple[str, ...], frozenset[str]] = {}

    def not_yet(self, key: tuple[str, ...], messages: list[str]) -> list[str]:
        """The ``messages`` not posted under ``key`` (kind, namespace, name, topic) since they
        last appeared; the ones given are remembered until a call no longer gives them."""
        told = self._told.get(key, frozenset())
        self._told[key] = frozenset(messages)
        return [m for m in messages if m not in told]

    def forget(self, kind: str, namespace: str, name: str) -> None:
        for key in [k for k in self._told if k[:3] == (kind, namespace, name)]:
            del self._told[key]


@dataclass(frozen=True)
class Refusal:
    """A topic or group write a broker answered with "no" (``entitysync``): it is not sent again
    for the same generation of the object until a while has passed."""

    generation: int | None
    at: datetime.datetime
    message: str


@dataclass
class Runtime:
    api: kubeapi.KubeApi
    admin: brokeradmin.BrokerAdmin
    config: OperatorConfig
    metrics: Metrics
    clock: Callable[[], datetime.datetime] = utc_now
    server: MetricsServer | None = None
    ticker: ticking.Ticker | None = None
    _locks: dict[tuple[str, str, str], asyncio.Lock] = field(default_factory=dict, init=False)
    announcements: Announcements = field(default_factory=Announcements, init=False)
    cluster_views: TtlCache[tuple[str, str], object] = field(init=False)
    """(namespace, cluster) -> what the topic and group passes need to know of that cluster
    (``entitysync.ClusterView``, or why it cannot be known), shared for ``read_cache_ttl``."""
    status_written: dict[tuple[str, str, str], float] = field(default_factory=dict, init=False)
    """(kind, namespace, name) -> when (monotonic) a pass last wrote that object's status."""
    applied_names: dict[tuple[str, str, str], str] = field(default_factory=dict, init=False)
    """(kind, namespace, name) -> the applied-name annotation this process wrote, until a body with
    it comes back: a pass starting from an older body must not write it again."""
    refusals: dict[tuple[str, str, str], dict[str, Refusal]] = field(default_factory=dict, init=False)
    """(kind, namespace, name) -> broker group -> the write it refused last (``entitysync``)."""
    entity_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(ENTITY_PASSES), init=False)
    """Topic and consumer-group passes running at once (``ENTITY_PASSES``)."""
    _closed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.cluster_views = TtlCache(self.config.read_cache_ttl)

    def lock(self, kind: str, namespace: str, name: str) -> asyncio.Lock:
        """The lock every pass over this object holds, so that passes never overlap."""
        return self._locks.setdefault((kind, namespace, name), asyncio.Lock())

    def forget(self, kind: str, namespace: str, name: str) -> None:
        """Drop a deleted object's lock (a pass holding it keeps its own reference)."""
        self._locks.pop((kind, namespace, name), None)
        self.announcements.forget(kind, namespace, name)
        self.status_written.pop((kind, namespace, name), None)
        self.applied_names.pop((kind, namespace, name), None)
        self.refusals.pop((kind, namespace, name), None)
        if kind == CLUSTER_KIND:
            self.metrics.forget_cluster(namespace, name)

    async def close(self) -> None:
        """Stop the ticker and the metrics endpoint, close the clients; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self.ticker is not None:
            await self.ticker.close()
        if self.server is not None:
            await self.server.close()
        await self.admin.close()
        await self.api.close()


EventFn = Callable[[str, str, str], None]
"""Posts a Kubernetes Event about the reconciled object: (type, reason, message)."""


@dataclass(frozen=True)
class Context:
    runtime: Runtime
    emit: EventFn
    logger: logging.Logger | logging.LoggerAdapter[Any]
    now: datetime.datetime

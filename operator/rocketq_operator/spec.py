"""The RocketMQCluster spec, parsed and validated into frozen values.

A ``RocketMQCluster`` arrives as JSON the API server has defaulted and checked against the CRD
schema. That check is not enough to trust it: an operator may run against a cluster whose CRD
is older than the operator, CEL rules (DLedger's odd quorum and preferred leader, the identity
keys in ``brokers.config``) are not evaluated by every API server or emulator, and some limits depend
on more than one field (the longest child name depends on the cluster name *and* the group
count). So every field is read again here, defaults are filled in where they are missing, and
every problem becomes one human-readable line in ``Parsed.errors``. The reconciler turns those
lines into a ``Ready=False, reason=InvalidSpec`` condition; nothing here raises on bad input.

What this module does not do: talk to the API, compare with what is running (a change of
``brokers.mode`` on a live cluster is the reconciler's business), or render objects.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rocketq import settings as rocketq_settings
from rocketq.proxy import settings as proxy_settings
from rocketq_operator import validation
from rocketq_operator.validation import Reader

DEFAULT_IMAGE: Final = "rocketq/rocketq:0.1.0"
DEFAULT_NAMESRV_REPLICAS: Final = 2
MAX_NAMESRV_REPLICAS: Final = 9
DEFAULT_GROUPS: Final = 1
MAX_GROUPS: Final = 128
DEFAULT_REPLICAS_PER_GROUP: Final = 2
MAX_MASTER_SLAVE_REPLICAS: Final = 5
DLEDGER_REPLICAS: Final = (3, 5)
PREFERRED_LEADER_KEY: Final = "preferredLeaderId"
"""DLedger's broker.conf key for the member that should lead whenever it is caught up."""
DEFAULT_STORAGE_SIZE: Final = "20Gi"
MAX_CONFIG_ENTRIES: Final = 256
MAX_CONFIG_VALUE_LENGTH: Final = 4096

MAX_CLUSTER_NAME: Final = 40
"""Longest cluster name. A StatefulSet's name plus its 11-character revision-hash suffix must
fit in a 63-character label, so StatefulSet names stay within 52: ``<name>-broker-<group>``
with a 40-character name and group 127 is 51."""

IDENTITY_KEYS: Final = frozenset({"brokerClusterName", "brokerName", "brokerId", "brokerRole"})
"""broker.conf keys that say who a broker is; the operator derives them from the spec."""

OPERATOR_KEYS: Final = frozenset({
    "listenPort", "haListenPort", "metricsPort", "storePathRootDir", "namesrvAddr", "brokerIP1",
    "enableDLegerCommitLog", "dLegerGroup", "dLegerPeers", "dLegerSelfId", "rocketmq.acl.plain.file",
})
"""broker.conf keys the rendered pods depend on (ports, paths, peers); overriding them would
break the Services, probes or volumes the operator renders around them."""

_QUANTITY: Final = re.compile(
    r"^[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_STORAGE_SIZE: Final = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_CONFIG_KEY: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")

DEFAULT_ANALYTICS_IMAGE: Final = "ghcr.io/rocketq/rocketq-spark:0.1.0"
DEFAULT_LAG_SCHEDULE: Final = "*/5 * * * *"
DEFAULT_TRACE_SCHEDULE: Final = "0 * * * *"
DEFAULT_HISTORY_SIZE: Final = "5Gi"
DEFAULT_SPARK_MEMORY: Final = "512m"
MAX_SPARK_CORES: Final = 64
MAX_EXECUTORS: Final = 64
MAX_SCHEDULE_LENGTH: Final = 128
SPARK_RUN_SUFFIX: Final = 20
"""spark-operator names each run ``<ScheduledSparkApplication>-<UnixNano>`` (19 digits and a dash),
and that name becomes a label value on the driver: at most 63 characters."""
ANALYTICS_JOB_SUFFIXES: Final = ("-lag", "-traces")
MAX_ANALYTICS_CLUSTER_NAME: Final = 63 - SPARK_RUN_SUFFIX - max(len(s) for s in ANALYTICS_JOB_SUFFIXES)
"""36: a cluster whose scheduled jobs' runs still have names spark-operator can label."""
SCHEDULE: Final = re.compile(
    r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [0-9][0-9a-z.]*|[^ ]+( [^ ]+){4})$")
"""What spark-operator's cron parser takes: five fields, a descriptor, or ``@every <duration>``."""
_SPARK_MEMORY: Final = re.compile(r"^[1-9][0-9]*[kmgt]$")
_PUSHGATEWAY: Final = re.compile(r"^[^\s]+$")

DEFAULT_CONSOLE_REPLICAS: Final = 1
MAX_CONSOLE_REPLICAS: Final = 5
DEFAULT_CONSOLE_PORT: Final = 8080
DEFAULT_USERS_KEY: Final = "users"
MAX_INGRESS_ANNOTATIONS: Final = 64
_SECRET_KEY: Final = re.compile(r"^[-._a-zA-Z0-9]+$")
_INGRESS_HOST: Final = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_INGRESS_PATH: Final = re.compile(r"^/[^\s]*$")


DEFAULT_PROXY_REPLICAS: Final = 2
MAX_PROXY_REPLICAS: Final = 64
PROXY_OPERATOR_KEYS: Final = frozenset({
    "namesrvAddr", "grpcServerPort", "grpcBindAddress", "grpcAdvertisedHost", "proxyMode", "rocketMQClusterName",
    "metricsPort",
    "aclEnable", "rocketmq.acl.plain.file", "enableAclRpcHookForClusterMode", "innerClientAuthenticationCredentials",
    "innerClientCredentialsFile",
    "tlsTestModeEnable", "tlsCertPath", "tlsKeyPath", "tls.server.mode",
})
"""rmq-proxy.json keys the operator decides: where the proxy listens, which name servers and cluster it
fronts, where it serves metrics. ACL is among them: with ``spec.acl`` the proxy checks clients against
the cluster's plain_acl.yml and signs its broker calls with the account of the Secret's tools.yml, both
from the mounted ACL Secret (``rendering.proxy``); without it there is no accounts file to mount. The
TLS keys follow ``spec.proxy.tls`` (``TLS_KEYS``): the certificate is a mounted Secret, and the probes
must match the port's mode."""
TLS_KEYS: Final = frozenset(key for key in PROXY_OPERATOR_KEYS if key.startswith("tls"))
PROXY_CONFIG_KEYS: Final = tuple(sorted(rocketq_settings.keys_of(proxy_settings.ProxySettings) - PROXY_OPERATOR_KEYS))
"""What ``spec.proxy.config`` may set: every key ``rocketq proxy`` uses that the operator does not own
(a key rocketq ignores would do nothing, so it is refused rather than passed on)."""
INHERITED_PROXY_KEYS: Final = ("maxMessageSize", "messageDelayLevel")
"""Broker keys the proxy must agree with; set in ``spec.brokers.config``, they are the proxy's defaults."""
_PLACEHOLDER_NAMESRV: Final = "namesrv:9876"
"""Stands in for the rendered name-server list when the proxy's settings are checked here."""


class PullPolicy(enum.Enum):
    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"
    NEVER = "Never"


class BrokerMode(enum.Enum):
    MASTER_SLAVE = "MasterSlave"
    DLEDGER = "DLedger"


class BrokerRole(enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"


class FlushDiskType(enum.Enum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class ServiceType(enum.Enum):
    CLUSTER_IP = "ClusterIP"
    NODE_PORT = "NodePort"
    LOAD_BALANCER = "LoadBalancer"


class StorageType(enum.Enum):
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    EMPTY_DIR = "EmptyDir"


@dataclass(frozen=True)
class Resources:
    """core/v1 ResourceRequirements, quantities kept as the user wrote them."""

    requests: Mapping[str, str | int] = field(default_factory=dict)
    limits: Mapping[str, str | int] = field(default_factory=dict)

    def as_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.requests:
            out["requests"] = dict(self.requests)
        if self.limits:
            out["limits"] = dict(self.limits)
        return out


@dataclass(frozen=True)
class NameServerSpec:
    replicas: int = DEFAULT_NAMESRV_REPLICAS
    resources: Resources = field(default_factory=Resources)


@dataclass(frozen=True)
class BrokerSpec:
    groups: int = DEFAULT_GROUPS
    mode: BrokerMode = BrokerMode.MASTER_SLAVE
    replicas_per_group: int = DEFAULT_REPLICAS_PER_GROUP
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    resources: Resources = field(default_factory=Resources)
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StorageSpec:
    type: StorageType = StorageType.PERSISTENT_VOLUME_CLAIM
    size: str = DEFAULT_STORAGE_SIZE
    storage_class_name: str | None = None


@dataclass(frozen=True)
class SchedulingSpec:
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Mapping[str, Any]] = ()
    affinity: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SparkPods:
    """Cores and memory (Spark's notation: ``512m``, ``2g``) of a driver or of each executor."""

    cores: int = 1
    memory: str = DEFAULT_SPARK_MEMORY


@dataclass(frozen=True)
class AnalyticsSpec:
    """``spec.analytics``: the two Spark jobs, scheduled for this cluster (off unless enabled)."""

    enabled: bool = False
    image: str = DEFAULT_ANALYTICS_IMAGE
    lag_schedule: str = DEFAULT_LAG_SCHEDULE
    trace_schedule: str = DEFAULT_TRACE_SCHEDULE
    pushgateway: str | None = None
    history_size: str = DEFAULT_HISTORY_SIZE
    history_storage_class: str | None = None
    driver: SparkPods = field(default_factory=SparkPods)
    executor: SparkPods = field(default_factory=SparkPods)
    executors: int = 1


class ProxyTlsMode(enum.Enum):
    """``tls.server.mode`` of an operator-run proxy. No ``permissive``: ``rocketq proxy`` refuses it
    (a grpc.aio port is either TLS or plaintext, docs/proxy.md)."""

    DISABLED = "disabled"
    ENFORCING = "enforcing"


@dataclass(frozen=True)
class ProxyTlsSpec:
    """``spec.proxy.tls``: the gRPC port serves TLS with the certificate of a kubernetes.io/tls Secret."""

    secret_name: str | None = None
    """The Secret (keys ``tls.crt``, ``tls.key``) in the cluster's namespace."""
    mode: ProxyTlsMode = ProxyTlsMode.DISABLED
    """``enforcing`` by default when a Secret is named, else ``disabled``."""

    @property
    def enabled(self) -> bool:
        return self.mode is ProxyTlsMode.ENFORCING


class ProxyServiceType(enum.Enum):
    """How the proxy's Service is exposed. No NodePort: routes name the address a client dialled with
    the proxy's own port, and a node port differs from it, so clients would be sent to a closed port."""

    CLUSTER_IP = "ClusterIP"
    LOAD_BALANCER = "LoadBalancer"


@dataclass(frozen=True)
class ProxySpec:
    """``spec.proxy``: the standalone gRPC proxy (``rocketq proxy``) as a Deployment (off unless enabled)."""

    enabled: bool = False
    replicas: int = DEFAULT_PROXY_REPLICAS
    grpc_port: int = proxy_settings.DEFAULT_GRPC_PORT
    image: str | None = None
    """None: the cluster's ``spec.image`` (one image runs name servers, brokers and the proxy)."""
    resources: Resources = field(default_factory=Resources)
    service_type: ProxyServiceType = ProxyServiceType.CLUSTER_IP
    service_annotations: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, str] = field(default_factory=dict)
    tls: ProxyTlsSpec = field(default_factory=ProxyTlsSpec)


@dataclass(frozen=True)
class IngressSpec:
    """``spec.console.ingress``: an Ingress in front of the console's Service (off unless enabled)."""

    enabled: bool = False
    host: str | None = None
    class_name: str | None = None
    path: str = "/"
    tls_secret: str | None = None
    """A kubernetes.io/tls Secret for ``host``: the Ingress terminates HTTPS and the console marks
    its session cookie Secure."""
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConsoleSpec:
    """``spec.console``: a ``rocketq console`` Deployment for this cluster (off unless enabled).

    The users file (``name:role:argon2-hash`` lines) comes from key ``users_key`` of the Secret
    ``users_secret``, mounted as a file; the console never runs with a generated password here."""

    enabled: bool = False
    replicas: int = DEFAULT_CONSOLE_REPLICAS
    users_secret: str | None = None
    users_key: str = DEFAULT_USERS_KEY
    service_type: ServiceType = ServiceType.CLUSTER_IP
    port: int = DEFAULT_CONSOLE_PORT
    ingress: IngressSpec = field(default_factory=IngressSpec)
    resources: Resources = field(default_factory=Resources)
    acl_credentials_secret: str | None = None
    """A Secret (keys accessKey, secretKey) with the ACL account the console signs its admin
    requests with: needed when ``spec.acl`` is on (give the account admin: true)."""


@dataclass(frozen=True)
class ClusterSpec:
    image: str = DEFAULT_IMAGE
    image_pull_policy: PullPolicy = PullPolicy.IF_NOT_PRESENT
    name_servers: NameServerSpec = field(default_factory=NameServerSpec)
    brokers: BrokerSpec = field(default_factory=BrokerSpec)
    storage: StorageSpec = field(default_factory=StorageSpec)
    metrics_enabled: bool = True
    scheduling: SchedulingSpec = field(default_factory=SchedulingSpec)
    acl_secret_name: str | None = None
    analytics: AnalyticsSpec = field(default_factory=AnalyticsSpec)
    proxy: ProxySpec = field(default_factory=ProxySpec)
    console: ConsoleSpec = field(default_factory=ConsoleSpec)


@dataclass(frozen=True)
class ClusterMeta:
    """Who the cluster is: what names and owner references of its children derive from."""

    name: str
    namespace: str
    uid: str
    generation: int | None = None


@dataclass(frozen=True)
class Cluster:
    meta: ClusterMeta
    spec: ClusterSpec


@dataclass(frozen=True)
class Parsed:
    """A parse outcome: the spec when it is usable, and every problem found either way."""

    spec: ClusterSpec | None
    errors: tuple[str, ...] = ()


def parse_cluster_spec(raw: Any, name: str) -> Parsed:
    """Parse a RocketMQCluster's ``spec`` (and check ``name``, which children names derive from)."""
    r = Reader()
    _check_cluster_name(r, name)
    top = r.mapping(raw, "spec")
    brokers = _brokers(r, r.mapping(top.get("brokers"), "spec.brokers"))
    acl_secret_name = _acl(r, top.get("acl"))
    spec = ClusterSpec(
        image=r.string(top.get("image"), "spec.image", DEFAULT_IMAGE, max_length=512) or DEFAULT_IMAGE,
        image_pull_policy=r.choice(top.get("imagePullPolicy"), "spec.imagePullPolicy", PullPolicy,
                                   PullPolicy.IF_NOT_PRESENT),
        name_servers=_name_servers(r, r.mapping(top.get("nameServers"), "spec.nameServers")),
        brokers=brokers,
        storage=_storage(r, r.mapping(top.get("storage"), "spec.storage")),
        metrics_enabled=r.boolean(r.mapping(top.get("metrics"), "spec.metrics").get("enabled"),
                                  "spec.metrics.enabled", True),
        scheduling=_scheduling(r, r.mapping(top.get("scheduling"), "spec.scheduling")),
        acl_secret_name=acl_secret_name,
        analytics=_analytics(r, r.mapping(top.get("analytics"), "spec.analytics"), name),
        proxy=_proxy(r, r.mapping(top.get("proxy"), "spec.proxy"), brokers),
        console=_console(r, r.mapping(top.get("console"), "spec.console")),
    )
    errors = tuple(r.errors)
    return Parsed(spec=None if errors else spec, errors=errors)


def _check_cluster_name(r: Reader, name: str) -> None:
    if not validation.DNS_1035.match(name):
        r.fail("metadata.name", f"{name!r} must be a DNS-1035 label: it names Services")
    elif len(name) > MAX_CLUSTER_NAME:
        r.fail("metadata.name", f"must be at most {MAX_CLUSTER_NAME} characters, got {len(name)}")


def _resources(r: Reader, raw: Any, path: str) -> Resources:
    top = r.mapping(raw, path)
    sections: dict[str, dict[str, str | int]] = {}
    for section in ("requests", "limits"):
        values: dict[str, str | int] = {}
        for key, value in r.mapping(top.get(section), f"{path}.{section}").items():
            where = f"{path}.{section}.{key}"
            if isinstance(value, bool) or not isinstance(value, str | int):
                r.fail(where, f"must be a quantity, got {validation.shown(value)}")
            elif isinstance(value, str) and not _QUANTITY.match(value):
                r.fail(where, f"{value!r} is not a Kubernetes quantity")
            else:
                values[str(key)] = value
        sections[section] = values
    for key in top:
        if key not in ("requests", "limits"):
            r.fail(f"{path}.{key}", "unknown field (only requests and limits are supported)")
    return Resources(requests=sections["requests"], limits=sections["limits"])


def _name_servers(r: Reader, raw: Mapping[str, Any]) -> NameServerSpec:
    return NameServerSpec(
        replicas=r.integer(raw.get("replicas"), "spec.nameServers.replicas", DEFAULT_NAMESRV_REPLICAS,
                           1, MAX_NAMESRV_REPLICAS),
        resources=_resources(r, raw.get("resources"), "spec.nameServers.resources"),
    )


def _brokers(r: Reader, raw: Mapping[str, Any]) -> BrokerSpec:
    mode = r.choice(raw.get("mode"), "spec.brokers.mode", BrokerMode, BrokerMode.MASTER_SLAVE)
    replicas = r.integer(raw.get("replicasPerGroup"), "spec.brokers.replicasPerGroup",
                         DEFAULT_REPLICAS_PER_GROUP, 1, MAX_MASTER_SLAVE_REPLICAS)
    if mode is BrokerMode.DLEDGER and replicas not in DLEDGER_REPLICAS:
        r.fail("spec.brokers.replicasPerGroup",
               f"DLedger needs an odd quorum: must be 3 or 5 when mode is DLedger, got {replicas}")
    config = _broker_config(r, r.mapping(raw.get("config"), "spec.brokers.config"))
    _check_preferred_leader(r, config.get(PREFERRED_LEADER_KEY), mode, replicas)
    return BrokerSpec(
        groups=r.integer(raw.get("groups"), "spec.brokers.groups", DEFAULT_GROUPS, 1, MAX_GROUPS),
        mode=mode,
        replicas_per_group=replicas,
        broker_role=r.choice(raw.get("brokerRole"), "spec.brokers.brokerRole", BrokerRole,
                             BrokerRole.ASYNC_MASTER),
        flush_disk_type=r.choice(raw.get("flushDiskType"), "spec.brokers.flushDiskType", FlushDiskType,
                                 FlushDiskType.ASYNC_FLUSH),
        resources=_resources(r, raw.get("resources"), "spec.brokers.resources"),
        config=config,
    )


def _check_preferred_leader(r: Reader, value: str | None, mode: BrokerMode, replicas: int) -> None:
    """``preferredLeaderId`` (DLedger's own key) must name a member: ``n0`` .. ``n<replicas-1>``."""
    if value is None:
        return
    where = f"spec.brokers.config.{PREFERRED_LEADER_KEY}"
    if mode is not BrokerMode.DLEDGER:
        r.fail(where, "applies only to mode DLedger")
    elif value not in {f"n{ordinal}" for ordinal in range(replicas)}:
        r.fail(where, f"{value!r} names no member: the members are n0 .. n{replicas - 1} (n<pod ordinal>)")


def _broker_config(r: Reader, raw: Mapping[str, Any]) -> dict[str, str]:
    if len(raw) > MAX_CONFIG_ENTRIES:
        r.fail("spec.brokers.config", f"must have at most {MAX_CONFIG_ENTRIES} entries, got {len(raw)}")
        return {}
    config: dict[str, str] = {}
    for key, value in raw.items():
        where = f"spec.brokers.config.{key}"
        if not _CONFIG_KEY.match(key):
            r.fail(where, "is not a broker.conf key (letters, digits, '_' and '.', starting with a letter)")
        elif key in IDENTITY_KEYS:
            r.fail(where, "the operator owns brokerClusterName, brokerName, brokerId and brokerRole")
        elif key in OPERATOR_KEYS:
            r.fail(where, "the operator sets this key for the pods it renders (ports, paths, peers)")
        elif not isinstance(value, str):
            r.fail(where, f"must be a string (broker.conf values are text), got {validation.shown(value)}")
        elif len(value) > MAX_CONFIG_VALUE_LENGTH or "\n" in value or "\r" in value:
            r.fail(where, f"must be one line of at most {MAX_CONFIG_VALUE_LENGTH} characters")
        else:
            config[key] = value
    return config


def _storage(r: Reader, raw: Mapping[str, Any]) -> StorageSpec:
    kind = r.choice(raw.get("type"), "spec.storage.type", StorageType, StorageType.PERSISTENT_VOLUME_CLAIM)
    class_name = r.string(raw.get("storageClassName"), "spec.storage.storageClassName", None,
                          validation.DNS_1123_SUBDOMAIN)
    if class_name is not None and kind is not StorageType.PERSISTENT_VOLUME_CLAIM:
        r.fail("spec.storage.storageClassName", "applies only to type PersistentVolumeClaim")
    return StorageSpec(
        type=kind,
        size=r.string(raw.get("size"), "spec.storage.size", DEFAULT_STORAGE_SIZE, _STORAGE_SIZE, 32)
        or DEFAULT_STORAGE_SIZE,
        storage_class_name=class_name,
    )


def _scheduling(r: Reader, raw: Mapping[str, Any]) -> SchedulingSpec:
    selector: dict[str, str] = {}
    for key, value in r.mapping(raw.get("nodeSelector"), "spec.scheduling.nodeSelector").items():
        if isinstance(value, str):
            selector[key] = value
        else:
            r.fail(f"spec.scheduling.nodeSelector.{key}", f"must be a string, got {validation.shown(value)}")
    tolerations: list[Mapping[str, Any]] = []
    raw_tolerations = raw.get("tolerations")
    if raw_tolerations is not None and not isinstance(raw_tolerations, list):
        r.fail("spec.scheduling.tolerations", f"must be a list, got {validation.shown(raw_tolerations)}")
        raw_tolerations = None
    for index, item in enumerate(raw_tolerations or ()):
        if isinstance(item, Mapping):
            tolerations.append(dict(item))
        else:
            r.fail(f"spec.scheduling.tolerations[{index}]", f"must be an object, got {validation.shown(item)}")
    affinity = dict(r.mapping(raw.get("affinity"), "spec.scheduling.affinity"))
    return SchedulingSpec(node_selector=selector, tolerations=tuple(tolerations), affinity=affinity)


def _acl(r: Reader, raw: Any) -> str | None:
    if raw is None:
        return None
    top = r.mapping(raw, "spec.acl")
    name = r.string(top.get("secretName"), "spec.acl.secretName", None, validation.DNS_1123_SUBDOMAIN)
    if name is None and "secretName" not in top:
        r.fail("spec.acl.secretName", "is required when spec.acl is set")
    return name


def _analytics(r: Reader, raw: Mapping[str, Any], name: str) -> AnalyticsSpec:
    enabled = r.boolean(raw.get("enabled"), "spec.analytics.enabled", False)
    if enabled and len(name) > MAX_ANALYTICS_CLUSTER_NAME:
        r.fail("metadata.name", f"must be at most {MAX_ANALYTICS_CLUSTER_NAME} characters when analytics is "
                                "enabled: the Spark runs' names <cluster>-traces-<19 digits> must fit in a label")
    history = r.mapping(raw.get("history"), "spec.analytics.history")
    executor = r.mapping(raw.get("executor"), "spec.analytics.executor")
    return AnalyticsSpec(
        enabled=enabled,
        image=r.string(raw.get("image"), "spec.analytics.image", DEFAULT_ANALYTICS_IMAGE, max_length=512)
        or DEFAULT_ANALYTICS_IMAGE,
        lag_schedule=_schedule(r, raw.get("lagSchedule"), "spec.analytics.lagSchedule", DEFAULT_LAG_SCHEDULE),
        trace_schedule=_schedule(r, raw.get("traceSchedule"), "spec.analytics.traceSchedule",
                                 DEFAULT_TRACE_SCHEDULE),
        pushgateway=r.string(raw.get("pushgateway"), "spec.analytics.pushgateway", None, _PUSHGATEWAY, 253),
        history_size=r.string(history.get("size"), "spec.analytics.history.size", DEFAULT_HISTORY_SIZE,
                              _STORAGE_SIZE, 32) or DEFAULT_HISTORY_SIZE,
        history_storage_class=r.string(history.get("storageClassName"), "spec.analytics.history.storageClassName",
                                       None, validation.DNS_1123_SUBDOMAIN),
        driver=_spark_pods(r, r.mapping(raw.get("driver"), "spec.analytics.driver"), "spec.analytics.driver"),
        executor=_spark_pods(r, executor, "spec.analytics.executor"),
        executors=r.integer(executor.get("instances"), "spec.analytics.executor.instances", 1, 1, MAX_EXECUTORS),
    )


def _proxy(r: Reader, raw: Mapping[str, Any], brokers: BrokerSpec) -> ProxySpec:
    enabled = r.boolean(raw.get("enabled"), "spec.proxy.enabled", False)
    service = r.mapping(raw.get("service"), "spec.proxy.service")
    annotations: dict[str, str] = {}
    for key, value in r.mapping(service.get("annotations"), "spec.proxy.service.annotations").items():
        if isinstance(value, str):
            annotations[str(key)] = value
        else:
            r.fail(f"spec.proxy.service.annotations.{key}", f"must be a string, got {validation.shown(value)}")
    grpc_port = r.integer(raw.get("grpcPort"), "spec.proxy.grpcPort", proxy_settings.DEFAULT_GRPC_PORT, 1, 65535)
    return ProxySpec(
        enabled=enabled,
        replicas=r.integer(raw.get("replicas"), "spec.proxy.replicas", DEFAULT_PROXY_REPLICAS, 1, MAX_PROXY_REPLICAS),
        grpc_port=grpc_port,
        image=r.string(raw.get("image"), "spec.proxy.image", None, max_length=512),
        resources=_resources(r, raw.get("resources"), "spec.proxy.resources"),
        service_type=r.choice(service.get("type"), "spec.proxy.service.type", ProxyServiceType,
                              ProxyServiceType.CLUSTER_IP),
        service_annotations=annotations,
        config=_proxy_config(r, r.mapping(raw.get("config"), "spec.proxy.config"), brokers, grpc_port, enabled),
        tls=_proxy_tls(r, r.mapping(raw.get("tls"), "spec.proxy.tls")),
    )


def _proxy_tls(r: Reader, raw: Mapping[str, Any]) -> ProxyTlsSpec:
    secret = r.string(raw.get("secretName"), "spec.proxy.tls.secretName", None, validation.DNS_1123_SUBDOMAIN)
    default = ProxyTlsMode.ENFORCING if secret is not None else ProxyTlsMode.DISABLED
    if raw.get("mode") == "permissive":
        r.fail("spec.proxy.tls.mode", "permissive is refused, as rocketq proxy refuses it: its port is either "
                                      "TLS (enforcing) or plaintext (disabled)")
        return ProxyTlsSpec(secret, default)
    mode = r.choice(raw.get("mode"), "spec.proxy.tls.mode", ProxyTlsMode, default)
    if mode is ProxyTlsMode.ENFORCING and secret is None and "secretName" not in raw:
        r.fail("spec.proxy.tls.secretName", "is required with mode enforcing (a kubernetes.io/tls Secret)")
    return ProxyTlsSpec(secret, mode)


def _proxy_config(r: Reader, raw: Mapping[str, Any], brokers: BrokerSpec, grpc_port: int,
                  enabled: bool) -> dict[str, str]:
    """The proxy's own keys over the brokers' INHERITED_PROXY_KEYS. An enabled proxy's values are
    checked as ``rocketq proxy`` checks them at start, so a bad one is an InvalidSpec here rather
    than a crash-looping pod."""
    config = {key: brokers.config[key] for key in INHERITED_PROXY_KEYS if key in brokers.config}
    given: dict[str, str] = {}
    for key, value in raw.items():
        where = f"spec.proxy.config.{key}"
        if key in TLS_KEYS:
            r.fail(where, "the operator sets the TLS keys from spec.proxy.tls (secretName, mode)")
        elif key in PROXY_OPERATOR_KEYS:
            r.fail(where, "the operator decides this key for the proxy it renders (name servers, port, "
                          "cluster, CLUSTER mode, ACL from spec.acl)")
        elif key not in PROXY_CONFIG_KEYS:
            r.fail(where, f"is not a key rocketq proxy uses; one of {', '.join(PROXY_CONFIG_KEYS)}")
        elif not isinstance(value, str):
            r.fail(where, f"must be a string (as rmq-proxy.json values may be), got {validation.shown(value)}")
        else:
            given[key] = value
    config.update(given)
    if not enabled:
        return config
    try:
        proxy_settings.load(config, {"namesrvAddr": _PLACEHOLDER_NAMESRV, "grpcServerPort": str(grpc_port)})
    except rocketq_settings.SettingsError as exc:
        r.fail("spec.proxy.config", str(exc))
        return {}
    return config


def _schedule(r: Reader, raw: Any, path: str, default: str) -> str:
    return r.string(raw, path, default, SCHEDULE, MAX_SCHEDULE_LENGTH) or default


def _spark_pods(r: Reader, raw: Mapping[str, Any], path: str) -> SparkPods:
    return SparkPods(
        cores=r.integer(raw.get("cores"), f"{path}.cores", 1, 1, MAX_SPARK_CORES),
        memory=r.string(raw.get("memory"), f"{path}.memory", DEFAULT_SPARK_MEMORY, _SPARK_MEMORY, 16)
        or DEFAULT_SPARK_MEMORY,
    )


def _console(r: Reader, raw: Mapping[str, Any]) -> ConsoleSpec:
    enabled = r.boolean(raw.get("enabled"), "spec.console.enabled", False)
    secret = r.string(raw.get("usersSecret"), "spec.console.usersSecret", None, validation.DNS_1123_SUBDOMAIN)
    if enabled and secret is None and "usersSecret" not in raw:
        r.fail("spec.console.usersSecret", "is required when the console is enabled (a Secret whose key "
                                           "holds name:role:argon2-hash lines, see docs/console.md)")
    service = r.mapping(raw.get("service"), "spec.console.service")
    return ConsoleSpec(
        enabled=enabled,
        replicas=r.integer(raw.get("replicas"), "spec.console.replicas", DEFAULT_CONSOLE_REPLICAS, 1,
                           MAX_CONSOLE_REPLICAS),
        users_secret=secret,
        users_key=r.string(raw.get("usersKey"), "spec.console.usersKey", DEFAULT_USERS_KEY, _SECRET_KEY)
        or DEFAULT_USERS_KEY,
        service_type=r.choice(service.get("type"), "spec.console.service.type", ServiceType,
                              ServiceType.CLUSTER_IP),
        port=r.integer(service.get("port"), "spec.console.service.port", DEFAULT_CONSOLE_PORT, 1, 65535),
        ingress=_ingress(r, r.mapping(raw.get("ingress"), "spec.console.ingress")),
        resources=_resources(r, raw.get("resources"), "spec.console.resources"),
        acl_credentials_secret=r.string(raw.get("aclCredentialsSecret"), "spec.console.aclCredentialsSecret", None,
                                        validation.DNS_1123_SUBDOMAIN),
    )


def _ingress(r: Reader, raw: Mapping[str, Any]) -> IngressSpec:
    host = r.string(raw.get("host"), "spec.console.ingress.host", None, _INGRESS_HOST)
    tls = r.string(raw.get("tlsSecret"), "spec.console.ingress.tlsSecret", None, validation.DNS_1123_SUBDOMAIN)
    if tls is not None and host is None:
        r.fail("spec.console.ingress.tlsSecret", "needs spec.console.ingress.host (the name the certificate is for)")
    annotations = r.mapping(raw.get("annotations"), "spec.console.ingress.annotations")
    if len(annotations) > MAX_INGRESS_ANNOTATIONS:
        r.fail("spec.console.ingress.annotations", f"must have at most {MAX_INGRESS_ANNOTATIONS} entries")
        annotations = {}
    for key, value in annotations.items():
        if not isinstance(value, str):
            r.fail(f"spec.console.ingress.annotations.{key}", f"must be a string, got {validation.shown(value)}")
    return IngressSpec(
        enabled=r.boolean(raw.get("enabled"), "spec.console.ingress.enabled", False),
        host=host,
        class_name=r.string(raw.get("className"), "spec.console.ingress.className", None,
                            validation.DNS_1123_SUBDOMAIN),
        path=r.string(raw.get("path"), "spec.console.ingress.path", "/", _INGRESS_PATH, 1024) or "/",
        tls_secret=tls,
        annotations={str(k): v for k, v in annotations.items() if isinstance(v, str)},
    )


def cluster_meta(body: Mapping[str, Any]) -> ClusterMeta:
    """Identity of a RocketMQCluster from its object (kopf's ``body``)."""
    meta = body.get("metadata", {})
    generation = meta.get("generation")
    return ClusterMeta(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        uid=str(meta.get("uid", "")),
        generation=generation if isinstance(generation, int) else None,
    )

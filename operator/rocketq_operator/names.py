"""Every name the operator gives a child object, from one function each.

Rendering, reconciling, status and tests all ask here, so a name is decided once. A broker
group's ``brokerName`` (what RocketMQ clients see in routes) is also the name of its
StatefulSet and its headless Service; its pods are ``<brokerName>-<ordinal>`` and are reached
at ``<pod>.<brokerName>.<namespace>.svc``. Name servers run as a StatefulSet too (not a
Deployment): only stable pod names give brokers a ``NAMESRV_ADDR`` list that survives pod
restarts, the churn apache/rocketmq-operator's users keep reporting.
"""

from __future__ import annotations

import re
from typing import Final

NAMESRV_PORT: Final = 9876
BROKER_PORT: Final = 10911
HA_PORT: Final = 10912
DLEDGER_PORT: Final = 40911
METRICS_PORT: Final = 5557

_GROUP_SUFFIX: Final = re.compile(r"^(?P<cluster>.+)-broker-(?P<index>0|[1-9][0-9]*)$")


def namesrv(cluster: str) -> str:
    """The name servers' StatefulSet, headless Service and PodDisruptionBudget."""
    return f"{cluster}-namesrv"


def namesrv_pod(cluster: str, ordinal: int) -> str:
    return f"{namesrv(cluster)}-{ordinal}"


def namesrv_address(cluster: str, namespace: str, ordinal: int) -> str:
    return f"{namesrv_pod(cluster, ordinal)}.{namesrv(cluster)}.{namespace}.svc:{NAMESRV_PORT}"


def namesrv_addresses(cluster: str, namespace: str, replicas: int) -> str:
    """The ``;``-separated list brokers get as NAMESRV_ADDR and clients read from status."""
    return ";".join(namesrv_address(cluster, namespace, i) for i in range(replicas))


def broker_group(cluster: str, index: int) -> str:
    """A broker group's brokerName, StatefulSet, headless Service and PodDisruptionBudget."""
    return f"{cluster}-broker-{index}"


def group_index(cluster: str, name: str) -> int | None:
    """The index of a broker group from its name, or None if the name is not one of ours."""
    match = _GROUP_SUFFIX.match(name)
    if match is None or match["cluster"] != cluster:
        return None
    return int(match["index"])


def broker_config(cluster: str, index: int) -> str:
    """The ConfigMap holding a group's broker.conf and masterOrdinal."""
    return f"{broker_group(cluster, index)}-config"


def broker_pod(cluster: str, index: int, ordinal: int) -> str:
    return f"{broker_group(cluster, index)}-{ordinal}"


def broker_host(cluster: str, namespace: str, index: int, ordinal: int) -> str:
    """A broker pod's stable DNS name: what it advertises as BROKER_IP1."""
    return f"{broker_pod(cluster, index, ordinal)}.{broker_group(cluster, index)}.{namespace}.svc"


def broker_address(cluster: str, namespace: str, index: int, ordinal: int) -> str:
    """host:port a broker registers with the name servers and admin calls go to."""
    return f"{broker_host(cluster, namespace, index, ordinal)}:{BROKER_PORT}"


def dledger_peers(cluster: str, namespace: str, index: int, replicas: int) -> str:
    """DLedger's ``dLegerPeers``: ``n<ordinal>-<host>:40911`` for every pod of the group."""
    return ";".join(
        f"n{i}-{broker_host(cluster, namespace, index, i)}:{DLEDGER_PORT}" for i in range(replicas)
    )


def store_claim(cluster: str, index: int, ordinal: int) -> str:
    """The PersistentVolumeClaim a StatefulSet makes for a pod from its ``store`` template."""
    return f"store-{broker_pod(cluster, index, ordinal)}"


def pod_ordinal(pod_name: str) -> int | None:
    """A StatefulSet pod's ordinal from its name (``...-<N>``), or None."""
    head, sep, tail = pod_name.rpartition("-")
    if not sep or not head or not tail.isdigit() or (len(tail) > 1 and tail[0] == "0"):
        return None
    return int(tail)


def analytics_lag(cluster: str) -> str:
    """The consumer_lag job's ScheduledSparkApplication (kept short: see spec.MAX_ANALYTICS_CLUSTER_NAME)."""
    return f"{cluster}-lag"


def analytics_traces(cluster: str) -> str:
    """The trace_analysis job's ScheduledSparkApplication."""
    return f"{cluster}-traces"


def analytics_history(cluster: str) -> str:
    """The PersistentVolumeClaim holding the lag history and the jobs' results."""
    return f"{cluster}-analytics"


def spark_account(cluster: str) -> str:
    """The Spark drivers' ServiceAccount, and the Role and RoleBinding that let them run executors."""
    return f"{cluster}-spark"


def namesrv_service_address(cluster: str, namespace: str) -> str:
    """The name servers' headless Service: one DNS name for all of them, whatever their count."""
    return f"{namesrv(cluster)}.{namespace}.svc:{NAMESRV_PORT}"


def proxy(cluster: str) -> str:
    """The gRPC proxy's Deployment, Service and PodDisruptionBudget (``spec.proxy``)."""
    return f"{cluster}-proxy"


def proxy_config(cluster: str) -> str:
    """The ConfigMap holding the proxy's rmq-proxy.json."""
    return f"{proxy(cluster)}-config"


def proxy_service_address(cluster: str, namespace: str, port: int) -> str:
    """Where RocketMQ 5 clients in the cluster reach the proxy: its Service and gRPC port."""
    return f"{proxy(cluster)}.{namespace}.svc:{port}"


def console(cluster: str) -> str:
    """The console's Deployment, Service and Ingress (``spec.console``)."""
    return f"{cluster}-console"


def console_service_address(cluster: str, namespace: str, port: int) -> str:
    return f"{console(cluster)}.{namespace}.svc:{port}"

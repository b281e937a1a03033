"""The analytics children of a cluster with ``spec.analytics.enabled``: the two Spark jobs.

The objects are rendered by ``rocketq_spark.manifests``, the same pure functions that write
``spark-apps/manifests/`` and that the chart mirrors, so there is one rendering of a
SparkApplication spec in the project. Here they are only made the cluster's children: named
per cluster (``names.analytics_*``), pointed at the cluster's name-server Service, labelled with
``rocketq.io/cluster`` and owned by the cluster (a controller owner reference, so the garbage
collector removes them with it and ``applying`` never adopts a stranger's object).

``rocketq_spark.manifests`` needs only PyYAML, which the operator extra installs; the operator
image copies ``spark-apps/rocketq_spark`` and installs it with the rest of the project (one
distribution, see pyproject.toml), so importing it costs no Spark.

Order matters for a first apply: the service account, its Role and RoleBinding and the
history claim exist before a scheduled run could start a driver that needs them.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from rocketq_spark import manifests

from rocketq_operator import names
from rocketq_operator.rendering import common
from rocketq_operator.spec import Cluster

COMPONENT_ANALYTICS: Final = "analytics"
SCHEDULED_KIND: Final = "ScheduledSparkApplication"


def spark_spec(cluster: Cluster) -> manifests.AnalyticsSpec:
    """The spark-apps rendering's input for this cluster."""
    meta, wanted = cluster.meta, cluster.spec.analytics
    return manifests.AnalyticsSpec(
        namesrv=names.namesrv_service_address(meta.name, meta.namespace),
        namespace=meta.namespace,
        name_prefix=meta.name,
        image=wanted.image,
        service_account=names.spark_account(meta.name),
        lag_schedule=wanted.lag_schedule,
        trace_schedule=wanted.trace_schedule,
        history_size=wanted.history_size,
        storage_class=wanted.history_storage_class,
        pushgateway=wanted.pushgateway,
        cluster=meta.name,
        driver=manifests.Resources(cores=wanted.driver.cores, memory=wanted.driver.memory),
        executor=manifests.Resources(cores=wanted.executor.cores, memory=wanted.executor.memory),
        executors=wanted.executors,
    )


def _owned(cluster: Cluster, obj: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    if name is not None:
        meta["name"] = name
    meta["labels"] = dict(sorted({
        **(meta.get("labels") or {}),
        common.LABEL_INSTANCE: cluster.meta.name,
        common.LABEL_MANAGED_BY: common.MANAGER,
        common.LABEL_CLUSTER: cluster.meta.name,
    }.items()))
    meta["ownerReferences"] = [common.owner_reference(cluster)]
    return out


def render_support(cluster: Cluster) -> list[dict[str, Any]]:
    """ServiceAccount, Role, RoleBinding and the history claim, in the order to apply them."""
    spec = spark_spec(cluster)
    return [_owned(cluster, obj) for obj in [*manifests.rbac(spec), manifests.volume_claim(spec)]]


def render_scheduled(cluster: Cluster) -> list[dict[str, Any]]:
    """The consumer_lag and trace_analysis ScheduledSparkApplications."""
    jobs = manifests.scheduled_jobs(spark_spec(cluster))
    return [_owned(cluster, jobs[manifests.LAG_JOB], names.analytics_lag(cluster.meta.name)),
            _owned(cluster, jobs[manifests.TRACE_JOB], names.analytics_traces(cluster.meta.name))]


def removable(cluster_name: str) -> list[tuple[str, str]]:
    """(kind, name) of what a disabled ``spec.analytics`` removes, jobs first.

    The history claim is not among them: it holds the lag trend, which an analytics switched
    off and on again should find; it goes with the cluster (owner reference)."""
    account = names.spark_account(cluster_name)
    return [(SCHEDULED_KIND, names.analytics_lag(cluster_name)), (SCHEDULED_KIND, names.analytics_traces(cluster_name)),
            ("RoleBinding", account), ("Role", account), ("ServiceAccount", account)]

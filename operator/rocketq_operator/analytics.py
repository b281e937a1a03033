"""The ``analytics`` reconcile step: a cluster's Spark jobs follow ``spec.analytics.enabled``.

Enabled: apply the drivers' ServiceAccount, Role and RoleBinding and the history claim, then
the two ScheduledSparkApplications (``rendering.analytics``), through ``applying`` like every
other child: created or patched when the spec changed, never taken over from another owner
(that is a ``NameConflict`` in ``Degraded``, as for the brokers' objects).

spark-operator is optional. Without its CRD the API server answers 404 for the
``scheduledsparkapplications`` resource, and without the grant 403; either way the step returns
``AnalyticsUnavailable=True`` with what to do, emits one Warning Event when that changes, and
the pass goes on: brokers never wait for analytics. Once spark-operator is installed, the next
pass creates the jobs.

Disabled: the jobs and their RBAC are removed (only objects this cluster owns). The history
claim stays, with the cluster as owner: it holds the lag trend, which re-enabling should find.
Removal is tried while the previous status does not already say ``Disabled``, so a cluster that
never used analytics costs five GETs once, not on every pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from rocketq_operator import applying, kubeapi
from rocketq_operator.conditions import Condition, Type
from rocketq_operator.rendering import analytics as rendering
from rocketq_operator.spec import Cluster

if TYPE_CHECKING:
    from rocketq_operator.reconciler import ClusterPass

DISABLED: Final = "Disabled"
SCHEDULED: Final = "Scheduled"
NO_SPARK_OPERATOR: Final = "SparkOperatorMissing"
FORBIDDEN: Final = "Forbidden"


WARNINGS: Final = "analytics"
"""The runtime's memory of this step's Warning Events (``Announcements.not_yet``)."""


async def reconcile(step: ClusterPass, cluster: Cluster) -> Condition:
    """Bring the analytics children to the spec; the ``AnalyticsUnavailable`` condition to report."""
    if not cluster.spec.analytics.enabled:
        step.ctx.runtime.announcements.not_yet(step.warnings_key(WARNINGS), [])  # a later failure is news again
        return await _disable(step, cluster)
    try:
        for obj in rendering.render_support(cluster):
            await step.apply_one(obj)
        for obj in rendering.render_scheduled(cluster):
            await step.apply_one(obj)
    except kubeapi.NotFound:
        return _unavailable(step, NO_SPARK_OPERATOR, (
            "spec.analytics is enabled but the API server has no ScheduledSparkApplication "
            "(sparkoperator.k8s.io/v1beta2): install spark-operator; the jobs are created on the next pass"))
    except kubeapi.Forbidden as exc:
        return _unavailable(step, FORBIDDEN, (
            f"spec.analytics is enabled but the operator may not create the Spark jobs' objects ({exc}); "
            "grant what the chart's operator role grants"))
    step.ctx.runtime.announcements.not_yet(step.warnings_key(WARNINGS), [])
    wanted = cluster.spec.analytics
    return Condition(Type.ANALYTICS_UNAVAILABLE, False, SCHEDULED, (
        f"consumer_lag ({wanted.lag_schedule}) and trace_analysis ({wanted.trace_schedule}) are scheduled"))


async def _disable(step: ClusterPass, cluster: Cluster) -> Condition:
    meta = cluster.meta
    before = _previous(step.previous)
    if before is None or before.get("reason") != DISABLED:
        try:
            for kind, name in rendering.removable(meta.name):
                await applying.remove(step.api, kind, meta.namespace, name, meta.uid)
        except kubeapi.Forbidden as exc:
            # Nothing of ours can exist where we may not even look; say so and stop asking.
            return Condition(Type.ANALYTICS_UNAVAILABLE, False, DISABLED,
                             f"spec.analytics is not enabled (no access to check for its jobs: {exc})")
    return Condition(Type.ANALYTICS_UNAVAILABLE, False, DISABLED, "spec.analytics is not enabled")


def _previous(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for item in status.get("conditions") or []:
        if isinstance(item, Mapping) and item.get("type") == Type.ANALYTICS_UNAVAILABLE.value:
            return item
    return None


def _unavailable(step: ClusterPass, reason: str, message: str) -> Condition:
    """The condition, and a Warning Event unless the previous status already said the same (or
    this operator said it since: a pass may start from a body older than the last status write)."""
    before = _previous(step.previous)
    told = before is not None and before.get("status") == "True" and before.get("reason") == reason
    fresh = step.ctx.runtime.announcements.not_yet(step.warnings_key(WARNINGS), [message])
    if fresh and not told:
        step.ctx.emit("Warning", Type.ANALYTICS_UNAVAILABLE.value, message)
    return Condition(Type.ANALYTICS_UNAVAILABLE, True, reason, message)

"""Reconcile one RocketMQCluster: a list of named steps, then one status.

Every pass is level-based: it reads the spec and what is running, and moves the world one safe
step towards the spec; the next pass (a timer, or any change of the object) continues. The
steps, in order:

1. ``parse`` the spec; problems become ``Ready=False, reason=InvalidSpec`` and nothing is
   applied (MasterSlave failover still runs from what is observed, so a typo cannot strand a
   group without a master).
2. ``pause``: with ``rocketq.io/pause-reconciliation: "true"`` nothing happens but the
   ``ReconciliationPaused`` condition.
3. ``check_immutables``: a group whose storage, broker mode or (DLedger) size would change
   keeps running as it is and is reported (``Degraded/ImmutableFieldChange``); the API server would refuse the
   StatefulSet patch, and the data on disk would not fit the new mode anyway.
4. ``apply``: name servers (Service, StatefulSet, PDB), then per group ConfigMap, Service,
   StatefulSet, PDB. Results are values; nothing is restarted here.
5. ``failover`` (MasterSlave), ``seed`` new groups with topics and consumer groups,
   ``manual_roll`` bookkeeping, ``roll`` one out-of-date pod, ``scale_down`` (drain, remove).
   DLedger groups are never failed over (Raft elects); each member's Raft state is read once
   per pass (``dledger.observe``) for the roll (leader last, after a leadership transfer),
   the status and the ``rocketq_operator_dledger_*`` metrics, and a group without a leader or
   quorum is ``Degraded`` with one Warning Event.
6. ``analytics``: with ``spec.analytics.enabled`` the Spark jobs' ServiceAccount, Role,
   RoleBinding, history claim and two ScheduledSparkApplications; without it, the jobs and
   their RBAC are removed (the claim is kept). A cluster without spark-operator's CRD gets
   ``AnalyticsUnavailable=True`` and a Warning Event; nothing else waits for it.
7. ``proxy``: with ``spec.proxy.enabled`` the gRPC proxy's ConfigMap, Service, Deployment
   (and PDB above one replica); its readiness is ``status.proxy`` and ``ProxyReady``. Disabled,
   they are removed.
8. ``console``: with ``spec.console.enabled`` the web console's Service, Deployment and
   optional Ingress (``status.console`` says where it is and how many pods are ready); without
   it they are removed. Nothing else waits for the console either.
9. ``status``: phase, conditions, per-group masters/leaders and ready counts; the handler
   writes it only when it changed.

The pass never sleeps: anything that needs time (a pod becoming ready, a drain emptying)
is reported as progress and looked at again on the next pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rocketq_operator import (
    analytics,
    applying,
    clusterviews,
    conditions,
    console,
    dledger,
    failover,
    names,
    observing,
    proxy,
    rolling,
    scaling,
    spec,
    topology,
)
from rocketq_operator.conditions import Condition, Phase, Type
from rocketq_operator.observing import ClusterState, GroupState
from rocketq_operator.rendering import broker, common, namesrv, pdb
from rocketq_operator.runtime import Context
from rocketq_operator.spec import BrokerMode, Cluster

PAUSE_ANNOTATION: Final = "rocketq.io/pause-reconciliation"
MANUAL_ROLL_ANNOTATION: Final = "rocketq.io/manual-rolling-update"
INITIAL_PHASES: Final = (None, Phase.PENDING.value, Phase.CREATING.value)


def annotations_of(body: Mapping[str, Any]) -> Mapping[str, str]:
    return body.get("metadata", {}).get("annotations") or {}


def is_paused(body: Mapping[str, Any]) -> bool:
    return annotations_of(body).get(PAUSE_ANNOTATION) == "true"


@dataclass
class Findings:
    """What one pass saw and did, collected for the status."""

    progress: list[str] = field(default_factory=list)
    degraded: list[tuple[str, str]] = field(default_factory=list)
    not_ready: list[str] = field(default_factory=list)
    draining: bool = False
    scaling: bool = False
    seeding: bool = False
    rolling: bool = False
    refusals: list[applying.Refused] = field(default_factory=list)


class ClusterPass:
    def __init__(self, ctx: Context, body: Mapping[str, Any]) -> None:
        self.ctx = ctx
        self.body = body
        self.meta = spec.cluster_meta(body)
        self.api = ctx.runtime.api
        self.found = Findings()
        self.refused: dict[int, list[str]] = {}
        self.analytics: Condition | None = None
        self.proxy = proxy.Outcome()
        self.console: dict[str, Any] | None = None
        self.views: dict[int, dledger.GroupView] = {}
        """DLedger groups' Raft state, read once per pass."""
        self.wrote = False
        """Whether a child was created, patched or deleted in this pass."""

    @property
    def previous(self) -> Mapping[str, Any]:
        status = self.body.get("status")
        return status if isinstance(status, Mapping) else {}

    # -- entry point -------------------------------------------------------------------------

    async def reconcile(self) -> dict[str, Any]:
        """One pass; returns the status this pass wants written."""
        if is_paused(self.body):
            return self.paused_status()
        parsed = spec.parse_cluster_spec(self.body.get("spec"), self.meta.name)
        if parsed.spec is None:
            clusterviews.publish(self.ctx.runtime, self.meta.namespace, self.meta.name,
                                 clusterviews.invalid(self.meta.name))
            await self.failover_only()
            return self.invalid_status(parsed.errors)
        cluster = Cluster(self.meta, parsed.spec)
        state = await self.observe()
        self.check_immutables(cluster, state)
        await self.apply_namesrv(cluster, state)
        hashes = await self.apply_groups(cluster, state)
        if self.wrote:  # else what was observed is still what runs: no second read
            state = await self.observe()
        registry = await topology.registrations(self.ctx.runtime.admin, self.meta.name, self.meta.namespace,
                                                state.namesrv_pods)
        # What the topic and group passes need, seen just now: they need not read it themselves.
        # Steps below that move topics (seeding, failover) drop it again.
        clusterviews.publish(self.ctx.runtime, self.meta.namespace, self.meta.name, clusterviews.ClusterView(
            parsed.spec.brokers.mode, state, registry, parsed.spec.brokers.groups))
        raft = parsed.spec.brokers.mode is BrokerMode.DLEDGER
        if raft:
            await self.observe_dledger(state)
        moved = False if raft else await self.failover(cluster, state)
        if not moved:
            await self.seed(cluster, state, registry)
            manual = await self.manual_roll(cluster, state)
            await self.roll(cluster, state, registry, hashes, manual)
        await self.scale_down(cluster, state, registry)
        self.analytics = await analytics.reconcile(self, cluster)
        self.proxy = await proxy.reconcile(self, cluster)
        self.console = await console.reconcile(self, cluster)
        status = self.status(cluster, state, registry)
        self.announce_refusals()
        if raft:
            self.report_dledger(state)
        return status

    async def observe(self) -> ClusterState:
        return await observing.observe(self.api, self.meta.name, self.meta.namespace, self.meta.uid)

    # -- steps -------------------------------------------------------------------------------

    async def observe_dledger(self, state: ClusterState) -> None:
        """Read every DLedger member's Raft state; a group without leader or quorum is a problem
        (Degraded once the group has served, progress while it first elects)."""
        for index, group in state.groups.items():
            if group.statefulset is None or index in self.refused:
                continue
            view = await dledger.observe(self.ctx, self.meta, group)
            self.views[index] = view
            found = dledger.problem(view)
            if found is None:
                continue
            if group.metadata_synced:
                self.found.degraded.append((found[0].value, found[1]))
            else:
                self.found.progress.append(f"waiting for the first election: {found[1]}")

    def report_dledger(self, state: ClusterState) -> None:
        """Metrics for every DLedger group, and one Warning Event per group that lost its leader
        or quorum (again only after it had them back)."""
        self.ctx.runtime.metrics.record_dledger(self.meta.namespace, self.meta.name,
                                                [dledger.sample(view) for view in self.views.values()])
        lost = {f"{view.name}:{found[0].value}": found for index, view in self.views.items()
                if (found := dledger.problem(view)) is not None and state.groups[index].metadata_synced}
        told = self.told_in_status()
        for key in self.ctx.runtime.announcements.not_yet(self.warnings_key("dledger"), sorted(lost)):
            reason, message = lost[key]
            if message in told:
                continue  # said before this operator (re)started, and still true
            self.ctx.emit("Warning", reason.value, message)
            self.ctx.logger.warning(message)

    def check_immutables(self, cluster: Cluster, state: ClusterState) -> None:
        for index in range(cluster.spec.brokers.groups):
            group = state.group(index)
            if group is None or group.statefulset is None:
                continue
            changes = applying.immutable_changes(group.statefulset, broker.render_broker_statefulset(cluster, index))
            live_mode = (group.statefulset.get("metadata", {}).get("annotations") or {}).get(
                common.ANNOTATION_BROKER_MODE)
            if live_mode is not None and live_mode != cluster.spec.brokers.mode.value:
                changes.append("spec.brokers.mode")
            elif (live_mode == BrokerMode.DLEDGER.value
                  and group.replicas != cluster.spec.brokers.replicas_per_group):
                # Raft membership is fixed: new peers in every broker.conf would restart members
                # one by one into groups that disagree about who the majority is.
                changes.append("spec.brokers.replicasPerGroup")
            if changes:
                self.refused[index] = changes
                self.refuse(applying.Refused(
                    applying.IMMUTABLE_FIELD_CHANGE,
                    f"{group.name}: {', '.join(changes)} cannot change on a running group; "
                    "its pods keep their current settings until the spec is reverted",
                ))
        if any("spec.brokers.mode" in changes for changes in self.refused.values()):
            # One cluster, one mode: no new group may start in a mode the others do not run.
            for index in range(cluster.spec.brokers.groups):
                self.refused.setdefault(index, ["spec.brokers.mode"])

    async def apply_one(self, desired: Mapping[str, Any],
                        listed: Mapping[str, Any] | None = None) -> applying.ApplyResult | None:
        """Apply one child (``listed``: its live object, if this pass observed it); a refusal
        (another owner's object, an immutable change, 422) is reported as ``Degraded`` with its
        reason, and the pass goes on with the other children."""
        try:
            result = await applying.apply(self.api, desired, listed)
        except applying.Refused as refused:
            self.refuse(refused)
            return None
        self.wrote = self.wrote or result.changed
        return result

    def refuse(self, refused: applying.Refused) -> None:
        self.found.degraded.append((refused.reason, refused.message))
        self.found.refusals.append(refused)

    def warnings_key(self, topic: str) -> tuple[str, ...]:
        """Where the runtime remembers the Warning Events of one kind this cluster was given."""
        return ("RocketMQCluster", self.meta.namespace, self.meta.name, topic)

    def told_in_status(self) -> str:
        """The Degraded message the stored status already carries (what earlier passes said;
        after an operator restart it is all there is)."""
        before = next((c for c in self.previous.get("conditions") or []
                       if isinstance(c, Mapping) and c.get("type") == Type.DEGRADED.value), None)
        return str(before.get("message", "")) if before is not None and before.get("status") == "True" else ""

    def announce_refusals(self) -> None:
        """A Warning Event per refusal, once: not again while the Degraded condition says it."""
        told = self.told_in_status()
        fresh = self.ctx.runtime.announcements.not_yet(self.warnings_key("refusals"),
                                                   [refused.message for refused in self.found.refusals])
        for refused in self.found.refusals:
            if refused.message not in told and refused.message in fresh:
                self.ctx.emit("Warning", refused.reason, refused.message)

    async def apply_namesrv(self, cluster: Cluster, state: ClusterState) -> None:
        await self.apply_one(namesrv.render_namesrv_service(cluster))
        await self.apply_one(namesrv.render_namesrv_statefulset(cluster), state.namesrv)
        await self.apply_one(pdb.render_namesrv_pdb(cluster))

    async def apply_groups(self, cluster: Cluster, state: ClusterState) -> dict[int, str]:
        """Apply every wanted group; the template hash each applied StatefulSet asks for."""
        hashes: dict[int, str] = {}
        for index in range(cluster.spec.brokers.groups):
            if index in self.refused:
                continue
            group = state.group(index)
            master = group.master_ordinal if group is not None and group.configmap is not None else 0
            statefulset = broker.render_broker_statefulset(cluster, index)
            await self.apply_one(broker.render_broker_configmap(cluster, index, master),
                                 group.configmap if group is not None else None)
            await self.apply_one(broker.render_broker_service(cluster, index))
            result = await self.apply_one(statefulset, group.statefulset if group is not None else None)
            await self.apply_one(pdb.render_broker_pdb(cluster, index))
            if result is None:
                continue
            added = result.action is applying.Action.CREATED and self.previous.get("phase") not in INITIAL_PHASES
            resized = group is not None and group.replicas != cluster.spec.brokers.replicas_per_group
            self.found.scaling = self.found.scaling or added or resized
            template_hash = common.template_hash(statefulset)
            if template_hash is not None:
                hashes[index] = template_hash
        return hashes

    async def failover(self, cluster: Cluster | None, state: ClusterState) -> bool:
        """Check every MasterSlave group's master; True when a master moved in this pass."""
        moved = False
        for group in state.groups.values():
            wanted = cluster is None or group.index < cluster.spec.brokers.groups
            if not wanted or group.index in self.refused or _mode_of(group) is not BrokerMode.MASTER_SLAVE:
                continue
            outcome = await failover.check(self.ctx, self.meta, group)
            if outcome.kind is failover.Kind.FAILED_OVER:
                moved = True
                self.found.progress.append(outcome.message)
            elif outcome.kind in (failover.Kind.NO_CANDIDATE, failover.Kind.BLOCKED, failover.Kind.PROMOTION_FAILED):
                self.found.degraded.append((outcome.kind.value, outcome.message))
            elif outcome.kind is failover.Kind.PENDING:
                self.found.progress.append(outcome.message)
        return moved

    async def failover_only(self) -> None:
        state = await self.observe()
        await self.failover(None, state)

    async def seed(self, cluster: Cluster, state: ClusterState, registry: topology.Registry) -> None:
        new = [g for g in state.groups.values()
               if g.index < cluster.spec.brokers.groups and g.configmap is not None and not g.metadata_synced
               and g.index not in self.refused]
        if not new:
            return
        topics, groups = await scaling.cluster_entities(self.api, self.meta.namespace, self.meta.name)
        for group in new:
            master = self._registered_master(cluster, group, registry)
            problem = ("waiting for the master of " + group.name + " to serve and register" if master is None
                       else await scaling.seed(self.ctx, self.meta, group, master, topics, groups))
            if problem is not None:
                self.found.seeding = True
                self.found.progress.append(problem)

    def _registered_master(self, cluster: Cluster, group: GroupState, registry: topology.Registry) -> str | None:
        raft = cluster.spec.brokers.mode is BrokerMode.DLEDGER
        address = topology.master_address(self.meta.name, self.meta.namespace, group, raft, registry)
        if not raft:
            pod = group.pods.get(group.master_ordinal)
            if pod is None or not pod.serving:
                return None
        if address is None or address not in registry.addresses(group.name):
            return None
        return address

    async def manual_roll(self, cluster: Cluster, state: ClusterState) -> dict[int, frozenset[str]]:
        """Keep the manual-rolling-update bookkeeping; the pod uids still to restart per group."""
        value = annotations_of(self.body).get(MANUAL_ROLL_ANNOTATION)
        target = names.group_index(self.meta.name, value) if value else None
        if value is not None and (target is None or target >= cluster.spec.brokers.groups
                                  or state.group(target) is None):
            self.ctx.emit("Warning", "InvalidManualRollingUpdate",
                          f"{MANUAL_ROLL_ANNOTATION}={value!r} names no broker group of this cluster")
            await self._drop_manual_annotation()
            target = None
        for group in state.groups.values():
            if group.manual_roll is not None and group.index != target:
                await self._set_manual(group, None)
        if target is None:
            return {}
        group = state.groups[target]
        pending = group.manual_roll
        if pending is None:
            pending = frozenset(pod.uid for pod in group.pods.values() if pod.ordinal < group.replicas)
            await self._set_manual(group, ",".join(sorted(pending)))
            self.ctx.emit("Normal", "ManualRollingUpdate", f"restarting every pod of {group.name}, one at a time")
        remaining = pending & {pod.uid for pod in group.pods.values()}
        if not remaining and rolling.unavailable(group) is None:
            await self._set_manual(group, None)
            await self._drop_manual_annotation()
            self.ctx.emit("Normal", "ManualRollingUpdateDone", f"every pod of {group.name} was restarted")
            return {}
        self.found.rolling = True
        return {target: remaining}

    async def _set_manual(self, group: GroupState, value: str | None) -> None:
        await self.api.patch("ConfigMap", self.meta.namespace, names.broker_config(self.meta.name, group.index),
                             {"metadata": {"annotations": {observing.MANUAL_ROLL: value}}})

    async def _drop_manual_annotation(self) -> None:
        await self.api.patch("RocketMQCluster", self.meta.namespace, self.meta.name,
                             {"metadata": {"annotations": {MANUAL_ROLL_ANNOTATION: None}}})

    def leader_ordinal(self, group: GroupState, registry: topology.Registry) -> int | None:
        """A DLedger group's leader: as its members say, else as the name servers have it."""
        view = self.views.get(group.index)
        leader = view.leader if view is not None else None
        if leader is not None:
            return leader.ordinal
        return topology.leader_ordinal(self.meta.name, self.meta.namespace, group, registry)

    def leader_address(self, group: GroupState, registry: topology.Registry) -> str | None:
        ordinal = self.leader_ordinal(group, registry)
        return None if ordinal is None else names.broker_address(self.meta.name, self.meta.namespace,
                                                                 group.index, ordinal)

    async def roll(self, cluster: Cluster, state: ClusterState, registry: topology.Registry,
                   hashes: Mapping[int, str], manual: Mapping[int, frozenset[str]]) -> None:
        raft = cluster.spec.brokers.mode is BrokerMode.DLEDGER
        primaries = {
            index: self.leader_ordinal(group, registry) if raft else group.master_ordinal
            for index, group in state.groups.items()
        }
        decision = rolling.plan(state, hashes, manual, primaries)
        if decision.kind is rolling.Kind.DONE:
            return
        self.found.rolling = True
        if decision.kind is rolling.Kind.WAIT or decision.group is None or decision.pod is None:
            self.found.progress.append(f"rolling update: {decision.message}")
            return
        group = state.groups[decision.group]
        if raft:
            problem = await self.dledger_gate(cluster, group, decision.pod)
        else:
            primary = topology.master_address(self.meta.name, self.meta.namespace, group, False, registry)
            problem = await rolling.gate(self.ctx, self.meta, group, registry, primary, decision.pod)
        if problem is not None:
            self.found.progress.append(f"rolling update of {group.name} waits: {problem}")
            return
        reason = "manual" if decision.pod.uid in manual.get(decision.group, ()) else "rolling"
        await rolling.restart(self.ctx, self.meta, decision.pod, reason)
        self.found.progress.append(
            f"rolling update: restarted {decision.pod.name} ({decision.remaining - 1} pods left)")

    async def dledger_gate(self, cluster: Cluster, group: GroupState, restarting: observing.PodState) -> str | None:
        """A DLedger roll's gate: a follower goes once the others follow the leader caught up;
        the leader never goes while it leads: it hands leadership over first (this pass), and
        is restarted as a follower on a later one."""
        view = self.views.get(group.index)
        if view is None:
            return "the members' Raft state is unknown"
        leader = view.leader
        if leader is None or leader.ordinal != restarting.ordinal:
            return dledger.roll_gate(view, restarting.ordinal, self.ctx.runtime.config.caught_up_entries)
        preferred = cluster.spec.brokers.config.get(spec.PREFERRED_LEADER_KEY)
        return await dledger.hand_over(self.ctx, self.meta, group.index, view, preferred)

    async def scale_down(self, cluster: Cluster, state: ClusterState, registry: topology.Registry) -> None:
        raft = cluster.spec.brokers.mode is BrokerMode.DLEDGER
        for index in sorted(state.groups, reverse=True):
            group = state.groups[index]
            if index < cluster.spec.brokers.groups:
                if group.draining_since is not None:
                    problem = await scaling.undrain(self.ctx, self.meta, group)
                    if problem is not None:
                        self.found.scaling = True
                        self.found.progress.append(problem)
                continue
            if raft:
                master = self.leader_address(group, registry)
            else:
                master = topology.master_address(self.meta.name, self.meta.namespace, group, False, registry)
                master_pod = group.pods.get(group.master_ordinal)
                if master_pod is None or not master_pod.serving:
                    master = None
            outcome = await scaling.drain(self.ctx, self.meta, group, master)
            self.found.draining = True
            if outcome.kind is scaling.DrainKind.TIMED_OUT:
                self.found.degraded.append((outcome.kind.value, outcome.message))
            else:
                self.found.progress.append(outcome.message)

    # -- status ------------------------------------------------------------------------------

    def status(self, cluster: Cluster, state: ClusterState, registry: topology.Registry) -> dict[str, Any]:
        groups = [self._group_status(cluster, group, registry) for group in state.groups.values()]
        for report in groups:
            wanted = not report.get("draining")
            if wanted and report["readyReplicas"] < report["replicas"]:
                self.found.not_ready.append(f"{report['brokerName']}: {report['readyReplicas']}/"
                                            f"{report['replicas']} ready")
        ns_replicas = cluster.spec.name_servers.replicas
        ns_ready = sum(1 for pod in state.namesrv_pods.values() if pod.serving and pod.ordinal < ns_replicas)
        if ns_ready < ns_replicas:
            self.found.not_ready.append(f"name servers: {ns_ready}/{ns_replicas} ready")
        missing = [names.broker_group(self.meta.name, i) for i in range(cluster.spec.brokers.groups)
                   if state.group(i) is None or state.groups[i].statefulset is None]
        if missing:
            self.found.not_ready.append(f"{', '.join(missing)} not created yet")
        phase = self._phase()
        ready_groups = sum(1 for g in groups if not g.get("draining") and g["readyReplicas"] >= g["replicas"])
        leaders = [g["leader"] for g in groups if "leader" in g and not g.get("draining")]
        return {
            "phase": phase.value,
            "observedGeneration": self.meta.generation,
            "conditions": self._conditions(phase),
            "readyGroups": ready_groups,
            "nameServers": {
                "ready": ns_ready,
                "replicas": ns_replicas,
                "addresses": names.namesrv_addresses(self.meta.name, self.meta.namespace, ns_replicas),
            },
            "brokerGroups": groups,
            # One string for `kubectl get`'s Leaders column (a printer column shows one value).
            "leaders": ",".join(leaders) if leaders else None,
            "proxy": self.proxy.status,
            "console": self.console,
        }

    def _group_status(self, cluster: Cluster, group: GroupState, registry: topology.Registry) -> dict[str, Any]:
        wanted = group.index < cluster.spec.brokers.groups
        mode = _mode_of(group) or cluster.spec.brokers.mode
        out: dict[str, Any] = {"brokerName": group.name, "mode": mode.value}
        view = self.views.get(group.index)
        if mode is BrokerMode.MASTER_SLAVE:
            out["master"] = names.broker_pod(self.meta.name, group.index, group.master_ordinal)
            if group.last_failover is not None:
                out["lastFailover"] = group.last_failover  # runtime promotion, or the pod-restart fallback
        elif view is not None:
            out.update(dledger.status(view))
        else:
            leader = topology.leader_ordinal(self.meta.name, self.meta.namespace, group, registry)
            if leader is not None:
                out["leader"] = names.broker_pod(self.meta.name, group.index, leader)
        out["readyReplicas"] = group.ready_replicas
        out["replicas"] = cluster.spec.brokers.replicas_per_group if wanted else group.replicas
        if not wanted:
            out["draining"] = True
        return out

    def _phase(self) -> Phase:
        found = self.found
        previous = self.previous.get("phase")
        if found.degraded:
            return Phase.DEGRADED
        if found.draining or (found.scaling and previous not in INITIAL_PHASES):
            return Phase.SCALING
        if found.rolling:
            return Phase.UPDATING
        if found.seeding or found.not_ready or found.scaling:
            if previous in INITIAL_PHASES:
                return Phase.CREATING
            if previous in (Phase.UPDATING.value, Phase.SCALING.value):
                return Phase(previous)
            if found.seeding:
                return Phase.SCALING
            found.degraded.append(("PodsNotReady", "; ".join(found.not_ready)))
            return Phase.DEGRADED
        return Phase.RUNNING

    def _conditions(self, phase: Phase) -> list[dict[str, Any]]:
        found = self.found
        progress = "; ".join(found.progress + found.not_ready)
        degraded = "; ".join(message for _reason, message in found.degraded)
        wanted = [
            Condition(Type.READY, phase is Phase.RUNNING,
                      "Running" if phase is Phase.RUNNING else (found.degraded[0][0] if found.degraded
                                                                 else phase.value),
                      "every broker group and name server is ready" if phase is Phase.RUNNING
                      else (degraded or progress)),
            Condition(Type.PROGRESSING, phase in (Phase.CREATING, Phase.UPDATING, Phase.SCALING),
                      phase.value if phase in (Phase.CREATING, Phase.UPDATING, Phase.SCALING) else "Reconciled",
                      progress),
            Condition(Type.DEGRADED, bool(found.degraded),
                      found.degraded[0][0] if found.degraded else "AsExpected", degraded),
            Condition(Type.PAUSED, False, "Reconciling"),
        ]
        if self.analytics is not None:
            wanted.append(self.analytics)
        if self.proxy.condition is not None:
            wanted.append(self.proxy.condition)
        return conditions.render(wanted, self.previous.get("conditions"), _stamp(self.ctx), self.meta.generation)

    def invalid_status(self, errors: tuple[str, ...]) -> dict[str, Any]:
        message = "; ".join(errors)
        wanted = [
            Condition(Type.READY, False, "InvalidSpec", message),
            Condition(Type.PROGRESSING, False, "InvalidSpec", "the spec must be fixed before anything is applied"),
            Condition(Type.DEGRADED, bool(self.found.degraded),
                      self.found.degraded[0][0] if self.found.degraded else "AsExpected",
                      "; ".join(m for _r, m in self.found.degraded)),
            Condition(Type.PAUSED, False, "Reconciling"),
        ]
        return {
            "phase": Phase.FAILED.value,
            "observedGeneration": self.meta.generation,
            "conditions": conditions.render(wanted, self.previous.get("conditions"), _stamp(self.ctx),
                                            self.meta.generation),
        }

    def paused_status(self) -> dict[str, Any]:
        previous = [c for c in self.previous.get("conditions") or [] if isinstance(c, Mapping)]
        kept = [dict(c) for c in previous if c.get("type") != Type.PAUSED.value]
        paused = conditions.render(
            [Condition(Type.PAUSED, True, "PauseAnnotation",
                       f"{PAUSE_ANNOTATION} is \"true\": nothing is applied, restarted or failed over")],
            previous, _stamp(self.ctx), self.meta.generation,
        )
        return {"phase": self.previous.get("phase") or Phase.PENDING.value, "conditions": kept + paused}


def _mode_of(group: GroupState) -> BrokerMode | None:
    raw = ((group.statefulset or {}).get("metadata", {}).get("annotations") or {}).get(common.ANNOTATION_BROKER_MODE)
    for mode in BrokerMode:
        if mode.value == raw:
            return mode
    return None


def _stamp(ctx: Context) -> str:
    return observing.format_time(ctx.now)


async def reconcile(ctx: Context, body: Mapping[str, Any]) -> dict[str, Any]:
    """Run one pass over a RocketMQCluster object; the status it should have afterwards."""
    return await ClusterPass(ctx, body).reconcile()

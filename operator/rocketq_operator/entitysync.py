"""Keep a RocketMQTopic or RocketMQConsumerGroup on every master of its cluster.

A topic or consumer group in RocketMQ is per broker: it exists on a broker group when that
group's master has it. Each pass finds the cluster's masters (MasterSlave: the pod at
``masterOrdinal``; DLedger: the leader the name servers report), reads what each already has
(``list_topics``/``list_groups``) and creates or updates only where the config differs. Groups
still being seeded or being drained are left to the cluster reconciler (see ``scaling``).

Both reads are shared by every object of the cluster: the view through ``clusterviews`` (the
cluster pass publishes what it observed) and the tables through ``cachedadmin`` (one read per
``read_cache_ttl``, see ``rocketq.ttlcache``), so a round of passes over thousands of topics costs a
few reads per cluster and master, not per object.

Deletion (behind a finalizer) removes the entity from every broker group of the cluster, and a
topic also from the name servers' routes. If the cluster itself is gone or being deleted there
is nothing to clean up and the object is released at once. While a broker cannot be reached
the object stays, and says why in its status (``Ready=False, reason=DeletionBlocked``, phase
``Deleting``) and in a Warning Event. The way out, when those brokers are gone for good: the
annotation ``rocketq.io/skip-broker-cleanup: "true"`` releases the object without touching the
brokers (what was created there stays there).

RocketMQ 5 settings: a topic's ``message.type`` is written with its config (always declared:
``entities`` resolves an unset ``messageType``), a group's ``consumeMessageOrderly`` only when
the spec sets it; unset, each broker's own value is carried into every write, so a flag set by
``rocketq admin updateSubGroup -o`` survives an unrelated edit. ``status.messageType`` and
``status.consumeMessageOrderly`` say what the masters have (absent while they disagree).

A write a broker refuses (``BrokerRefusedError``: MIXED on a broker without
``enableMixedMessageType``, say) is not sent again on every pass: the object goes ``Failed``
with ``Ready=False, reason=ChangeRefused`` and the broker's words, a Warning Event says it once,
and that broker is left as it is until the spec changes (a new generation) or
``REFUSAL_RETRY`` has passed (the broker's own config may have changed meanwhile).

The RocketMQ name (``topicName``/``groupName``) cannot change: the first name applied is kept
in the ``rocketq.io/applied-name`` annotation, and a different one later is refused with a
condition, so an edit never leaves an orphaned topic on the brokers.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rocketq_operator import brokeradmin, clusterviews, conditions, entities, names, observing
from rocketq_operator.conditions import Condition, Phase, Type
from rocketq_operator.runtime import Context, Refusal
from rocketq_operator.spec import BrokerMode

APPLIED_NAME: Final = "rocketq.io/applied-name"
SKIP_CLEANUP: Final = "rocketq.io/skip-broker-cleanup"
DELETION_BLOCKED: Final = "DeletionBlocked"
CHANGE_REFUSED: Final = "ChangeRefused"
REFUSAL_RETRY: Final = datetime.timedelta(minutes=10)
"""How long a write a broker refused is not sent again while the spec stays the same."""
STATUS_NAME: Final = {entities.TOPIC_KIND: "topicName", entities.GROUP_KIND: "groupName"}
"""The status field holding the RocketMQ name (the printer columns read it)."""
STATUS_SETTING: Final = {entities.TOPIC_KIND: ("messageType", "message_type"),
                         entities.GROUP_KIND: ("consumeMessageOrderly", "consume_message_orderly")}
"""The status field showing the masters' RocketMQ 5 setting, and the config attribute it shows."""

Config = brokeradmin.TopicConfig | brokeradmin.GroupConfig


class Retry(Exception):
    """The work is not done and must be tried again later (the message says why)."""


@dataclass(frozen=True)
class Target:
    group: str
    address: str | None


def _master(view: clusterviews.ClusterView, cluster: str, namespace: str, group: observing.GroupState) -> str | None:
    if view.mode is BrokerMode.DLEDGER:
        return view.registry.master_address(group.name)
    pod = group.pods.get(group.master_ordinal)
    if pod is None or not pod.serving:
        return None
    return names.broker_address(cluster, namespace, group.index, group.master_ordinal)


def targets(view: clusterviews.ClusterView, cluster: str, namespace: str, *, everywhere: bool) -> list[Target]:
    """Masters to apply to: seeded, wanted groups; with ``everywhere``, every group (for deletes)."""
    out = []
    for group in view.state.groups.values():
        if group.configmap is None:
            continue
        if not everywhere and (not group.metadata_synced or group.index >= view.wanted_groups
                               or group.draining_since is not None):
            continue
        out.append(Target(group.name, _master(view, cluster, namespace, group)))
    return out


@dataclass(frozen=True)
class Outcome:
    now: Config | None
    """What the master has after this pass (None: it has nothing)."""
    refusal: Refusal | None = None
    """Set when the master refused the write, now or within ``REFUSAL_RETRY`` for this generation."""
    new_refusal: bool = False


async def _current(admin: brokeradmin.BrokerAdmin, address: str, config: Config) -> Config | None:
    if isinstance(config, brokeradmin.TopicConfig):
        return (await admin.list_topics(address)).get(config.name)
    return (await admin.list_groups(address)).get(config.name)


def _wanted(entity: entities.TopicSpec | entities.GroupSpec, current: Config | None) -> Config:
    """The spec's config, with the broker's own orderly flag where the spec leaves it unset."""
    if (isinstance(entity, entities.GroupSpec) and _carries_broker_values(entity)
            and isinstance(current, brokeradmin.GroupConfig)):
        return dataclasses.replace(entity.config, consume_message_orderly=current.consume_message_orderly)
    return entity.config


def _carries_broker_values(entity: entities.TopicSpec | entities.GroupSpec) -> bool:
    return isinstance(entity, entities.GroupSpec) and not entity.orderly_declared


async def _write(admin: brokeradmin.BrokerAdmin, address: str, config: Config) -> None:
    if isinstance(config, brokeradmin.TopicConfig):
        await admin.create_or_update_topic(address, config)
    else:
        await admin.create_or_update_group(address, config)


async def _apply_one(ctx: Context, address: str, entity: entities.TopicSpec | entities.GroupSpec,
                     held: Refusal | None, generation: int | None) -> Outcome:
    """Write where the master differs, unless it refused this very write a moment ago."""
    admin = ctx.runtime.admin
    current = await _current(admin, address, entity.config)
    wanted = _wanted(entity, current)
    if current == wanted:
        return Outcome(current)
    if _carries_broker_values(entity):  # the table may be up to a cache TTL old: carry what is there now
        current = await admin.get_group(address, entity.config.name)
        wanted = _wanted(entity, current)
        if current == wanted:
            return Outcome(current)
    if held is not None and held.generation == generation and ctx.now - held.at < REFUSAL_RETRY:
        return Outcome(current, held)
    try:
        await _write(admin, address, wanted)
    except brokeradmin.BrokerRefusedError as exc:
        return Outcome(current, Refusal(generation, ctx.now, str(exc)), new_refusal=True)
    return Outcome(wanted)


def _applied_name(ctx: Context, kind: str, body: Mapping[str, Any]) -> str | None:
    """The RocketMQ name first applied: the annotation, or, while the body a pass starts from is
    older than this process's write of it, what that write said (``Runtime.applied_names``)."""
    meta = body.get("metadata", {})
    key = (kind, str(meta.get("namespace", "")), str(meta.get("name", "")))
    value = (meta.get("annotations") or {}).get(APPLIED_NAME)
    if isinstance(value, str):
        ctx.runtime.applied_names.pop(key, None)  # on the object now: nothing left to remember
        return value
    return ctx.runtime.applied_names.get(key)


async def sync(ctx: Context, kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One pass for a topic or consumer group; returns the status it should have."""
    meta = body.get("metadata", {})
    name = str(meta.get("name", ""))
    generation = meta.get("generation") if isinstance(meta.get("generation"), int) else None
    parsed = entities.parse(kind, body.get("spec"), name)
    if parsed.spec is None:
        return _status(ctx, body, Phase.FAILED, "InvalidSpec", "; ".join(parsed.errors), [], generation)
    config = parsed.spec.config
    applied = _applied_name(ctx, kind, body)
    if applied is not None and applied != config.name:
        return _status(ctx, body, Phase.FAILED, "InvalidSpec",
                       f"the RocketMQ name cannot change (was {applied!r}, now {config.name!r}): "
                       "create a new object instead", [], generation)
    status = await _apply_everywhere(ctx, kind, body, parsed.spec, generation)
    # The printer column shows the RocketMQ name, also when it defaults to metadata.name.
    status[STATUS_NAME[kind]] = config.name
    return status


async def _apply_everywhere(ctx: Context, kind: str, body: Mapping[str, Any],
                            entity: entities.TopicSpec | entities.GroupSpec, generation: int | None) -> dict[str, Any]:
    meta = body.get("metadata", {})
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    view = await clusterviews.get(ctx, namespace, entity.cluster_ref)
    if isinstance(view, str):
        return _status(ctx, body, Phase.PENDING, "ClusterNotReady", view, [], generation)
    done: list[str] = []
    problems: list[str] = []
    key = (kind, namespace, name)
    held = ctx.runtime.refusals.get(key, {})
    refused: dict[str, Refusal] = {}
    present: list[Config] = []
    wanted = targets(view, entity.cluster_ref, namespace, everywhere=False)
    if _applied_name(ctx, kind, body) is None and any(target.address is not None for target in wanted):
        # Recorded before the first broker write, not before: thousands of objects waiting for a
        # new cluster would otherwise each spend a PATCH on it while there is nothing to write.
        applied = {"metadata": {"annotations": {APPLIED_NAME: entity.config.name}}}
        await ctx.runtime.api.patch(kind, namespace, name, applied)
        ctx.runtime.applied_names[key] = entity.config.name
    for target in wanted:
        if target.address is None:
            problems.append(f"{target.group} has no serving master")
            continue
        try:
            outcome = await _apply_one(ctx, target.address, entity, held.get(target.group), generation)
        except brokeradmin.BrokerAdminError as exc:
            problems.append(f"{target.group}: {exc}")
            continue
        if outcome.now is not None:
            present.append(outcome.now)
        if outcome.refusal is None:
            done.append(target.group)
            continue
        refused[target.group] = outcome.refusal
        if outcome.new_refusal:
            ctx.emit("Warning", CHANGE_REFUSED, outcome.refusal.message)
    _remember(ctx, key, refused)
    if not wanted:
        problems.append(f"RocketMQCluster {entity.cluster_ref!r} has no broker group ready for {kind}s yet")
    status = _outcome_status(ctx, body, refused, problems, done, generation)
    status.update(_settings(kind, present))
    return status


def _remember(ctx: Context, key: tuple[str, str, str], refused: dict[str, Refusal]) -> None:
    if refused:
        ctx.runtime.refusals[key] = refused
    else:
        ctx.runtime.refusals.pop(key, None)


def _outcome_status(ctx: Context, body: Mapping[str, Any], refused: Mapping[str, Refusal], problems: list[str],
                    done: list[str], generation: int | None) -> dict[str, Any]:
    if refused:
        retry = int(REFUSAL_RETRY.total_seconds()) // 60
        message = "; ".join([*(f"{group} refused the change: {r.message}" for group, r in sorted(refused.items())),
                             *problems])
        message += f" (not sent again until the spec changes, or for {retry} minutes)"
        return _status(ctx, body, Phase.FAILED, CHANGE_REFUSED, message, done, generation)
    if problems:
        return _status(ctx, body, Phase.PENDING, "BrokersPending", "; ".join(problems), done, generation)
    return _status(ctx, body, Phase.READY, "Applied", f"present on {len(done)} broker groups", done, generation)


def _settings(kind: str, present: Sequence[Config]) -> dict[str, Any]:
    """``messageType`` / ``consumeMessageOrderly`` as the masters have it; None (absent) while
    they disagree or none has the entity yet."""
    field, attribute = STATUS_SETTING[kind]
    values = {getattr(config, attribute) for config in present}
    return {field: values.pop() if len(values) == 1 else None}


def _status(ctx: Context, body: Mapping[str, Any], phase: Phase, reason: str, message: str,
            brokers: list[str], generation: int | None) -> dict[str, Any]:
    previous = (body.get("status") or {}).get("conditions")
    ready = Condition(Type.READY, phase is Phase.READY, reason, message)
    return {
        "phase": phase.value,
        "observedGeneration": generation,
        "conditions": conditions.render([ready], previous, observing.format_time(ctx.now), generation),
        "brokers": sorted(brokers),
    }


def deletion_blocked(ctx: Context, body: Mapping[str, Any], why: str) -> dict[str, Any]:
    """The status of an entity whose deletion waits for brokers, with the way out in the message."""
    meta = body.get("metadata", {})
    generation = meta.get("generation") if isinstance(meta.get("generation"), int) else None
    brokers = (body.get("status") or {}).get("brokers")
    message = (f"{why}. The object stays until every broker group is cleaned up; if those brokers are "
               f"gone for good, annotate it {SKIP_CLEANUP}=true to release it without cleanup")
    return _status(ctx, body, Phase.DELETING, DELETION_BLOCKED, message,
                   list(brokers) if isinstance(brokers, list) else [], generation)


async def remove(ctx: Context, kind: str, body: Mapping[str, Any]) -> str:
    """Delete the entity from every broker group; raises ``Retry`` while a broker cannot be reached."""
    meta = body.get("metadata", {})
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    if (meta.get("annotations") or {}).get(SKIP_CLEANUP) == "true":
        message = f"{SKIP_CLEANUP} is set: released without removing it from the brokers"
        ctx.emit("Warning", "BrokerCleanupSkipped", message)
        return message
    parsed = entities.parse(kind, body.get("spec"), name)
    if parsed.spec is None:
        return "nothing was applied from an invalid spec"
    entity = _applied_name(ctx, kind, body) or parsed.spec.config.name
    cluster = parsed.spec.cluster_ref
    view = await clusterviews.get(ctx, namespace, cluster)
    if isinstance(view, str):
        return f"nothing to clean up: {view}"
    admin = ctx.runtime.admin
    problems = []
    for target in targets(view, cluster, namespace, everywhere=True):
        if target.address is None:
            problems.append(f"{target.group} has no serving master")
            continue
        try:
            if kind == entities.TOPIC_KIND:
                await admin.delete_topic(target.address, entity)
            else:
                await admin.delete_group(target.address, entity)
        except brokeradmin.BrokerAdminError as exc:
            problems.append(f"{target.group}: {exc}")
    if kind == entities.TOPIC_KIND and not problems:
        problems += await _delete_route(ctx, view, cluster, namespace, entity)
    if problems:
        raise Retry(f"{kind} {entity!r} not deleted everywhere yet: {'; '.join(problems)}")
    return f"{entity} deleted from every broker group of {cluster}"


async def _delete_route(ctx: Context, view: clusterviews.ClusterView, cluster: str, namespace: str,
                        topic: str) -> list[str]:
    problems = []
    for ordinal, pod in sorted(view.state.namesrv_pods.items()):
        if not pod.serving:
            continue
        try:
            await ctx.runtime.admin.delete_topic_in_namesrv(names.namesrv_address(cluster, namespace, ordinal), topic)
        except brokeradmin.BrokerAdminError as exc:
            problems.append(f"{pod.name}: {exc}")
    return problems

"""What a topic or consumer-group pass knows of its cluster, and who keeps that knowledge fresh.

Every RocketMQTopic / RocketMQConsumerGroup pass needs the same few facts about its cluster:
the broker mode, which groups exist, are seeded and not draining, where their masters are
(pods, or the name servers' registrations in DLedger mode). That is a ``ClusterView``, one per
cluster, shared by every object of the cluster through ``Runtime.cluster_views``
(``rocketq.ttlcache.TtlCache``).

Two ways fill it:

- The cluster pass (``reconciler``) observes exactly these things on every pass anyway, so it
  ``publish``es what it saw, kept for ``published_ttl``: two cluster intervals, so a view is
  replaced by the next pass before it expires. While the cluster ticker runs, topic and group
  passes read nothing about their cluster themselves: 100 clusters cost no view reads beyond
  the clusters' own passes, however many objects they have.
- When no fresh view is there (the operator just started, a pass failed, the cluster is
  paused), the first topic or group pass that needs one reads it (``get``: the cluster, three
  LISTs and one registration read) and keeps it for ``read_cache_ttl``; concurrent passes wait
  for that read.

A view may be as old as one cluster pass interval. Steps that change where topics belong drop it
so the next passes read again at once: seeding a new group (``scaling``) and a failover
(``failover``), which run after the pass published, within the same pass. A master lost between
passes shows as a failed write (the object stays Pending and retries) until the next pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rocketq_operator import observing, spec, topology
from rocketq_operator.runtime import Context, OperatorConfig, Runtime
from rocketq_operator.spec import BrokerMode

PUBLISHED_INTERVALS: Final = 2
"""A published view lives this many cluster intervals: the next pass replaces it first, and one
late round of passes (a hundred clusters on a slow API server) does not expire every view."""


@dataclass(frozen=True)
class ClusterView:
    mode: BrokerMode
    state: observing.ClusterState
    registry: topology.Registry
    wanted_groups: int


View = ClusterView | str
"""A view, or why the cluster cannot be used (missing, being deleted, invalid)."""


def published_ttl(config: OperatorConfig) -> float:
    return max(config.read_cache_ttl, PUBLISHED_INTERVALS * config.reconcile_interval)


def invalid(name: str) -> str:
    return f"RocketMQCluster {name!r} has an invalid spec"


def publish(runtime: Runtime, namespace: str, name: str, view: View) -> None:
    """What a cluster pass just observed, for the cluster's topic and group passes."""
    runtime.cluster_views.put((namespace, name), view, ttl=published_ttl(runtime.config))


async def get(ctx: Context, namespace: str, name: str) -> View:
    """The cluster's view: the published one, or one read now (shared for ``read_cache_ttl``)."""
    view = await ctx.runtime.cluster_views.get((namespace, name), lambda: read(ctx, namespace, name))
    if not isinstance(view, ClusterView | str):
        raise TypeError(f"cluster view cache holds a {type(view).__name__}")
    return view


async def read(ctx: Context, namespace: str, name: str) -> View:
    body = await ctx.runtime.api.get("RocketMQCluster", namespace, name)
    if body is None:
        return f"RocketMQCluster {name!r} does not exist in namespace {namespace!r}"
    if body.get("metadata", {}).get("deletionTimestamp"):
        return f"RocketMQCluster {name!r} is being deleted"
    parsed = spec.parse_cluster_spec(body.get("spec"), name)
    if parsed.spec is None:
        return invalid(name)
    meta = spec.cluster_meta(body)
    state = await observing.observe(ctx.runtime.api, name, namespace, meta.uid)
    registry = await topology.registrations(ctx.runtime.admin, name, namespace, state.namesrv_pods)
    return ClusterView(parsed.spec.brokers.mode, state, registry, parsed.spec.brokers.groups)

"""Admin operations over a whole cluster, built from ``AdminClient``'s single requests.

mqadmin's commands mostly name a cluster (``-c``) or a topic or group, not a broker; this module
decides which brokers that means and asks them, in parallel:

* topic and group changes go to every master of the cluster (or the one broker given with ``-b``);
  an ordered topic also gets its ``ORDER_TOPIC_CONFIG`` entry in the name servers' KV store
  (``brokerName:queues;...``, which routes hand to clients as ``orderTopicConf``);
  deleting a topic also removes it from every member and then from the name servers;
* topic status, offset resets and offset clones go to the broker groups of the topic's route;
* a group's progress is asked of every master the name servers know, and merged: the lag is the
  sum of brokerOffset - consumerOffset over every queue (RocketMQ's ``computeTotalDiff``).

What it does not do: retry, or hide a broker's refusal. The first failure raises; operations that
change several brokers report which brokers they changed so a partial failure is visible.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from rocketq.admin import stats
from rocketq.admin.adminbodies import Connection, ConsumerConnection, GroupConfig, Subscription, TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, ArgumentError, UnavailableError
from rocketq.admin.routes import ClusterInfo, TopicRoute
from rocketq.admin.stats import ConsumeStats, MessageQueue, TopicStats
from rocketq.protocol import codes
from rocketq.protocol.codes import Perm, ResponseCode

T = TypeVar("T")
ORDER_TOPIC_CONFIG_NAMESPACE: Final = "ORDER_TOPIC_CONFIG"


async def _each(calls: Iterable[Awaitable[T]]) -> list[T]:
    """Run the calls together; the first failure raises once every call has finished."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


# --- choosing brokers -------------------------------------------------------------------------


def cluster_masters(info: ClusterInfo, cluster: str) -> list[str]:
    if cluster not in info.cluster_names():
        known = ", ".join(info.cluster_names()) or "none"
        raise ArgumentError(f"cluster {cluster!r} is not known to the name server (known: {known})")
    masters = info.master_addrs(cluster)
    if not masters:
        raise UnavailableError(f"cluster {cluster!r} has no master broker online")
    return masters


async def targets(admin: AdminClient, broker_addr: str | None, cluster: str | None,
                  *, with_slaves: bool = False) -> list[str]:
    """mqadmin's ``-b`` / ``-c`` choice: the one broker, else the cluster's masters (or all members)."""
    if broker_addr:
        return [broker_addr]
    if not cluster:
        raise ArgumentError("give a broker address (-b) or a cluster name (-c)")
    info = await admin.cluster_info()
    masters = cluster_masters(info, cluster)
    return info.all_addrs(cluster) if with_slaves else masters


async def route_masters(admin: AdminClient, topic: str) -> tuple[TopicRoute, list[tuple[str, str]]]:
    route = await admin.topic_route(topic)
    masters = route.master_addrs()
    if not masters:
        raise UnavailableError(f"no broker group of topic {topic!r} has a master online")
    return route, masters


# --- topics -----------------------------------------------------------------------------------


async def create_topic(admin: AdminClient, config: TopicConfig, *, broker_addr: str | None = None,
                       cluster: str | None = None, attributes: str | None = None) -> list[str]:
    """Create or update a topic on one broker or on every master of a cluster; the brokers changed.
    ``attributes``: a modification string (``AdminClient.create_topic``)."""
    config.validate()
    addrs = await targets(admin, broker_addr, cluster)
    await _each(admin.create_topic(addr, config, attributes) for addr in addrs)
    return addrs


async def order_conf(admin: AdminClient, addrs: list[str], write_queue_nums: int) -> str:
    """``brokerName:queues;...`` for the KV entry ordered topics keep in the name servers."""
    info = await admin.cluster_info()
    names = sorted({data.broker_name for addr in addrs if (data := info.locate(addr)) is not None})
    return ";".join(f"{name}:{write_queue_nums}" for name in names)


async def set_topic_order(admin: AdminClient, topic: str, addrs: list[str], write_queue_nums: int) -> str:
    """Write an ordered topic's ORDER_TOPIC_CONFIG entry for the brokers it was created on (as
    mqadmin's ``updateTopic -o true``); the entry written."""
    conf = await order_conf(admin, addrs, write_queue_nums)
    await admin.put_kv_config(ORDER_TOPIC_CONFIG_NAMESPACE, topic, conf)
    return conf


async def topic_order_conf(admin: AdminClient, topic: str) -> str | None:
    """A topic's ORDER_TOPIC_CONFIG entry, None when it has none (not an ordered topic)."""
    return await admin.get_kv_config(ORDER_TOPIC_CONFIG_NAMESPACE, topic)


async def clear_topic_order(admin: AdminClient, topic: str) -> None:
    await admin.delete_kv_config(ORDER_TOPIC_CONFIG_NAMESPACE, topic)


async def delete_topic(admin: AdminClient, topic: str, cluster: str) -> list[str]:
    """Delete a topic from every member of a cluster, then from every name server."""
    info = await admin.cluster_info()
    cluster_masters(info, cluster)
    addrs = info.all_addrs(cluster)
    await _each(admin.delete_topic_in_broker(addr, topic) for addr in addrs)
    await admin.delete_topic_in_namesrv(topic, cluster)
    return addrs


async def topic_status(admin: AdminClient, topic: str) -> TopicStats:
    """Min/max offset and last store time of every queue of a topic, across its broker groups."""
    route = await admin.topic_route(topic)
    readable = route.read_addrs()
    if not readable:
        raise UnavailableError(f"no broker of topic {topic!r} is online")
    parts = await _each(admin.topic_stats(addr, topic) for _, addr in readable)
    return stats.merge_topic_stats(parts)


async def topic_attributes(admin: AdminClient, topic: str) -> dict[str, dict[str, str]]:
    """RocketMQ 5 attributes of a topic on each master that has some, by broker name."""
    route = await admin.topic_route(topic)
    masters = route.master_addrs()
    configs = await _each(admin.topic_config(addr, topic) for _, addr in masters)
    return {name: config.attribute_map for (name, _), config in zip(masters, configs, strict=True)
            if config is not None and config.attributes}


async def topic_clusters(admin: AdminClient, topic: str, info: ClusterInfo) -> list[str]:
    """The clusters whose broker groups hold a topic (for ``topicList -c``)."""
    route = await admin.topic_route(topic)
    names = {b.cluster for b in route.broker_datas if b.cluster}
    for data in route.broker_datas:
        if not data.cluster and (known := info.broker(data.broker_name)) is not None:
            names.add(known.cluster)
    return sorted(names)


# --- groups -----------------------------------------------------------------------------------


async def create_group(admin: AdminClient, config: GroupConfig, *, broker_addr: str | None = None,
                       cluster: str | None = None) -> list[str]:
    config.validate()
    addrs = await targets(admin, broker_addr, cluster)
    await _each(admin.create_group(addr, config) for addr in addrs)
    return addrs


async def group_configs(admin: AdminClient, group: str, masters: list[str]) -> dict[str, GroupConfig | None]:
    """A subscription group's config on each master (None where that broker has none), read
    from each broker's table (GET_ALL_SUBSCRIPTIONGROUP_CONFIG: RocketMQ 4.9 has no request for
    one group)."""
    tables = await _each(admin.all_groups(addr) for addr in masters)
    return {addr: table.get(group) for addr, table in zip(masters, tables, strict=True)}


async def delete_group(admin: AdminClient, group: str, *, broker_addr: str | None = None,
                       cluster: str | None = None, clean_offset: bool = False) -> list[str]:
    addrs = await targets(admin, broker_addr, cluster, with_slaves=True)
    await _each(admin.delete_group(addr, group, clean_offset=clean_offset) for addr in addrs)
    return addrs


async def all_masters(admin: AdminClient) -> list[str]:
    masters = (await admin.cluster_info()).master_addrs()
    if not masters:
        raise UnavailableError("no master broker is registered with the name server")
    return masters


async def consumer_progress(admin: AdminClient, group: str, topic: str | None = None,
                            *, masters: list[str] | None = None) -> ConsumeStats:
    """A group's offsets and lag on every master the name servers know, merged."""
    masters = masters or await all_masters(admin)
    parts = await _each(admin.consume_stats(addr, group, topic) for addr in masters)
    return stats.merge_consume_stats(parts)


async def consumer_connection(admin: AdminClient, group: str,
                              *, masters: list[str] | None = None) -> ConsumerConnection:
    """Who is online in a group: the union over every master (consumers heartbeat to all of them).

    Raises the brokers' CONSUMER_NOT_ONLINE when no master has a connection of the group.
    """
    masters = masters or await all_masters(admin)
    answers = await asyncio.gather(*(admin.consumer_connection(addr, group) for addr in masters),
                                   return_exceptions=True)
    found = [a for a in answers if isinstance(a, ConsumerConnection)]
    for answer in answers:
        if isinstance(answer, BaseException) and not _not_online(answer):
            raise answer
    if not found:
        raise AdminError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
    connections: dict[str, Connection] = {c.client_id: c for part in found for c in part.connections}
    subscriptions: dict[str, Subscription] = {s.topic: s for part in found for s in part.subscriptions}
    first = found[0]
    return ConsumerConnection(tuple(sorted(connections.values(), key=lambda c: c.client_id)),
                              tuple(sorted(subscriptions.values(), key=lambda s: s.topic)),
                              first.consume_type, first.message_model, first.consume_from_where)


def _not_online(exc: BaseException) -> bool:
    return isinstance(exc, AdminError) and exc.code == ResponseCode.CONSUMER_NOT_ONLINE


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One row of ``consumerProgress`` without ``-g``."""

    group: str
    clients: int
    version: int | None
    consume_type: str
    message_model: str
    consume_tps: float
    diff_total: int


async def group_summaries(admin: AdminClient) -> list[GroupSummary]:
    """Every known group, with its online clients and total lag.

    A group is known when a master holds its subscription config or committed offsets of it, or
    when a ``%RETRY%group`` topic exists (how mqadmin finds groups: consumers create it with their
    first heartbeat).
    """
    masters = await all_masters(admin)
    groups = await known_groups(admin, masters)
    return list(await _each(_summary(admin, group, masters) for group in groups))


async def known_groups(admin: AdminClient, masters: list[str]) -> list[str]:
    """Every group the masters hold config or offsets of, or with a ``%RETRY%`` topic; sorted."""
    tables = await _each(admin.all_groups(addr) for addr in masters)
    groups = {name for table in tables for name in table}
    for offsets in await _each(admin.all_consumer_offsets(addr) for addr in masters):
        groups.update(group for _, group in offsets)
    prefix = codes.RETRY_GROUP_TOPIC_PREFIX
    groups.update(t[len(prefix):] for t in await admin.all_topics() if t.startswith(prefix) and len(t) > len(prefix))
    return sorted(groups)


async def online_clients(admin: AdminClient, group: str, *, masters: list[str] | None = None) -> int:
    """How many clients of a group are connected (0 when none is online)."""
    try:
        return len((await consumer_connection(admin, group, masters=masters)).connections)
    except AdminError as exc:
        if not _not_online(exc):
            raise
        return 0


async def _summary(admin: AdminClient, group: str, masters: list[str]) -> GroupSummary:
    progress = await consumer_progress(admin, group, masters=masters)
    try:
        conn = await consumer_connection(admin, group, masters=masters)
    except AdminError as exc:
        if not _not_online(exc):
            raise
        return GroupSummary(group, 0, None, "", "", progress.consume_tps, progress.total_diff)
    versions = [c.version for c in conn.connections]
    return GroupSummary(group, len(conn.connections), min(versions) if versions else None, conn.consume_type,
                        conn.message_model, progress.consume_tps, progress.total_diff)


# --- offsets ----------------------------------------------------------------------------------


async def reset_offset_by_time(admin: AdminClient, topic: str, group: str, timestamp: int,
                               *, force: bool = True) -> dict[MessageQueue, int]:
    """Reset a group's offsets on a topic on every master of the topic's route; new offset per queue."""
    _, masters = await route_masters(admin, topic)
    parts = await _each(admin.reset_offset_by_time(addr, topic, group, timestamp, force=force)
                        for _, addr in masters)
    merged: dict[MessageQueue, int] = {}
    for part in parts:
        merged.update(part)
    return dict(sorted(merged.items()))


async def clone_group_offset(admin: AdminClient, src_group: str, dest_group: str, topic: str) -> list[str]:
    """Copy one group's committed offsets on a topic to another group, on every master of the topic."""
    _, masters = await route_masters(admin, topic)
    await _each(admin.clone_group_offset(addr, src_group, dest_group, topic) for _, addr in masters)
    return [addr for _, addr in masters]


# --- broker config ----------------------------------------------------------------------------


async def update_broker_config(admin: AdminClient, updates: Mapping[str, str], *, broker_addr: str | None = None,
                               cluster: str | None = None) -> list[str]:
    addrs = await targets(admin, broker_addr, cluster)
    await _each(admin.update_broker_config(addr, updates) for addr in addrs)
    return addrs


async def broker_configs(admin: AdminClient, *, broker_addr: str | None = None,
                         cluster: str | None = None) -> dict[str, dict[str, str]]:
    addrs = await targets(admin, broker_addr, cluster, with_slaves=True)
    configs = await _each(admin.broker_config(addr) for addr in addrs)
    return dict(zip(addrs, configs, strict=True))


def writable(route: TopicRoute) -> list[MessageQueue]:
    """The queues a producer may send to: writable queues of groups with a master."""
    out: list[MessageQueue] = []
    for data in route.queue_datas:
        broker = route.broker(data.broker_name)
        if broker is None or broker.master_addr is None or not data.perm & Perm.WRITE:
            continue
        out.extend(MessageQueue(route.topic, data.broker_name, q) for q in range(data.write_queue_nums))
    return out


def readable(route: TopicRoute) -> list[MessageQueue]:
    """The queues a consumer reads: readable queues of every group that has a member online."""
    out: list[MessageQueue] = []
    for data in route.queue_datas:
        broker = route.broker(data.broker_name)
        if broker is None or broker.any_addr is None or not data.perm & Perm.READ:
            continue
        out.extend(MessageQueue(route.topic, data.broker_name, q) for q in range(data.read_queue_nums))
    return out

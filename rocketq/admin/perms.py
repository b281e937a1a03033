"""Write permissions of brokers and topics, as mqadmin changes them at runtime.

Two levels, two places:

- **A broker group in the name servers' routes** (``wipeWritePerm`` / ``addWritePerm``):
  WIPE_WRITE_PERM_OF_BROKER (205) clears the WRITE bit of the group's queue data in every route
  on every name server, ADD_WRITE_PERM_OF_BROKER (327) sets it back to read-write (6). Producers
  stop (or resume) choosing the group at their next route refresh. Only the name servers
  change: the broker's next registration with a changed topic DataVersion rewrites the routes
  from its own topic table (RocketMQ behaves the same). To make a broker itself read-only, use
  ``updateBrokerConfig -k brokerPermission``.
- **One topic on its masters** (``updateTopicPerm``): UPDATE_AND_CREATE_TOPIC with the topic's
  current queue counts and sysFlag (from the route) and the new perm.
"""

from __future__ import annotations

import dataclasses

from rocketq.admin import adminbodies, cluster
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import ArgumentError, NotFoundError
from rocketq.admin.routes import QueueData, TopicRoute


@dataclasses.dataclass(frozen=True, slots=True)
class PermChange:
    """What ``update_topic_perm`` did on one master: ``changed`` False when the perm was already that."""

    addr: str
    old_perm: int
    new_perm: int
    changed: bool


def _queue_data(route: TopicRoute, broker_name: str) -> QueueData:
    for data in route.queue_datas:
        if data.broker_name == broker_name:
            return data
    raise NotFoundError(f"topic {route.topic!r} has no queues on broker {broker_name!r}")


def _config(topic: str, data: QueueData, perm: int) -> TopicConfig:
    return TopicConfig(topic, data.read_queue_nums, data.write_queue_nums, perm, topic_sys_flag=data.topic_sys_flag)


async def update_topic_perm(admin: AdminClient, topic: str, perm: int, *, broker_addr: str | None = None,
                            cluster_name: str | None = None) -> list[PermChange]:
    """Set ``topic``'s perm on one master (``broker_addr``) or on every master of a cluster.

    Each master keeps its own queue counts (its queue data in the route). With ``broker_addr``
    an equal perm sends nothing (mqadmin: "new perm equals to the old one!").
    """
    adminbodies.check_perm(perm)
    route, masters = await cluster.route_masters(admin, topic)
    names = {addr: name for name, addr in masters}
    if broker_addr:
        if broker_addr not in names:
            raise ArgumentError(f"{broker_addr} is not a master of a broker group holding topic {topic!r}")
        chosen = [broker_addr]
    else:
        in_cluster = set(await cluster.targets(admin, None, cluster_name))
        chosen = [addr for addr in names if addr in in_cluster]
        if not chosen:
            raise NotFoundError(f"no master of cluster {cluster_name!r} holds topic {topic!r}")
    changes = []
    for addr in chosen:
        data = _queue_data(route, names[addr])
        if broker_addr and data.perm == perm:
            changes.append(PermChange(addr, data.perm, perm, changed=False))
            continue
        await admin.create_topic(addr, _config(topic, data, perm))
        changes.append(PermChange(addr, data.perm, perm, changed=True))
    return changes

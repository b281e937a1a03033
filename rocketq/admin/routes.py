"""Where things are: a topic's route and the cluster's broker table, as the name server tells.

* ``TopicRoute`` (GET_ROUTEINFO_BY_TOPIC, ``TopicRouteData``): for one topic, the queues each
  broker group holds (``queueDatas``) and every group's member addresses by brokerId
  (``brokerDatas``).
* ``ClusterInfo`` (GET_BROKER_CLUSTER_INFO): every broker group with its cluster and member
  addresses, and each cluster's group names.

Admin operations pick their targets from these: a group's master (brokerId 0) receives writes
and admin changes; any member can answer reads. A Java name server writes ``brokerAddrs`` with
bare numeric keys (fastjson); ours writes them as strings; both parse to ``int`` ids here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketq.admin import bodies
from rocketq.protocol.bodies import BodyError, integer, obj, strings, text
from rocketq.protocol.codes import MASTER_ID


@dataclass(frozen=True, slots=True)
class BrokerData:
    """One broker group: its cluster, its name and its members' addresses by brokerId."""

    cluster: str
    broker_name: str
    addrs: tuple[tuple[int, str], ...]

    @property
    def master_addr(self) -> str | None:
        return dict(self.addrs).get(MASTER_ID)

    @property
    def any_addr(self) -> str | None:
        """The master if there is one, else the lowest-numbered slave: where reads can go."""
        return self.master_addr or (self.addrs[0][1] if self.addrs else None)

    @classmethod
    def from_json(cls, raw: Any, what: str) -> BrokerData:
        raw = obj(raw, what)
        addrs = []
        for key, addr in obj(raw.get("brokerAddrs", {}), f"{what}.brokerAddrs").items():
            try:
                broker_id = int(key)
            except (TypeError, ValueError):
                raise BodyError(f"{what}.brokerAddrs key {key!r} is not a brokerId") from None
            if not isinstance(addr, str):
                raise BodyError(f"{what}.brokerAddrs[{key}] is not an address string")
            addrs.append((broker_id, addr))
        return cls(text(raw, "cluster", what, ""), text(raw, "brokerName", what), tuple(sorted(addrs)))


@dataclass(frozen=True, slots=True)
class QueueData:
    """A topic's queues on one broker group."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int

    @classmethod
    def from_json(cls, raw: Any, what: str) -> QueueData:
        raw = obj(raw, what)
        return cls(text(raw, "brokerName", what), integer(raw, "readQueueNums", what),
                   integer(raw, "writeQueueNums", what), integer(raw, "perm", what),
                   integer(raw, "topicSysFlag", what, 0))


@dataclass(frozen=True, slots=True)
class TopicRoute:
    topic: str
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    def broker(self, broker_name: str) -> BrokerData | None:
        for data in self.broker_datas:
            if data.broker_name == broker_name:
                return data
        return None

    def queue_data(self, broker_name: str) -> QueueData | None:
        for data in self.queue_datas:
            if data.broker_name == broker_name:
                return data
        return None

    def master_addrs(self) -> list[tuple[str, str]]:
        """(brokerName, master address) of every group of the route that has a master."""
        return [(b.broker_name, b.master_addr) for b in self.broker_datas if b.master_addr]

    def read_addrs(self) -> list[tuple[str, str]]:
        """(brokerName, address to read from) of every group of the route."""
        return [(b.broker_name, addr) for b in self.broker_datas if (addr := b.any_addr)]


def parse_topic_route(topic: str, body: bytes) -> TopicRoute:
    raw = obj(bodies.load(body, "topic route"), "topic route")
    queues = raw.get("queueDatas", [])
    brokers = raw.get("brokerDatas", [])
    if not isinstance(queues, list) or not isinstance(brokers, list):
        raise BodyError("topic route: queueDatas and brokerDatas must be lists")
    conf = raw.get("orderTopicConf")
    return TopicRoute(
        topic=topic,
        queue_datas=tuple(sorted((QueueData.from_json(q, f"queueDatas[{i}]") for i, q in enumerate(queues)),
                                 key=lambda q: q.broker_name)),
        broker_datas=tuple(sorted((BrokerData.from_json(b, f"brokerDatas[{i}]") for i, b in enumerate(brokers)),
                                  key=lambda b: b.broker_name)),
        order_topic_conf=conf if isinstance(conf, str) and conf else None,
    )


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    brokers: tuple[BrokerData, ...]
    clusters: tuple[tuple[str, tuple[str, ...]], ...]
    """Cluster name -> names of its broker groups, both sorted."""

    def cluster_names(self) -> list[str]:
        return [name for name, _ in self.clusters]

    def groups_of(self, cluster: str) -> list[BrokerData]:
        """Broker groups of a cluster; an unknown cluster has none."""
        names = dict(self.clusters).get(cluster, ())
        return [b for b in self.brokers if b.broker_name in names]

    def broker(self, broker_name: str) -> BrokerData | None:
        for data in self.brokers:
            if data.broker_name == broker_name:
                return data
        return None

    def master_addrs(self, cluster: str | None = None) -> list[str]:
        groups = self.brokers if cluster is None else self.groups_of(cluster)
        return [addr for b in groups if (addr := b.master_addr)]

    def all_addrs(self, cluster: str | None = None) -> list[str]:
        """Every member of every group (masters and slaves), as mqadmin's getBrokerConfig -c asks."""
        groups = self.brokers if cluster is None else self.groups_of(cluster)
        return [addr for b in groups for _, addr in b.addrs]

    def locate(self, addr: str) -> BrokerData | None:
        """The group an address belongs to."""
        for data in self.brokers:
            if any(a == addr for _, a in data.addrs):
                return data
        return None


def parse_cluster_info(body: bytes) -> ClusterInfo:
    raw = obj(bodies.load(body, "cluster info"), "cluster info")
    table = obj(raw.get("brokerAddrTable", {}), "brokerAddrTable")
    brokers = tuple(sorted((BrokerData.from_json(v, f"brokerAddrTable[{k}]") for k, v in table.items()),
                           key=lambda b: b.broker_name))
    clusters = []
    for name, members in obj(raw.get("clusterAddrTable", {}), "clusterAddrTable").items():
        clusters.append((str(name), tuple(sorted(strings(members, f"clusterAddrTable[{name}]")))))
    return ClusterInfo(brokers, tuple(sorted(clusters)))

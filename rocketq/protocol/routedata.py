"""Routes as a name server tells them: TopicRouteData (queues and brokers of a topic), ClusterInfo.

GET_ROUTEINFO_BY_TOPIC answers with RocketMQ's ``TopicRouteData``::

    {"queueDatas": [{"brokerName", "readQueueNums", "writeQueueNums", "perm", "topicSysFlag"}],
     "brokerDatas": [{"cluster", "brokerName", "brokerAddrs": {"0": "ip:port", "1": ...}}],
     "filterServerTable": {brokerAddr: [filterServerAddr, ...]},
     "orderTopicConf": "broker-a:4;broker-b:4"}                  (ordered topics only)

and GET_BROKER_CLUSTER_INFO with ``ClusterInfo``::

    {"brokerAddrTable": {brokerName: BrokerData}, "clusterAddrTable": {cluster: [brokerName]}}

A ``QueueData`` says how many queues one broker group holds for the topic and with which
permission; a ``BrokerData`` names a group's members by brokerId (0 is the master). The name
server builds these (``to_json``); clients and admin tools read them (``from_json``), each
adding its own use: a producer's publish queues, an admin tool's target brokers.

``brokerAddrs`` keys are broker ids. Standard JSON writes them as strings (``"0"``); Java's
fastjson writes bare integers (``0``), which a fastjson-aware decoder hands over as ``int``;
``from_json`` takes both and ``to_json`` writes strings. Values are immutable and kept in
broker-name (and broker-id) order, the order a name server writes them in. Pure: decoding bytes
(plain or fastjson) is the caller's, and so is every decision about which address to use.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Self, TypeVar

from rocketq.protocol.codes import MASTER_ID, Perm
from rocketq.protocol.sharedbodies import BodyError, TopicConfig, non_negative_int32, obj, permission, strings, text

MAX_ROUTE_QUEUE_NUMS: Final = 1 << 16
"""More queues than this on one broker is not a route anyone means; refuse rather than allocate."""
_BROKER_ID: Final = re.compile(r"-?[0-9]{1,19}")

Addrs = tuple[tuple[int, str], ...]
"""A group's members as (brokerId, address), in brokerId order."""


@dataclass(frozen=True, slots=True)
class QueueData:
    """A topic's queues on one broker group."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @classmethod
    def of(cls, broker_name: str, config: TopicConfig) -> Self:
        return cls(broker_name, config.read_queue_nums, config.write_queue_nums, config.perm, config.topic_sys_flag)

    @property
    def readable(self) -> bool:
        return bool(self.perm & Perm.READ)

    @property
    def writeable(self) -> bool:
        return bool(self.perm & Perm.WRITE)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicSysFlag": self.topic_sys_flag,
        }

    @classmethod
    def from_json(cls, raw: Any, where: str = "queueData") -> Self:
        raw = obj(raw, where)
        # RocketMQ 4.x before 4.9 spelled the flag topicSynFlag.
        sys_flag = "topicSysFlag" if "topicSysFlag" in raw else "topicSynFlag"
        return cls(
            broker_name=_broker_name(raw, where),
            read_queue_nums=_queue_nums(raw, "readQueueNums", where),
            write_queue_nums=_queue_nums(raw, "writeQueueNums", where),
            perm=permission(raw, "perm", where),
            topic_sys_flag=non_negative_int32(raw, sys_flag, where, 0),
        )


@dataclass(frozen=True, slots=True)
class BrokerData:
    """One broker group: its cluster, its name and its members' addresses by brokerId."""

    cluster: str
    broker_name: str
    addrs: Addrs = ()

    @classmethod
    def of(cls, cluster: str, broker_name: str, addrs: Mapping[int, str]) -> Self:
        return cls(cluster, broker_name, tuple(sorted(addrs.items())))

    @property
    def broker_addrs(self) -> dict[int, str]:
        return dict(self.addrs)

    @property
    def master_addr(self) -> str | None:
        return next((addr for broker_id, addr in self.addrs if broker_id == MASTER_ID), None)

    @property
    def any_addr(self) -> str | None:
        """The master if there is one, else the lowest-numbered slave: a stable place to read."""
        return self.master_addr or (self.addrs[0][1] if self.addrs else None)

    def select_addr(self) -> str | None:
        """The master, else any slave at random (RocketMQ's ``BrokerData.selectBrokerAddr``)."""
        master = self.master_addr
        if master is not None:
            return master
        return random.choice(self.addrs)[1] if self.addrs else None

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "brokerName": self.broker_name,
            "brokerAddrs": {str(broker_id): addr for broker_id, addr in self.addrs},
        }

    @classmethod
    def from_json(cls, raw: Any, where: str = "brokerData") -> Self:
        raw = obj(raw, where)
        table = obj(_absent_is(raw.get("brokerAddrs"), {}), f"{where}.brokerAddrs")
        addrs = {}
        for key, addr in table.items():
            if not isinstance(addr, str) or ":" not in addr:
                raise BodyError(f"{where}.brokerAddrs[{key!r}]={addr!r:.60}: expected host:port")
            addrs[_broker_id(key, where)] = addr
        return cls.of(text(raw, "cluster", where, ""), _broker_name(raw, where), addrs)


@dataclass(frozen=True, slots=True)
class TopicRouteData:
    """A topic's route: the queues each broker group holds and where those groups are."""

    queue_datas: tuple[QueueData, ...] = ()
    broker_datas: tuple[BrokerData, ...] = ()
    order_topic_conf: str | None = None
    filter_servers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """``filterServerTable``: (broker address, its filter servers), by address."""

    def broker(self, broker_name: str) -> BrokerData | None:
        return next((data for data in self.broker_datas if data.broker_name == broker_name), None)

    def queue_data(self, broker_name: str) -> QueueData | None:
        return next((data for data in self.queue_datas if data.broker_name == broker_name), None)

    def addrs(self) -> Iterator[tuple[str, int, str]]:
        """Every (broker name, broker id, address) the route names."""
        for data in self.broker_datas:
            for broker_id, addr in data.addrs:
                yield data.broker_name, broker_id, addr

    def master_addrs(self) -> list[tuple[str, str]]:
        """(brokerName, master address) of every group of the route that has a master."""
        return [(data.broker_name, addr) for data in self.broker_datas if (addr := data.master_addr)]

    def read_addrs(self) -> list[tuple[str, str]]:
        """(brokerName, address to read from) of every group of the route."""
        return [(data.broker_name, addr) for data in self.broker_datas if (addr := data.any_addr)]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "queueDatas": [data.to_json() for data in self.queue_datas],
            "brokerDatas": [data.to_json() for data in self.broker_datas],
            "filterServerTable": {addr: list(servers) for addr, servers in self.filter_servers},
        }
        if self.order_topic_conf:
            out["orderTopicConf"] = self.order_topic_conf
        return out

    @classmethod
    def from_json(cls, raw: Any, where: str = "topic route") -> Self:
        raw = obj(raw, where)
        queues = _list(raw, "queueDatas", where)
        brokers = _list(raw, "brokerDatas", where)
        conf = raw.get("orderTopicConf")
        if conf is not None and not isinstance(conf, str):
            raise BodyError(f"{where}.orderTopicConf must be a string")
        filters = obj(_absent_is(raw.get("filterServerTable"), {}), f"{where}.filterServerTable")
        return cls(
            queue_datas=_by_name(QueueData.from_json(q, f"queueDatas[{i}]") for i, q in enumerate(queues)),
            broker_datas=_by_name(BrokerData.from_json(b, f"brokerDatas[{i}]") for i, b in enumerate(brokers)),
            order_topic_conf=conf or None,
            filter_servers=tuple(sorted(
                (str(addr), strings(servers, f"filterServerTable[{addr!r}]")) for addr, servers in filters.items())),
        )


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """Every broker group a name server knows, and which cluster each belongs to."""

    brokers: tuple[BrokerData, ...] = ()
    """By broker name."""
    clusters: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Cluster name -> names of its broker groups, both sorted."""

    def cluster_names(self) -> list[str]:
        return [name for name, _ in self.clusters]

    def groups_of(self, cluster: str) -> list[BrokerData]:
        """Broker groups of a cluster; an unknown cluster has none."""
        names = dict(self.clusters).get(cluster, ())
        return [data for data in self.brokers if data.broker_name in names]

    def broker(self, broker_name: str) -> BrokerData | None:
        return next((data for data in self.brokers if data.broker_name == broker_name), None)

    def master_addrs(self, cluster: str | None = None) -> list[str]:
        groups = self.brokers if cluster is None else self.groups_of(cluster)
        return [addr for data in groups if (addr := data.master_addr)]

    def all_addrs(self, cluster: str | None = None) -> list[str]:
        """Every member of every group (masters and slaves), as mqadmin's getBrokerConfig -c asks."""
        groups = self.brokers if cluster is None else self.groups_of(cluster)
        return [addr for data in groups for _, addr in data.addrs]

    def locate(self, addr: str) -> BrokerData | None:
        """The group an address belongs to."""
        return next((data for data in self.brokers if any(a == addr for _, a in data.addrs)), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {data.broker_name: data.to_json() for data in self.brokers},
            "clusterAddrTable": {cluster: list(names) for cluster, names in self.clusters},
        }

    @classmethod
    def from_json(cls, raw: Any, where: str = "cluster info") -> Self:
        raw = obj(raw, where)
        table = obj(_absent_is(raw.get("brokerAddrTable"), {}), "brokerAddrTable")
        members = obj(_absent_is(raw.get("clusterAddrTable"), {}), "clusterAddrTable")
        return cls(
            brokers=_by_name(BrokerData.from_json(data, f"brokerAddrTable[{name!r}]") for name, data in table.items()),
            clusters=tuple(sorted(
                (str(name), tuple(sorted(strings(groups, f"clusterAddrTable[{name!r}]"))))
                for name, groups in members.items())),
        )


def _broker_name(raw: Mapping[Any, Any], where: str) -> str:
    name = text(raw, "brokerName", where)
    if not name:
        raise BodyError(f"{where}.brokerName must not be empty")
    return name


def _queue_nums(raw: Mapping[Any, Any], key: str, where: str) -> int:
    value = non_negative_int32(raw, key, where)
    if value > MAX_ROUTE_QUEUE_NUMS:
        raise BodyError(f"{where}.{key}={value}: more than {MAX_ROUTE_QUEUE_NUMS} queues")
    return value


def _broker_id(key: Any, where: str) -> int:
    """A brokerAddrs key: an integer (fastjson) or its decimal text (standard JSON)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and _BROKER_ID.fullmatch(key):
        return int(key)
    raise BodyError(f"{where}.brokerAddrs key {key!r:.60} is not a broker id")


def _list(raw: Mapping[Any, Any], key: str, where: str) -> list[Any]:
    value = _absent_is(raw.get(key), [])
    if not isinstance(value, list):
        raise BodyError(f"{where}.{key} must be a list")
    return value


def _absent_is(value: Any, empty: Any) -> Any:
    """Java leaves an empty collection out, or writes it as null; both mean empty."""
    return empty if value is None else value


_Named = TypeVar("_Named", QueueData, BrokerData)


def _by_name(items: Iterable[_Named]) -> tuple[_Named, ...]:
    return tuple(sorted(items, key=lambda item: item.broker_name))

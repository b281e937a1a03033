"""Topic routes: which broker groups hold a topic, how many queues each, and their addresses.

A name server answers GET_ROUTEINFO_BY_TOPIC with RocketMQ's ``TopicRouteData``::

    {"orderTopicConf": "broker-a:4;broker-b:4"?,        (ordered topics only)
     "queueDatas": [{"brokerName", "readQueueNums", "writeQueueNums", "perm", "topicSysFlag"}],
     "brokerDatas": [{"cluster", "brokerName", "brokerAddrs": {"0": "ip:port", "1": ...}}]}

From it a producer takes the *publish* queues (writable queues of broker groups that have a
master: only a master accepts writes) and a consumer the *subscribe* queues (readable queues;
a slave can serve reads). This module is pure: bytes in, values out. Fetching and refreshing
routes is the client instance's job.

A Java name server writes the body with fastjson, which leaves integer map keys unquoted
(``"brokerAddrs":{0:"10.0.0.1:10911"}``). That is not JSON, so such bodies are repaired before
parsing: bare integer keys outside strings get quotes, nothing else is touched.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import orjson

from rocketq.client.queues import MessageQueue
from rocketq.protocol.codes import MASTER_ID, Perm

MAX_QUEUE_NUMS: Final = 1 << 16
"""More queues than this on one broker is not a route anyone means; refuse rather than allocate."""


class RouteDataError(ValueError):
    """A route body is not a TopicRouteData."""


@dataclass(frozen=True, slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @property
    def readable(self) -> bool:
        return bool(self.perm & Perm.READ)

    @property
    def writeable(self) -> bool:
        return bool(self.perm & Perm.WRITE)


@dataclass(frozen=True, slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def select_addr(self) -> str | None:
        """The master, else any slave (RocketMQ's ``BrokerData.selectBrokerAddr``)."""
        master = self.master_addr
        if master is not None:
            return master
        addrs = list(self.broker_addrs.values())
        return random.choice(addrs) if addrs else None


@dataclass(frozen=True, slots=True)
class TopicRoute:
    queue_datas: tuple[QueueData, ...] = ()
    broker_datas: tuple[BrokerData, ...] = ()
    order_topic_conf: str | None = None

    def broker(self, broker_name: str) -> BrokerData | None:
        for bd in self.broker_datas:
            if bd.broker_name == broker_name:
                return bd
        return None

    def addrs(self) -> Iterator[tuple[str, int, str]]:
        """Every (broker name, broker id, address) the route names."""
        for bd in self.broker_datas:
            for broker_id, addr in bd.broker_addrs.items():
                yield bd.broker_name, broker_id, addr

    def publish_queues(self, topic: str) -> tuple[MessageQueue, ...]:
        """Writable queues on broker groups with a master, in RocketMQ's order."""
        if self.order_topic_conf:
            return self._ordered_publish_queues(topic, self.order_topic_conf)
        queues: list[MessageQueue] = []
        for qd in sorted(self.queue_datas, key=lambda q: q.broker_name):
            bd = self.broker(qd.broker_name)
            if not qd.writeable or bd is None or bd.master_addr is None:
                continue
            queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
        return tuple(queues)

    def _ordered_publish_queues(self, topic: str, conf: str) -> tuple[MessageQueue, ...]:
        queues: list[MessageQueue] = []
        for item in conf.split(";"):
            name, sep, nums = item.partition(":")
            if sep and nums.strip().isdigit():
                queues.extend(MessageQueue(topic, name.strip(), i) for i in range(min(int(nums), MAX_QUEUE_NUMS)))
        return tuple(queues)

    def subscribe_queues(self, topic: str) -> tuple[MessageQueue, ...]:
        """Readable queues, sorted (the set every consumer of a group balances over)."""
        queues = [
            MessageQueue(topic, qd.broker_name, i)
            for qd in self.queue_datas
            if qd.readable
            for i in range(qd.read_queue_nums)
        ]
        return tuple(sorted(set(queues)))

    def limited_to(self, queue_nums: int) -> TopicRoute:
        """The auto-create (TBW102) route narrowed to a new topic's queue count, as RocketMQ does."""
        limited = tuple(
            replace(qd, read_queue_nums=min(queue_nums, qd.read_queue_nums),
                    write_queue_nums=min(queue_nums, qd.read_queue_nums))
            for qd in self.queue_datas
        )
        return replace(self, queue_datas=limited)


def decode_route(body: bytes) -> TopicRoute:
    """Parse a TopicRouteData body (JSON, or fastjson's bare integer keys)."""
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            raw = orjson.loads(quote_bare_int_keys(body.decode("utf-8")))
        except (UnicodeDecodeError, orjson.JSONDecodeError) as exc:
            raise RouteDataError(f"route body is not JSON: {exc}") from None
    return _route_from_json(raw)


def quote_bare_int_keys(text: str) -> str:
    """Quote object keys that are bare integers (``{0:"a"}`` -> ``{"0":"a"}``) outside strings."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        out.append(ch)
        i += 1
        if in_string:
            if ch == "\\" and i < n:
                out.append(text[i])
                i += 1
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{,":
            i = _quote_key_at(text, i, out)
    return "".join(out)


def _quote_key_at(text: str, i: int, out: list[str]) -> int:
    """After ``{`` or ``,``: if a bare integer and ``:`` follow, emit it quoted; return the new index."""
    j = i
    while j < len(text) and text[j] in " \t\r\n":
        j += 1
    k = j + 1 if j < len(text) and text[j] == "-" else j
    while k < len(text) and text[k].isdigit():
        k += 1
    end = k
    while end < len(text) and text[end] in " \t\r\n":
        end += 1
    if k > j and text[k - 1].isdigit() and end < len(text) and text[end] == ":":
        out.append(text[i:j])
        out.append(f'"{text[j:k]}"')
        return k
    return i


def _route_from_json(raw: Any) -> TopicRoute:
    if not isinstance(raw, dict):
        raise RouteDataError("route body is not a JSON object")
    qds, bds = raw.get("queueDatas"), raw.get("brokerDatas")
    qds, bds = [] if qds is None else qds, [] if bds is None else bds
    if not isinstance(qds, list) or not isinstance(bds, list):
        raise RouteDataError("queueDatas and brokerDatas must be lists")
    conf = raw.get("orderTopicConf")
    if conf is not None and not isinstance(conf, str):
        raise RouteDataError("orderTopicConf must be a string")
    return TopicRoute(tuple(_queue_data(q) for q in qds), tuple(_broker_data(b) for b in bds), conf or None)


def _queue_data(raw: Any) -> QueueData:
    if not isinstance(raw, dict):
        raise RouteDataError("a queueData entry is not an object")
    name = _name(raw.get("brokerName"), "queueData.brokerName")
    return QueueData(
        broker_name=name,
        read_queue_nums=_count(raw.get("readQueueNums", 0), f"{name}.readQueueNums"),
        write_queue_nums=_count(raw.get("writeQueueNums", 0), f"{name}.writeQueueNums"),
        perm=_count(raw.get("perm", 0), f"{name}.perm"),
        # RocketMQ 4.x before 4.9 spelled this topicSynFlag.
        topic_sys_flag=_count(raw.get("topicSysFlag", raw.get("topicSynFlag", 0)), f"{name}.topicSysFlag"),
    )


def _broker_data(raw: Any) -> BrokerData:
    if not isinstance(raw, dict):
        raise RouteDataError("a brokerData entry is not an object")
    name = _name(raw.get("brokerName"), "brokerData.brokerName")
    cluster = raw.get("cluster", "")
    addrs_raw = raw.get("brokerAddrs")
    addrs_raw = {} if addrs_raw is None else addrs_raw
    if not isinstance(cluster, str) or not isinstance(addrs_raw, dict):
        raise RouteDataError(f"brokerData {name!r}: cluster must be a string and brokerAddrs an object")
    addrs: dict[int, str] = {}
    for key, addr in addrs_raw.items():
        try:
            broker_id = int(key)
        except ValueError:
            raise RouteDataError(f"brokerData {name!r}: broker id {key!r} is not an integer") from None
        if not isinstance(addr, str) or ":" not in addr:
            raise RouteDataError(f"brokerData {name!r}: address {addr!r} is not host:port")
        addrs[broker_id] = addr
    return BrokerData(cluster, name, addrs)


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise RouteDataError(f"{where} must be a non-empty string")
    return value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_QUEUE_NUMS:
        raise RouteDataError(f"{where}={value!r}: expected an integer in [0, {MAX_QUEUE_NUMS}]")
    return value

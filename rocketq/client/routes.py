"""Topic routes as a producer and a consumer use them: which queues to send to, which to read.

The route is RocketMQ's ``TopicRouteData`` (``rocketq.protocol.routedata``): each broker
group's queue counts and permission (``queueDatas``) and its members' addresses
(``brokerDatas``), as a name server answers GET_ROUTEINFO_BY_TOPIC. From it a producer takes
the *publish* queues (writable queues of broker groups that have a master: only a master
accepts writes) and a consumer the *subscribe* queues (readable queues; a slave can serve
reads). This module is pure: bytes in, values out. Fetching and refreshing routes is the client
instance's job.

A Java name server writes the body with fastjson, which leaves integer map keys unquoted
(``"brokerAddrs":{0:"10.0.0.1:10911"}``). That is not JSON, so such bodies are repaired before
parsing: bare integer keys outside strings get quotes, nothing else is touched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

import orjson

from rocketq.client.queues import MessageQueue
from rocketq.protocol import routedata
from rocketq.protocol.sharedbodies import BodyError

MAX_QUEUE_NUMS: Final = routedata.MAX_ROUTE_QUEUE_NUMS
"""More queues than this on one broker is not a route anyone means; refuse rather than allocate."""


class RouteDataError(BodyError):
    """A route body is not a TopicRouteData."""


@dataclass(frozen=True, slots=True)
class TopicRoute(routedata.TopicRouteData):
    """A topic's route, with the queues a producer and a consumer take from it."""

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
    try:
        return TopicRoute.from_json(raw)
    except BodyError as exc:
        raise RouteDataError(str(exc)) from None


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
